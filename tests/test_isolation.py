"""Assignment 2 is graded in isolation from assignment 1: a submission whose operators
are done but whose graph building and engine are still the template's stubs keeps full
marks on every operator task."""

from __future__ import annotations

import shutil

from .conftest import REFERENCE, TEMPLATE, grade, task_scores


def test_operators_graded_without_an_engine(tmp_path):
    submission = tmp_path / "submission" / "tinytrain"
    shutil.copytree(REFERENCE / "tinytrain", submission,
                    ignore=shutil.ignore_patterns("__pycache__"))
    for stub in ("autograd/function.py", "autograd/engine.py"):
        shutil.copy(TEMPLATE / "tinytrain" / stub, submission / stub)
    score = grade(submission.parent, tmp_path / "out", "--tasks", "2")
    assert score["_exit"] == 0, score["_stderr"]
    lost = {t: s for t, s in task_scores(score).items() if s[0] < s[1]}
    assert not lost, f"operator tasks lost points without an engine: {lost}"
