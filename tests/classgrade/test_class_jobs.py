"""The grading job's fault boundary, with stand-in graders: a grader that hangs, dies or
leaves processes behind costs only its own row, and nothing outlives its job."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from graders.classgrade import job as job_module
from graders.classgrade.collect import pack
from graders.classgrade.execute import LocalExecutor


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_timeout_kills_the_whole_process_group(tmp_path):
    pids = tmp_path / "pids"
    script = f"sleep 300 & echo $! > {pids}; sh -c 'sleep 300' & echo $! >> {pids}; wait"
    start = time.monotonic()
    code, duration = job_module.run_limited(["sh", "-c", script], dict(os.environ), tmp_path,
                                            timeout=1.5, log=tmp_path / "log")
    assert code is None and 1.5 <= duration < 10 and time.monotonic() - start < 10
    children = [int(p) for p in pids.read_text().split()]
    assert len(children) == 2
    deadline = time.monotonic() + 5
    while any(map(_alive, children)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(map(_alive, children))


def test_processes_left_behind_by_a_finished_grader_are_killed(tmp_path):
    pids = tmp_path / "pids"
    code, _ = job_module.run_limited(["sh", "-c", f"sleep 300 & echo $! > {pids}; exit 0"],
                                     dict(os.environ), tmp_path, timeout=30, log=tmp_path / "log")
    assert code == 0
    time.sleep(0.2)
    assert not _alive(int(pids.read_text()))


@pytest.mark.parametrize("code, wrote, printed, status, reason", [
    (0, True, b"", "graded", ""),
    (None, False, b"", "timeout", "grading took longer than 7 s and was stopped"),
    (-9, False, b"", "crashed", "the grader was killed by signal SIGKILL"),
    (-11, True, b"", "crashed", "the grader was killed by signal SIGSEGV"),
    (0, False, b"", "error", "the grader exited without writing score.json"),
    (3, True, b"table\ninternal grader error: boom\n", "error",
     "internal grader error: internal grader error: boom"),
    (1, False, b"Traceback\nKeyError: 'x'\n", "crashed", "the grader exited with code 1: KeyError: 'x'"),
])
def test_exit_codes_are_classified(code, wrote, printed, status, reason):
    assert job_module.classify(code, 7, wrote, printed) == (status, reason)


def test_concurrent_gradings_never_share_a_slot(tmp_path):
    held, lock, barrier = [], threading.Lock(), threading.Barrier(4)

    def take() -> None:
        with job_module.slot() as number:
            with lock:
                held.append(number)
            barrier.wait(timeout=10)

    threads = [threading.Thread(target=take) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(held)) == 4
    # another process holding a slot: ours differs from it
    code = ("from graders.classgrade.job import slot\nimport sys, time\n"
            "with slot() as n:\n    print(n, flush=True)\n    time.sleep(30)\n")
    other = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    try:
        theirs = int(other.stdout.readline())
        with job_module.slot() as ours:
            assert ours != theirs
    finally:
        other.kill()
        other.wait()


def test_child_gets_its_own_worker_user_and_the_seed_only_by_environment(tmp_path):
    options = {"tasks": "1.1", "seed": 424242, "no_shrink": True, "profile": "default"}
    cmd = job_module.child_command(options, tmp_path / "sub", tmp_path / "out")
    assert "424242" not in " ".join(cmd) and "--seed" not in cmd
    assert cmd[1:3] == ["-m", "graders.cli"]
    env = job_module.child_env(options, 3)
    assert env["TINYTRAIN_GRADER_SEED"] == "424242"
    if os.geteuid() == 0:
        assert env["TINYTRAIN_WORKER_USER"] == "tinytrain-worker-3"
    assert str(job_module.GRADERS_ROOT) in env["PYTHONPATH"].split(os.pathsep)


FAKE_GRADER = """
import json, os, sys, time
out = sys.argv[sys.argv.index("--out") + 1]
kind = open(os.path.join(sys.argv[1], "tinytrain", "__init__.py")).read().strip()
if kind == "hang":
    time.sleep(600)
if kind == "crash":
    os.kill(os.getpid(), 9)
json.dump({"score": 1.0, "max_score": 1.0, "tasks": []}, open(os.path.join(out, "score.json"), "w"))
print("graded")
"""


def test_a_hung_and_a_crashed_grader_cost_only_their_rows(tmp_path, monkeypatch):
    fake = tmp_path / "fake_grader.py"
    fake.write_text(FAKE_GRADER)
    monkeypatch.setattr(job_module, "child_command",
                        lambda options, sub, out: [sys.executable, str(fake), str(sub), "--out", str(out)])
    jobs = []
    for kind in ("good", "hang", "crash", "good2"):
        folder = tmp_path / kind
        (folder / "tinytrain").mkdir(parents=True)
        (folder / "tinytrain" / "__init__.py").write_text("hang" if kind == "hang" else
                                                          "crash" if kind == "crash" else "ok")
        jobs.append({"name": kind, "archive": pack(folder), "key": kind,
                     "options": {"timeout": 3}})
    start = time.monotonic()
    outcomes = {o["name"]: o for o in LocalExecutor(2).run(jobs)}
    assert time.monotonic() - start < 30
    assert {n: o["status"] for n, o in outcomes.items()} == {
        "good": "graded", "good2": "graded", "hang": "timeout", "crash": "crashed"}
    assert json.loads(outcomes["good"]["files"]["score.json"])["score"] == 1.0
    assert outcomes["good"]["files"]["feedback.txt"].strip() == b"graded"
    assert "SIGKILL" in outcomes["crash"]["reason"]
    assert "longer than 3 s" in outcomes["hang"]["reason"]


class _Interrupt(Exception):
    pass


def test_an_interrupted_executor_kills_its_running_graders(tmp_path, monkeypatch):
    pids = tmp_path / "pids"
    monkeypatch.setattr(job_module, "child_command", lambda options, sub, out: [
        "sh", "-c", f"echo $$ >> {pids}; sleep 300"])
    folder = tmp_path / "s"
    (folder / "tinytrain").mkdir(parents=True)
    jobs = [{"name": f"s{i}", "archive": pack(folder), "key": str(i), "options": {"timeout": 600}}
            for i in range(4)]

    def started() -> list[int]:
        return [int(p) for p in pids.read_text().split()] if pids.exists() else []

    def interrupt_when_both_run() -> None:  # as Ctrl-C would, in the main thread
        deadline = time.monotonic() + 30
        while len(started()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGALRM)

    def raise_interrupt(signum, frame):
        raise _Interrupt

    previous = signal.signal(signal.SIGALRM, raise_interrupt)
    try:
        threading.Thread(target=interrupt_when_both_run, daemon=True).start()
        outcomes = LocalExecutor(2).run(jobs)
        with pytest.raises(_Interrupt):
            next(outcomes)
    finally:
        signal.signal(signal.SIGALRM, previous)
    running = started()
    assert len(running) == 2
    assert not any(map(_alive, running))
    time.sleep(0.5)
    assert len(started()) == 2  # the queued jobs never started


DRIVER = """
import sys, time
from pathlib import Path
from graders.classgrade import job as job_module
from graders.classgrade.collect import pack
from graders.classgrade.execute import LocalExecutor
pids = sys.argv[1]
job_module.child_command = lambda options, sub, out: [
    "sh", "-c", f"echo $$ >> {pids}; sleep 300 & echo $! >> {pids}.left; wait"]
folder = Path(sys.argv[2])
(folder / "tinytrain").mkdir(parents=True)
jobs = [{"name": f"s{i}", "archive": pack(folder), "key": str(i), "options": {"timeout": 600}}
        for i in range(2)]
for outcome in LocalExecutor(2).run(jobs):
    pass
"""


def test_a_killed_class_run_takes_its_gradings_along_and_the_next_start_cleans_up(tmp_path):
    """SIGKILL of the class run (no handler runs): its graders die with it (they run with
    PR_SET_PDEATHSIG), and what they left (a process they started, their temporary
    folders, which hold the student's code and a score with the seed) is removed by the
    next start's clean_orphans; a live grading's folder is never touched."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    pids, left = tmp_path / "pids", tmp_path / "pids.left"
    (tmp_path / "driver.py").write_text(DRIVER)
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(job_module.GRADERS_ROOT)}
    driver = subprocess.Popen([sys.executable, str(tmp_path / "driver.py"), str(pids),
                               str(tmp_path / "s")], env=env)

    def lines(path: Path) -> list[int]:
        return [int(p) for p in path.read_text().split()] if path.exists() else []

    deadline = time.monotonic() + 60
    while (len(lines(pids)) < 2 or len(lines(left)) < 2) and time.monotonic() < deadline:
        assert driver.poll() is None
        time.sleep(0.05)
    folders = sorted(tmp.glob("tinytrain-class-*"))
    assert len(folders) == 2 and all((f / "submission").is_dir() for f in folders)
    assert job_module.clean_orphans(tmp) == []  # live: left alone
    assert all(f.is_dir() for f in folders)

    driver.kill()
    driver.wait()
    graders, orphans = lines(pids), lines(left)
    deadline = time.monotonic() + 10
    while any(map(_alive, graders)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(map(_alive, graders))  # died with the class run
    assert all(map(_alive, orphans)) and all(f.is_dir() for f in folders)

    removed = job_module.clean_orphans(tmp)
    assert sorted(removed) == [str(f) for f in folders]
    assert not any(f.exists() for f in folders)
    deadline = time.monotonic() + 5
    while any(map(_alive, orphans)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(map(_alive, orphans))


def test_clean_orphans_never_takes_a_live_grading_folder(tmp_path, monkeypatch):
    """One thread makes and drops grading folders as fast as it can while another cleans:
    no folder goes while its grading holds it."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    stop = threading.Event()
    removed: list[str] = []

    def cleaner() -> None:
        while not stop.is_set():
            removed.extend(job_module.clean_orphans(tmp_path))

    thread = threading.Thread(target=cleaner)
    thread.start()
    try:
        for _ in range(300):
            with job_module.owned_folder() as (folder, started):
                (folder / "submission").mkdir()
                started(os.getpid())
                assert (folder / "submission").is_dir() and (folder / ".owner").is_file()
    finally:
        stop.set()
        thread.join()
    assert removed == [] and list(tmp_path.glob("tinytrain-class-*")) == []
