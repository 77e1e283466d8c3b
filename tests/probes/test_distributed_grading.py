"""Grading assignment 7 when ranks misbehave: a rank that hangs or raises fails the
tests it takes part in with a message naming the rank and the collective the others were
waiting in, well within the probe deadline, and the grading goes on (no worker restart is
needed: the threads backend stops the ranks itself)."""

from __future__ import annotations

import time

import pytest

from ..conftest import grade_forked as grade
from ..mutants import Mutant

HANG = Mutant(
    id="rank-1-hangs", task="7.1", file="distributed/data_parallel/ddp.py",
    find="        grads = [self._params[i]._grad.data for i in self.bucket_indices[k]]",
    replace="        if dist.get_rank() == 1:\n            while True:\n                pass\n"
            "        grads = [self._params[i]._grad.data for i in self.bucket_indices[k]]",
    why="rank 1 loops forever in its first gradient hook")
RAISE = Mutant(
    id="rank-1-raises", task="7.1", file="distributed/data_parallel/ddp.py",
    find="        grads = [self._params[i]._grad.data for i in self.bucket_indices[k]]",
    replace="        if dist.get_rank() == 1:\n            raise ValueError('bucket lost')\n"
            "        grads = [self._params[i]._grad.data for i in self.bucket_indices[k]]",
    why="rank 1 raises in its first gradient hook")


@pytest.mark.parametrize(("variant", "expected"), [
    (HANG, ("rank 1 ran for 3 s without reaching a collective", "ddp.py",
            "was waiting in all_reduce")),  # rank 0, or rank 3 where 1 and 3 form a group
    (RAISE, ("rank 1 raised ValueError: bucket lost",)),
], ids=["hang", "raise"])
def test_a_misbehaving_rank_is_named(variant, expected, tmp_path):
    variant.apply(tmp_path / "submission")
    start = time.monotonic()
    score = grade(tmp_path / "submission", tmp_path / "out", "--tasks", "7.1", "--no-shrink")
    elapsed = time.monotonic() - start
    assert score["_exit"] == 0, score["_stderr"]
    tests = [t for task in score["tasks"] for t in task["tests"]]
    broken = [t for t in tests if t["name"] != "test_bucket_assignment_follows_pytorchs_rule"]
    assert broken and all(t["status"] == "error" for t in broken), \
        [(t["name"], t["status"]) for t in broken]
    for t in broken:
        for text in expected:
            assert text in t["message"], t["message"]
        assert t["duration"] < 5, (t["name"], t["duration"])  # within the probe deadline
    assert elapsed < 240
