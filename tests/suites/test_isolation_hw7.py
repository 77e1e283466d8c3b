"""Assignment 7's tasks are graded apart where they do not build on each other: a
submission with one task still stubbed keeps full marks on the others that must not need
it. (7.6 runs everything; the other tasks build only on assignments 1, 2 and 5.)"""

from __future__ import annotations

import pytest

from graders.authoring import template

from ..conftest import REFERENCE, grade_forked, task_scores

# (tasks left unfinished, tasks that must keep full marks, why)
CLAIMS = [
    ("7.3", "7.4", "sequence parallelism is graded around the probes' own tensor-parallel "
                   "region, not 7.3's layers"),
    ("7.1", "7.2,7.5", "ZeRO averages gradients itself; pipelines use send/recv only"),
    ("7.2,7.4,7.5", "7.1,7.3", "DDP and the tensor-parallel layers need neither ZeRO, "
                               "sequence parallelism nor pipelines"),
]


@pytest.mark.parametrize("unfinished, graded, why", CLAIMS,
                         ids=[f"{u}-stubbed-{g}-graded" for u, g, _ in CLAIMS])
def test_task_graded_without_another(unfinished, graded, why, tmp_path):
    submission = tmp_path / "submission"
    stubbed = set(unfinished.split(","))
    template.generate(REFERENCE / "tinytrain", submission / "tinytrain", template.rubric_titles(),
                      only=lambda task: task in stubbed)
    score = grade_forked(submission, tmp_path / "out", "--tasks", graded, "--no-shrink")
    assert score["_exit"] == 0, score["_stderr"]
    lost = {t: s for t, s in task_scores(score).items() if s[0] < s[1]}
    assert not lost, f"{graded} lost points with {unfinished} unfinished ({why}): {lost}"
