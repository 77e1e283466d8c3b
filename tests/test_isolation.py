"""Tasks are graded in isolation where the design says so: a submission with one
assignment's homework still stubbed (the template's code for those tasks only) keeps full
marks on another assignment (or task) that must not depend on it. (Assignment 3 does build
on assignment 2: the in-place operators reduce broadcast gradients with task 2.1's helper;
tasks 4.1 and 4.2 run every operator in low precision and under autocast, so they build on
assignments 1 and 2.) Within assignments 1 and 2 the probes carry their own copies of what
another task provides (graph recording, the engine, tensor hooks, the broadcast reducer),
and a known-wrong variant of a shared piece (``tests/mutants``) must cost its own task only
(``tests/test_mutants.py``)."""

from __future__ import annotations

import pytest

from graders.authoring import template

from .conftest import REFERENCE, grade_forked, task_scores

# (assignment or task left unfinished, assignment or task that must keep full marks, why)
CLAIMS = [
    ("1", "2", "operators are graded by calling each Function's backward directly"),
    ("1.1", "1.2,1.3,1.4", "the engine, grad modes and hooks are graded on graphs the probes "
                           "record with their own copy of 1.1's record"),
    ("1.2", "1.4", "hooks, retain_grad and detach are graded with the probes' own engine"),
    ("1.4", "1.2", "the engine's call of tensor hooks is graded with the probes' own hook "
                   "runner"),
    ("2.1", "2.2,2.3,2.4,2.5,2.6,2.7", "matmul's backward runs with the probes' copy of 2.1's "
                                       "sum_to_shape; no other operator uses 2.1's code"),
    ("2", "1", "the engine is graded with graphs of the probes' own Functions"),
    ("3", "2", "operators never write in place nor save through hooks"),
    ("3", "1", "saving for backward without hooks runs no assignment-3 homework"),
    ("5", "1", "Module, Parameter, eval() and model(x) ship complete"),
    ("2", "4.3", "GradScaler scales the loss with given code, not the student's mul"),
    ("5", "4.1,4.2,4.3", "GradScaler is graded with a probe-side optimizer; 4.1/4.2 use no "
                         "modules (4.4/4.5 set up modules: they need Module from 5.1)"),
    ("3", "4", "autocast never writes in place (in-place calls stop at apply_inplace) "
               "and low precision saves without hooks"),
    ("4.2", "4.1", "low precision is graded without autocast"),
    ("1", "6.1,6.2,6.3,6.4,6.5,6.6", "the grader launches each kernel itself on its own "
                                     "buffers; the wrappers take and return NumPy arrays"),
]


@pytest.mark.parametrize("unfinished, graded, why", CLAIMS,
                         ids=[f"{u}-stubbed-{g}-graded" for u, g, _ in CLAIMS])
def test_assignment_graded_without_another(unfinished, graded, why, tmp_path):
    submission = tmp_path / "submission"
    template.generate(REFERENCE / "tinytrain", submission / "tinytrain", template.rubric_titles(),
                      only=lambda task: unfinished in (task, task.split(".")[0]))
    score = grade_forked(submission, tmp_path / "out", "--tasks", graded)
    assert score["_exit"] == 0, score["_stderr"]
    lost = {t: s for t, s in task_scores(score).items() if s[0] < s[1]}
    assert not lost, f"assignment {graded} lost points with assignment {unfinished} unfinished " \
                     f"({why}): {lost}"
