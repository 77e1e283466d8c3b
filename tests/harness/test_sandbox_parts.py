"""The sandbox's parts on their own (fast; most need no root): score files written over
whatever is in their way, the submission check, the deadline on writes to the worker,
the seed's sources, the process guard, and grading from a fork of the test process."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import graders.cli
import graders.report.files
from graders import rubric
from graders.harness import sandbox
from graders.harness.client import _Worker
from graders.report import error_score

from ..conftest import REFERENCE, TEMPLATE, grade_forked
from ..hostile import HOOK_FILE

RUBRIC = rubric.load()


def _score() -> object:
    return error_score("sub", RUBRIC.tasks[:1], "a test", seed=0, profile="default", sandbox=True)


def test_score_files_replace_what_is_in_their_way(tmp_path, monkeypatch):
    """A folder, a read-only file and a link to a file outside: all replaced by the score
    files, the link's target untouched. One file failing to build does not stop the
    others."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "score.json").mkdir()
    (out / "score.json" / "deep").mkdir()
    (out / "score.json" / "deep" / "x").write_text("x")
    (out / "results.json").write_text("old")
    os.chmod(out / "results.json", 0o444)
    canary = tmp_path / "canary"
    canary.write_text("untouched")
    (out / "classroom.json").symlink_to(canary)
    assert graders.cli.write_outputs(out, _score()) == []
    for name in ("score.json", "results.json", "classroom.json"):
        assert (out / name).is_file() and not (out / name).is_symlink()
        json.loads((out / name).read_text())
    assert canary.read_text() == "untouched"

    def broken(score: object) -> dict:
        raise RuntimeError("cannot build")

    monkeypatch.setattr(graders.report.files, "results_json", broken)
    (out / "score.json").unlink()
    (out / "classroom.json").unlink()
    failures = graders.cli.write_outputs(out, _score())
    assert len(failures) == 1 and failures[0].startswith("results.json")
    assert (out / "score.json").is_file() and (out / "classroom.json").is_file()


def test_the_output_folder_itself_replaced_by_a_link(tmp_path):
    """A link put where the output folder was is removed, never followed."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.symlink_to(elsewhere)
    assert graders.cli.write_outputs(out, _score()) == []
    assert out.is_dir() and not out.is_symlink() and (out / "score.json").is_file()
    assert list(elsewhere.iterdir()) == []


def test_submission_check(tmp_path):
    sub = tmp_path / "sub"
    (sub / "tinytrain" / "autograd").mkdir(parents=True)
    (sub / "tinytrain" / "__init__.py").write_text("")
    assert sandbox.check_submission(sub) is None
    assert sandbox.check_submission(tmp_path) is None  # no tinytrain/: the worker says so
    (sub / "tinytrain" / "autograd" / "engine.py").symlink_to(REFERENCE / "tinytrain" / "__init__.py")
    assert "autograd/engine.py is a symbolic link" in sandbox.check_submission(sub)
    (sub / "tinytrain" / "autograd" / "engine.py").unlink()
    os.mkfifo(sub / "tinytrain" / "pipe")
    assert "not a regular file" in sandbox.check_submission(sub)
    other = tmp_path / "other"
    other.mkdir()
    (other / "tinytrain").symlink_to(sub / "tinytrain")
    assert "tinytrain is a symbolic link" in sandbox.check_submission(other)


def test_a_write_to_a_worker_that_does_not_read_meets_its_deadline():
    """The request pipe shrunk to one page and never read: send gives up at the deadline."""
    read_end, write_end = os.pipe()
    try:
        fcntl.fcntl(write_end, 1031, 4096)  # F_SETPIPE_SZ
        fcntl.fcntl(write_end, fcntl.F_SETFL, fcntl.fcntl(write_end, fcntl.F_GETFL) | os.O_NONBLOCK)
        worker = object.__new__(_Worker)
        worker.to_worker = write_end
        start = time.monotonic()
        with pytest.raises(TimeoutError):
            worker.send({"cmd": "call", "args": ["x" * 100_000]}, time.monotonic() + 0.5)
        assert 0.4 < time.monotonic() - start < 5
    finally:
        os.close(read_end)
        os.close(write_end)


def test_the_seed_comes_from_one_place(tmp_path, monkeypatch):
    seed_file = tmp_path / "seed"
    seed_file.write_text(" 42\n")
    args = graders.cli.parse_args(["sub", "--seed-file", str(seed_file)])
    assert graders.cli.read_seed(args) == (42, [seed_file])
    monkeypatch.setenv("TINYTRAIN_GRADER_SEED", "7")
    assert graders.cli.read_seed(graders.cli.parse_args(["sub"])) == (7, [])
    assert "TINYTRAIN_GRADER_SEED" not in os.environ  # read once, gone for children
    monkeypatch.setenv("TINYTRAIN_GRADER_SEED", "7")
    with pytest.raises(ValueError, match="one way only"):
        graders.cli.read_seed(graders.cli.parse_args(["sub", "--seed", "3"]))
    seed_file.write_text("not a number")
    with pytest.raises(ValueError, match="integer"):
        graders.cli.read_seed(graders.cli.parse_args(["sub", "--seed-file", str(seed_file)]))


def test_a_bad_seed_is_a_usage_error_with_score_files(tmp_path):
    out = tmp_path / "out"
    code = subprocess.run([sys.executable, "-m", "graders.cli", str(REFERENCE), "--out", str(out),
                           "--seed-file", str(tmp_path / "missing")], capture_output=True,
                          text=True, cwd=Path(__file__).resolve().parents[2]).returncode
    assert code == 2
    assert json.loads((out / "score.json").read_text())["status"] == "error"


# The outer process reaps the middle one before it exits, so when it returns the only
# live process it left is the daemon (already reparented to the guard): no race with a
# middle process that has not yet exited.
DAEMON = """
import os, sys, time
middle = os.fork()
if middle == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(120)
        os._exit(0)
    os._exit(0)
os.waitpid(middle, 0)
"""


def test_the_guard_kills_daemons_but_not_what_came_before():
    """In a child (so this test process does not become a subreaper): a process started
    before the guard survives; a daemon started after it (double fork, setsid) is
    reparented to the guard and killed."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            before = subprocess.Popen(["sleep", "60"])
            guard = sandbox.ProcessGuard()
            subprocess.run([sys.executable, "-c", DAEMON], check=True)
            deadline = time.monotonic() + 10
            while not guard.descendants(keep=[before.pid]) and time.monotonic() < deadline:
                time.sleep(0.05)
            daemons = guard.descendants(keep=[before.pid])
            killed = guard.kill_descendants(keep=[before.pid])
            gone = not guard.descendants(keep=[before.pid])
            alive = before.poll() is None
            code = 0 if (guard.subreaper and len(daemons) == 1 and killed == 1 and gone and alive) \
                else 2
            before.kill()
            before.wait()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="the worker user exists as root only")
def test_grade_forked_still_works_and_leaves_nothing(tmp_path, monkeypatch):
    """conftest's grade_forked grades in a fork of this process: the fork's guard kills
    the daemon the submission leaves, and neither this process nor anything started
    before is touched."""
    from .test_sandbox import WORKER_USER

    monkeypatch.setenv("TINYTRAIN_WORKER_USER", WORKER_USER)
    sleeper = subprocess.Popen(["sleep", "120"])
    try:
        sub = tmp_path / "sub"
        import shutil

        shutil.copytree(TEMPLATE / "tinytrain", sub / "tinytrain")
        init = sub / "tinytrain" / HOOK_FILE
        init.write_text(init.read_text() + "\n" + DAEMON.replace("import os, sys, time",
                                                               "import os, time"))
        score = grade_forked(sub, tmp_path / "out", "--tasks", "1.1")
        assert score["_exit"] == 0, score["_stderr"]
        assert score["score"] == 0
        import pwd

        assert not sandbox.user_processes(pwd.getpwnam(WORKER_USER).pw_uid)
        assert sleeper.poll() is None
        reference = grade_forked(REFERENCE, tmp_path / "ref", "--tasks", "1.1")
        assert reference["score"] == reference["max_score"]
    finally:
        sleeper.send_signal(signal.SIGKILL)
        sleeper.wait()
