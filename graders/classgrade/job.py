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
import shutil
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
OUTPUT_FILES = ("score.json", "results.json", "classroom.json", "pytest_report.json")
FEEDBACK_CAP = 1 << 20  # bytes of the grader's printed report kept as feedback.txt

EXIT_GRADED, EXIT_USAGE, EXIT_INTERNAL = 0, 2, 3
TMP_PREFIX = "tinytrain-class-"
OWNER_FILE = ".owner"  # in a grading's temporary folder: locked while the grading runs
UNOWNED_AGE_S = 86400  # a temporary folder without an owner file (older versions): a day

# Run as the grader's parent: ask the kernel to SIGKILL this process when the process that
# started it dies (prctl PR_SET_PDEATHSIG, kept across execve), then become the grader.
# argv: the expected parent's pid, then the command. If the parent is already gone (it died
# between fork and prctl), exit at once.
DEATHSIG = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    sys.exit(70)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)


def with_deathsig(cmd: list[str]) -> list[str]:
    """``cmd`` run so that it dies with this process (Linux; elsewhere ``cmd`` as is)."""
    if not sys.platform.startswith("linux"):
        return cmd
    return [sys.executable, "-c", DEATHSIG, str(os.getpid()), *cmd]


def _start_time(pid: int) -> int | None:
    """The process's start time (clock ticks since boot), or None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def _group_members(pgid: int, since: int) -> list[int]:
    """Processes in process group ``pgid`` started at or after ``since`` (so not a later
    group that reused the number: those started after the grading's folder was cleaned)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and int(fields[19]) >= since:
            found.append(int(entry.name))
    return found


def clean_orphans(tmp: Path | None = None) -> list[str]:
    """Remove the temporary folders of gradings whose class run died (SIGKILL, a lost
    machine), first killing what is left of their graders. A grading's folder holds
    ``OWNER_FILE``, locked (flock) by the process that runs the grading for as long as it
    runs: a folder whose lock can be taken has no owner any more. Live gradings, of this
    run or another, are never touched. Returns the folders removed."""
    base = Path(tmp or tempfile.gettempdir())
    removed = []
    for folder in sorted(base.glob(f"{TMP_PREFIX}*")):
        if not folder.is_dir() or folder.is_symlink():
            continue
        owner = folder / OWNER_FILE
        try:
            handle = open(owner, "r+")
        except FileNotFoundError:
            with contextlib.suppress(OSError):
                if time.time() - folder.stat().st_mtime > UNOWNED_AGE_S:
                    shutil.rmtree(folder, ignore_errors=True)
                    removed.append(str(folder))
            continue
        except OSError:
            continue
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a live grading
            try:  # the grading may have ended (its folder gone) between open and flock
                if os.stat(owner).st_ino != os.fstat(handle.fileno()).st_ino:
                    continue
            except OSError:
                continue
            with contextlib.suppress(ValueError, OSError):
                info = json.loads(handle.read() or "{}")
                pgid, since = int(info.get("pgid", 0)), int(info.get("started", 0))
                if pgid > 1:
                    for pid in _group_members(pgid, since):
                        with contextlib.suppress(ProcessLookupError, PermissionError):
                            os.kill(pid, signal.SIGKILL)
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(str(folder))
    return removed


@contextlib.contextmanager
def owned_folder() -> Iterator[tuple[Path, Callable[[int], None]]]:
    """A temporary folder for one grading, with its owner lock held until the folder is
    gone; and a function to record the grader's process group in it (for
    ``clean_orphans``). The lock file is locked before it takes its name, and the folder
    removed before the lock is let go: another run's ``clean_orphans`` never sees an
    unlocked owner file of a live grading."""
    path = Path(tempfile.mkdtemp(prefix=TMP_PREFIX))
    try:
        fd = os.open(path / (OWNER_FILE + ".new"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "r+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            os.rename(path / (OWNER_FILE + ".new"), path / OWNER_FILE)

            def started(pgid: int) -> None:
                handle.seek(0)
                handle.truncate()
                handle.write(json.dumps({"owner": os.getpid(), "pgid": pgid,
                                         "started": _start_time(pgid) or 0}))
                handle.flush()

            try:
                yield path, started
            finally:
                shutil.rmtree(path, ignore_errors=True)
    finally:
        shutil.rmtree(path, ignore_errors=True)


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
    clean_orphans()
    with slot() as number, owned_folder() as (tmp_path, started):
        outcome["slot"] = number
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

        def watched(proc: subprocess.Popen, running: bool) -> None:
            if running:
                started(proc.pid)  # its own session: the pid is the process group
            if watch:
                watch(proc, running)

        code, duration = run_limited(with_deathsig(child_command(options, submission, out)),
                                     child_env(options, number), tmp_path, timeout, log,
                                     watched)
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
