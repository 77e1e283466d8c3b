"""Ctrl-C while grading: the grader stops at once, the tasks that finished keep their
scores, the others say they were not run, and the exit code is a shell's for SIGINT (on
main 9efcd2d: "internal grader error: pytest stopped with exit code 2", every task 0/0)."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time

from ..conftest import REFERENCE, ROOT


def test_ctrl_c_keeps_the_tasks_that_finished(tmp_path):
    out = tmp_path / "out"
    leader, follower = pty.openpty()  # a terminal: the grader shows its progress line
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "graders.cli", str(REFERENCE), "--out", str(out),
                             "--tasks", "1.1,5.1"], stdout=follower, stderr=subprocess.PIPE,
                            cwd=ROOT, env=env, start_new_session=True)
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + 300
    try:
        while b"grading task 5.1" not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 1.0)
            if ready:
                try:
                    seen += os.read(leader, 65536)
                except OSError:
                    break
        assert b"grading task 5.1" in seen, seen[-2000:]
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C sends: the whole foreground group
        _, stderr = proc.communicate(timeout=60)
    finally:
        os.close(leader)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert b"interrupted (Ctrl-C)" in stderr and b"internal grader error" not in stderr, stderr
    score = json.loads((out / "score.json").read_text())
    assert score["status"] == "error" and "interrupted (Ctrl-C)" in score["error"]
    assert "the 1 of 2 tasks that finished keep their scores" in score["error"]
    first, second = score["tasks"]
    assert (first["id"], first["score"], first["max_score"]) == ("1.1", 10, 10)
    assert first["passed"] == first["total"] > 0
    assert second["id"] == "5.1" and second["total"] > 0 and second["score"] < second["max_score"]
    not_run = [t for t in second["tests"] if t["message"].startswith("not run: grading was")]
    assert not_run and all(t["status"] == "error" for t in not_run)
    assert json.loads((out / "results.json").read_text())["score"] == score["score"]
