"""Tasks are graded in isolation where the design says so: a submission with one
assignment's homework still stubbed (the template's code for those tasks only) keeps full
marks on another assignment (or task) that must not depend on it. (Assignment 3 does build
on assignment 2: the in-place operators reduce broadcast gradients with task 2.1's helper;
tasks 4.1 and 4.2 run every operator in low precision and under autocast, so they build on
assignments 1 and 2.) Within assignments 1 and 2 the probes carry their own copies of what
another task provides (graph recording, the engine, tensor hooks, the broadcast reducer),
and a known-wrong variant of a shared piece (``tests/mutants``) must cost its own task only
(``tests/suites/test_mutants.py``)."""

from __future__ import annotations

import pytest

from graders.authoring import template

from ..conftest import REFERENCE, grade_forked, task_scores

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


def test_checkpoint_graded_without_multi_output_edges(tmp_path):
    """A task-1.1 bug in which output an edge points at (every output of a Function gets
    output_nr 0) must not cost task 3.4: the two-output checkpoint segment's node is
    called directly with the gradient of each output, so routing gradients to the outputs
    of a multi-output Function stays task 1.1's business. (Before, with the segment's
    gradients sent through the engine, this bug cost 3.4 2.5 points.)"""
    from ..mutants import Mutant

    bug = Mutant(id="output-nr-always-0", task="1.1", file="autograd/function.py",
                 find="            out._output_nr = nr\n",
                 replace="            out._output_nr = 0\n",
                 why="every output of a multi-output Function claims to be output 0")
    bug.apply(tmp_path / "submission")
    score = grade_forked(tmp_path / "submission", tmp_path / "out", "--tasks", "3.4",
                         "--no-shrink")
    assert score["_exit"] == 0, score["_stderr"]
    scores = task_scores(score)
    assert scores["3.4"][0] == scores["3.4"][1], f"3.4 lost points to a 1.1 bug: {scores}"
