"""One grading job: unpack a submission, run the per-submission grader on it in its own
process group under a wall-clock limit, and return what it wrote.

A job is a plain dict in and a plain dict out, so the same function runs in a local thread
or on a Dask worker on another machine. Whatever the submission does, the job returns:
a crash, a hang or a killed grader becomes the outcome's status and reason.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..cli import SEED_VARIABLE as SEED_ENV
from .collect import SubmissionProblem, safe_extract

GRADERS_ROOT = Path(__file__).resolve().parents[2]  # the folder that holds graders/
WORKER_USER_ENV = "TINYTRAIN_WORKER_USER"
WORKER_USER_PREFIX = "tinytrain-worker-"
SLOT_DIR = Path(tempfile.gettempdir()) / "tinytrain-grade-slots"
MAX_SLOTS = 256
OUTPUT_FILES = ("score.json", "results.json", "classroom.json")
FEEDBACK_CAP = 1 << 20  # bytes of the grader's printed report kept as feedback.txt

EXIT_GRADED, EXIT_USAGE, EXIT_INTERNAL = 0, 2, 3


@contextlib.contextmanager
def slot() -> Iterator[int]:
    """A machine-wide slot number, held for the job's duration: gradings that run at the
    same time on one machine (threads, processes, Dask workers) never share one. As root
    the sandbox runs each grading's worker as user ``tinytrain-worker-<slot>`` and kills
    all of that user's processes after every test, so sharing a user would let one
    grading kill another's worker."""
    SLOT_DIR.mkdir(mode=0o700, exist_ok=True)
    for number in range(MAX_SLOTS):
        handle = open(SLOT_DIR / f"{number}.lock", "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        try:
            yield number
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()
        return
    raise RuntimeError(f"all {MAX_SLOTS} grading slots of this machine are busy")


def child_command(options: dict[str, Any], submission: Path, out: Path) -> list[str]:
    """The grader's command line: never the seed (it travels in the environment, which
    ``graders.cli`` reads and no other user can). Its whole-grading budget ends a minute
    before the outer limit, so an overlong grading still writes its own score files."""
    timeout = float(options.get("timeout", 1800))
    budget = timeout - 60 if timeout > 240 else timeout * 0.75
    cmd = [sys.executable, "-m", "graders.cli", str(submission), "--out", str(out),
           "--verbose", "--budget", f"{budget:g}"]
    if options.get("tasks"):
        cmd += ["--tasks", options["tasks"]]
    if options.get("profile", "default") != "default":
        cmd += ["--profile", options["profile"]]
    if options.get("no_shrink"):
        cmd.append("--no-shrink")
    return cmd


def child_env(options: dict[str, Any], slot_number: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != SEED_ENV}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(GRADERS_ROOT), os.environ.get("PYTHONPATH", "")) if p)
    if options.get("seed") is not None:
        env[SEED_ENV] = str(options["seed"])
    if os.geteuid() == 0:
        env[WORKER_USER_ENV] = f"{WORKER_USER_PREFIX}{slot_number}"
    return env


Watch = Callable[[subprocess.Popen, bool], None]


def run_limited(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float,
                log: Path, watch: Watch | None = None) -> tuple[int | None, float]:
    """Run ``cmd`` in a new session with stdout+stderr to ``log``; on timeout kill its
    whole process group. Returns (exit code or None on timeout, seconds). ``watch`` is
    told when the process starts (True) and ends (False), so that an interrupted batch
    can kill it."""
    start = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        if watch:
            watch(proc, True)
        try:
            code: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            kill_group(proc)  # on a timeout, an interrupt, and whatever it left running
            if watch:
                watch(proc, False)
    return code, time.monotonic() - start


def kill_group(proc: subprocess.Popen) -> None:
    """Kill the process group ``proc`` leads (it was started in its own session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=30)


def grade_job(job: dict[str, Any], watch: Watch | None = None) -> dict[str, Any]:
    """Grade one submission. ``job``: ``name``, ``archive`` (zip bytes of the folder to
    grade), ``options`` (tasks, profile, no_shrink, seed, timeout). Returns ``name``,
    ``status`` (graded / error / crashed / timeout), ``reason``, ``exit_code``,
    ``duration``, ``host``, ``slot`` and ``files`` ({name: bytes}: score.json, results.json,
    classroom.json, feedback.txt as far as written)."""
    options = job["options"]
    outcome: dict[str, Any] = {"name": job["name"], "host": socket.gethostname(), "files": {},
                               "exit_code": None, "duration": 0.0, "slot": None}
    with slot() as number, tempfile.TemporaryDirectory(prefix="tinytrain-class-") as tmp:
        outcome["slot"] = number
        tmp_path = Path(tmp)
        os.chmod(tmp_path, 0o755)  # the sandbox's worker user must reach the submission
        submission, out = tmp_path / "submission", tmp_path / "out"
        try:
            safe_extract(job["archive"], submission)
        except SubmissionProblem as exc:
            return {**outcome, "status": "error", "reason": f"cannot unpack: {exc}"}
        _readable(submission)
        out.mkdir()
        log = tmp_path / "grader.log"
        timeout = float(options.get("timeout", 1800))
        code, duration = run_limited(child_command(options, submission, out),
                                     child_env(options, number), tmp_path, timeout, log, watch)
        outcome["exit_code"], outcome["duration"] = code, round(duration, 3)
        for name in OUTPUT_FILES:
            if (out / name).is_file():
                outcome["files"][name] = (out / name).read_bytes()
        printed = log.read_bytes()
        if len(printed) > FEEDBACK_CAP:
            printed = b"[... earlier output dropped ...]\n" + printed[-FEEDBACK_CAP:]
        outcome["files"]["feedback.txt"] = printed
        status, reason = classify(code, timeout, "score.json" in outcome["files"], printed)
        if status == "error" and "score.json" in outcome["files"]:
            with contextlib.suppress(ValueError, AttributeError):
                reason = json.loads(outcome["files"]["score.json"]).get("error") or reason
        outcome.update(status=status, reason=reason)
    return outcome


def classify(code: int | None, timeout: float, wrote_score: bool, printed: bytes) -> tuple[str, str]:
    """Status and reason from the grader's exit: its exit codes are the contract
    (0 graded, 2 usage error, 3 internal error, each with a score.json)."""
    if code is None:
        return "timeout", f"grading took longer than {timeout:g} s and was stopped"
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
        return "crashed", f"the grader was killed by signal {name}"
    if code == EXIT_GRADED and wrote_score:
        return "graded", ""
    last = _last_line(printed)
    if code in (EXIT_USAGE, EXIT_INTERNAL) and wrote_score:
        kind = "usage error" if code == EXIT_USAGE else "internal grader error"
        return "error", f"{kind}: {last}" if last else kind
    if code == EXIT_GRADED:
        return "error", "the grader exited without writing score.json"
    return "crashed", f"the grader exited with code {code}" + (f": {last}" if last else "")


def _last_line(printed: bytes) -> str:
    lines = [ln.strip() for ln in printed.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def _readable(root: Path) -> None:
    """World-readable files and traversable folders: the sandbox's worker user reads the
    submission, and nothing in it is secret."""
    for dirpath, _dirnames, filenames in os.walk(root):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                os.chmod(path, 0o644)
