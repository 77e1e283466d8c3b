"""The sandbox as root, as on Gradescope: hostile submissions (the template, honest score 0,
with attacks appended) graded in a temporary /autograder-shaped folder whose
``source/`` holds a copy of the grader with ``reference/`` beside it (the solution on
disk, as a careless autograder zip would ship it). Every attack must end with the
grader's own score files, the honest score, no process of the worker user left, and the
next grading (the reference, task 1.1) unaffected."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pwd
import re
import shutil
import socket
import stat
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from graders.harness import protocol, sandbox

from ..conftest import REFERENCE, ROOT, TEMPLATE, statuses
from ..hostile import hostile_submission, lines_with, reports, with_init

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the hardened sandbox needs root")

# one worker user per pytest process (xdist worker), so a concurrent grading elsewhere
# in the test run never shows up in this one's "no process of the worker user" checks
WORKER_USER = f"tinytrain-t{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
FILE_MB = 256  # rubric.toml [limits] file_mb
NPROC = 256  # rubric.toml [limits] nproc


@pytest.fixture(scope="module")
def autograder() -> Any:
    """/autograder-shaped folder readable by everyone (not below pytest's private
    folder, so the sandbox, not luck, keeps the worker out): source/ (the grader and the
    reference), submission/, results/."""
    root = Path(tempfile.mkdtemp(prefix="tinytrain-autograder-"))
    os.chmod(root, 0o755)
    source = root / "source"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "graders", source / "graders", ignore=ignore)
    shutil.copytree(REFERENCE / "tinytrain", source / "reference" / "tinytrain", ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", source / "pyproject.toml")
    (source / "seed.txt").write_text("918273645\n")
    for path in [source, *source.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def fresh(autograder: Path) -> tuple[Path, Path]:
    """Empty submission/ and results/ folders."""
    sub, out = autograder / "submission", autograder / "results"
    for path in (sub, out):
        if path.exists() or path.is_symlink():
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        path.mkdir()
        os.chmod(path, 0o755)
    return sub, out


def grade_in(autograder: Path, *args: str, env: dict[str, str] | None = None,
             timeout: float = 600) -> dict[str, Any]:
    """Grade autograder/submission into autograder/results with the grader in source/."""
    source, out = autograder / "source", autograder / "results"
    full_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    full_env.update({"PYTHONPATH": str(source), "TINYTRAIN_WORKER_USER": WORKER_USER,
                     **(env or {})})
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "graders.cli", str(autograder / "submission"), "--out", str(out),
         *args], cwd=source, env=full_env, capture_output=True, text=True, timeout=timeout)
    score: dict[str, Any] = {}
    with contextlib.suppress(OSError, ValueError):
        score = json.loads((out / "score.json").read_text())
    score.update(_exit=proc.returncode, _stdout=proc.stdout, _stderr=proc.stderr,
                 _elapsed=time.monotonic() - start)
    return score


def worker_uid() -> int:
    return pwd.getpwnam(WORKER_USER).pw_uid


def assert_nothing_left(uid: int) -> None:
    """No process of the worker user, no file of it in world-writable places."""
    left = sandbox.user_processes(uid)
    assert not left, f"processes of the worker user left: {left}"
    files = [e for top in sandbox.WORLD_WRITABLE if os.path.isdir(top)
             for e in os.scandir(top) if e.stat(follow_symlinks=False).st_uid == uid]
    assert not files, f"files of the worker user left: {files}"


def assert_own_files(out: Path, score: dict[str, Any]) -> None:
    """The three score files are the grader's: regular files, nothing forged."""
    for name in ("score.json", "results.json", "classroom.json"):
        path = out / name
        assert stat.S_ISREG(os.lstat(path).st_mode), f"{name} is not a regular file"
        text = path.read_text()
        assert "forged" not in text, f"{name} is forged"
        json.loads(text)
    results = json.loads((out / "results.json").read_text())
    assert results["score"] == pytest.approx(score["score"])


def next_grading_unaffected(autograder: Path) -> None:
    """The reference, graded next with the same worker user, gets full marks."""
    sub, _ = fresh(autograder)
    shutil.copytree(REFERENCE / "tinytrain", sub / "tinytrain",
                    ignore=shutil.ignore_patterns("__pycache__"))
    score = grade_in(autograder, "--tasks", "1.1")
    assert score["_exit"] == 0, score["_stderr"]
    assert score["score"] == score["max_score"] == 10, score["tasks"]
    assert_nothing_left(worker_uid())


def tree_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path).encode() + path.read_bytes())
    return digest.hexdigest()


def env_listing(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in folder.rglob("*") if p.is_file() and not p.is_symlink()}


def namespaces_available() -> bool:
    done = subprocess.run(["unshare", "--net", "--ipc", "true"], capture_output=True)
    return done.returncode == 0


@pytest.fixture
def listener() -> Any:
    """A TCP port on 127.0.0.1 for the network attack."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                conn, _ = server.accept()
                conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


BUGS = {"NameError", "TypeError", "AttributeError", "KeyError", "SyntaxError", "IndexError",
        "UnboundLocalError"}
EVERY_ATTACK = [
    "torch-blocker-removed", "torch-find-spec-patched", "torch-own-finder", "torch-sys-path",
    "torch-child", "oracle-import", "oracle-on-disk", "solution", "seed-env", "seed-proc",
    "seed-file", "read-out", "read-submission", "tamper", "rlimit-as", "rlimit-fsize",
    "rlimit-nproc", "memory", "big-file", "network", "daemon", "ptrace", "forge",
    "score-dir", "fork-many", "signal-SIGSTOP", "signal-SIGTERM", "signal-SIGKILL",
]
# all a worker finds in its environment
WORKER_VARIABLES = {"PATH", "HOME", "TMPDIR", "LANG", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE",
                    "PYTHONUNBUFFERED", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                    "MKL_NUM_THREADS", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "TRITON_INTERPRET"}


def attack_config(autograder: Path, attacks: list[str], port: int = 0) -> dict[str, Any]:
    import torch

    source = autograder / "source"
    python = os.path.realpath(sys.executable)
    return {
        "attacks": attacks,
        "site_dirs": [os.path.dirname(os.path.dirname(torch.__file__)),
                      "/usr/lib/python3/dist-packages", "/usr/local/lib/python3.11/site-packages",
                      "/usr/local/lib/python3.11/dist-packages"],
        "lib_dirs": [sysconfig.get_config_var("LIBDIR")],
        "pythons": [p for p in (python, "/usr/bin/python3", "/usr/local/bin/python3")
                    if os.path.exists(p)],
        # the grader's install and the solution beside it (another copy elsewhere on the
        # machine is not the grader's to know of)
        "sources": [str(source)],
        "solutions": [str(source / "reference" / "tinytrain")],
        "out": str(autograder / "results"),
        "submission": str(autograder / "submission"),
        "seed_file": str(source / "seed.txt"),
        "tamper": [str(source / "graders" / "harness" / "worker.py"),
                   str(source / "graders" / "oracle" / "__init__.py"),
                   str(source / "graders" / "runner" / "plugin.py")],
        "big_file_mb": FILE_MB + 16,
        "big_file_dirs": ["/tmp", "/dev/shm"],
        "fork_max": 4 * NPROC,
        "daemon_s": 30,
        "port": port,
        "signals": [a.removeprefix("signal-") for a in attacks if a.startswith("signal-")],
    }


def test_every_attack_is_held_as_root(autograder, listener):
    """One submission carries every attack that does not mask another: torch by every
    route, the oracle, the solution on disk, the seed, the output and submission folders,
    tampering with the install and the worker environment, raising limits, memory, big
    files, forks, a daemon, ptrace, forged files and signals to the grader. The output
    folder holds, before grading, a folder, an immutable file and a link where the score
    files go."""
    sub, out = fresh(autograder)
    hostile_submission(sub, attack_config(autograder, [*EVERY_ATTACK, "environment"], listener))
    canary = autograder / "canary.txt"
    canary.write_text("untouched\n")
    (out / "score.json").mkdir()
    (out / "score.json" / "inside").write_text("x")
    (out / "results.json").write_text("old")
    os.chmod(out / "results.json", 0o444)
    immutable = subprocess.run(["chattr", "+i", str(out / "results.json")],
                               capture_output=True).returncode == 0
    (out / "classroom.json").symlink_to(canary)
    source_before = tree_digest(autograder / "source")
    env_before = env_listing(sandbox.worker_env(root_mode=True)[0].path)

    score = grade_in(autograder, "--tasks", "1.1", "--seed-file",
                     str(autograder / "source" / "seed.txt"))

    assert score["_exit"] == 0, score["_stderr"]
    assert score["score"] == 0 and score["max_score"] == 10
    assert set(statuses(score)) == {"not_implemented"}, score["tasks"]
    assert_own_files(out, score)
    assert canary.read_text() == "untouched\n"
    if immutable:
        assert not subprocess.run(["lsattr", str(out / "results.json")], capture_output=True,
                                  text=True).stdout.startswith("----i")
    found = reports(score)
    expected = {a for a in EVERY_ATTACK if a not in ("torch-child", "tamper", "big-file")}
    expected |= {f"torch-child#{i}" for i in range(3)} | {f"tamper#{i}" for i in range(5)}
    expected |= {"big-file#0", "big-file#1"}
    expected |= {f"signal-{s}#group" for s in ("SIGSTOP", "SIGTERM", "SIGKILL")}
    missing = {a for a in expected if not any(k.startswith(a) for k in found)}
    assert not missing, f"attacks that did not report: {missing}\n{score['tasks'][0]['tests']}"
    broke = {k: v for k, v in found.items() if v[0] != "held"}
    # held by a bug in the attack, not by the sandbox: the test would prove nothing
    bugs = {k: v for k, v in found.items() if v[1] in BUGS}
    assert not bugs, bugs
    if not namespaces_available():
        broke.pop("network", None)  # only a network namespace stops it
    assert not broke, broke
    # the limits held at their values, and what the worker left is gone
    for line in lines_with(score, "BIGFILE"):
        path, written = line.split()[1], int(line.split()[2])
        assert written <= FILE_MB << 20 and not os.path.exists(path), line
    forks = lines_with(score, "FORKS")
    assert forks and int(forks[0].split()[1]) < NPROC, forks
    assert lines_with(score, "DAEMON")
    # the worker's environment: minimal, a path of the worker environment and the
    # standard library only, no seed on its command line
    env, _ = sandbox.worker_env(root_mode=True)
    keys = set(lines_with(score, "ENVKEYS")[0].split()[1].split(","))
    assert keys <= WORKER_VARIABLES, keys - WORKER_VARIABLES
    path = lines_with(score, "SYSPATH")[0].split(" ", 1)[1].split("|")
    scratch = str(sandbox.STATE_ROOT / "run")
    assert str(env.site) in path, path
    # (the worker's scratch folder, its home, is shown to the student as ~)
    assert all(p.startswith((str(env.path), scratch, "~/")) for p in path), path
    assert not any("site-packages" in p for p in path), path
    assert "seed" not in lines_with(score, "ARGV")[0].lower()
    # the seed: nowhere a student sees, and not in the worker's environment
    for name in ("results.json", "classroom.json"):
        assert "918273645" not in (out / name).read_text()
    assert "918273645" not in json.dumps([t["output"] for k in score["tasks"] for t in k["tests"]])
    # the install, the worker environment and the checkout are as they were, and locked
    assert tree_digest(autograder / "source") == source_before
    assert env_listing(env.path) == env_before
    assert re.search(r"made unreadable to the worker user.*source", score["_stderr"]), \
        score["_stderr"]
    assert stat.S_IMODE(os.stat(autograder / "source").st_mode) & 0o077 == 0
    time.sleep(1.0)  # a surviving daemon would rewrite the score files now
    assert_own_files(out, score)
    assert_nothing_left(worker_uid())
    next_grading_unaffected(autograder)


def test_the_attacks_work_without_the_sandbox(autograder):
    """Control: the same attack code, run in the grader's process (--no-sandbox), does
    reach torch, the oracle and the solution: the attacks above are real."""
    sub, _ = fresh(autograder)
    attacks = ["torch-blocker-removed", "torch-own-finder", "oracle-import", "solution"]
    report = autograder / "control.txt"
    hostile_submission(sub, {**attack_config(autograder, attacks), "report_file": str(report)})
    score = grade_in(autograder, "--tasks", "1.1", "--no-sandbox")
    found = reports(score, report.read_text() if report.exists() else "")
    assert {a: found.get(a, ("missing",))[0] for a in attacks} == dict.fromkeys(attacks, "BROKE"), \
        (found, score["_stdout"][-3000:])
    assert score["score"] == 10  # the re-exported solution


@pytest.mark.parametrize("where", ["package", "file", "folder"])
def test_a_symbolic_link_in_the_submission_is_refused(autograder, where):
    sub, out = fresh(autograder)
    reference = autograder / "source" / "reference" / "tinytrain"
    if where == "package":
        (sub / "tinytrain").symlink_to(reference)
    else:
        shutil.copytree(TEMPLATE / "tinytrain", sub / "tinytrain")
        if where == "file":
            (sub / "tinytrain" / "tensor.py").unlink()
            (sub / "tinytrain" / "tensor.py").symlink_to(reference / "tensor.py")
        else:
            shutil.rmtree(sub / "tinytrain" / "autograd")
            (sub / "tinytrain" / "autograd").symlink_to(reference / "autograd")
    score = grade_in(autograder, "--tasks", "1.1")
    assert score["_exit"] == 2
    assert score["status"] == "error" and score["score"] == 0
    assert "symbolic link" in score["error"]
    assert len(score["_stderr"].strip().splitlines()) == 1, score["_stderr"]
    assert json.loads((out / "results.json").read_text())["score"] == 0
    assert_own_files(out, score)


def test_a_hard_link_in_the_submission_is_refused(autograder):
    """A file of tinytrain/ that is another name of a root-only file (a 0600 secret on the
    same file system): root copied it into the worker's scratch folder on main 9efcd2d,
    where the worker read it. Refused as symbolic links are: one line, exit code 2."""
    sub, out = fresh(autograder)
    shutil.copytree(TEMPLATE / "tinytrain", sub / "tinytrain")
    secret = sub.parent / "secret.txt"
    secret.write_text("THE-SECRET-918273645\n")
    os.chmod(secret, 0o600)
    os.link(secret, sub / "tinytrain" / "notes.txt")
    score = grade_in(autograder, "--tasks", "1.1")
    assert score["_exit"] == 2
    assert score["status"] == "error" and score["score"] == 0
    assert "hard link" in score["error"] and "notes.txt" in score["error"]
    assert len(score["_stderr"].strip().splitlines()) == 1, score["_stderr"]
    assert "THE-SECRET" not in json.dumps(score)
    assert json.loads((out / "results.json").read_text())["score"] == 0
    assert_own_files(out, score)


REACH_THE_GRADER = """
def _reach_the_grader():
    import importlib, os, sys
    found = []
    try:
        from graders.probes import _functions  # noqa: F401
        found.append("import")
    except BaseException:
        pass
    if any(name.startswith("graders") for name in sys.modules):
        found.append("sys.modules")
    sys.meta_path[:] = [f for f in sys.meta_path if "Block" not in type(f).__name__]
    try:
        importlib.import_module("graders.probes._functions")
        found.append("import without the blocker")
    except BaseException:
        pass
    for folder in sys.path:
        path = os.path.join(folder, "graders", "probes", "_functions.py")
        try:
            with open(path) as f:
                if "def " in f.read():
                    found.append("read " + path)
        except OSError:
            pass
    print("GRADER-REACHED", found or "nothing")
_reach_the_grader()
"""


def test_the_graders_modules_are_out_of_the_submissions_reach(autograder):
    """The probes hold the grader's own recorder, engine and hook runner (tasks 1.1, 1.2,
    1.4): on main 9efcd2d a template whose stubs called graders.probes._functions scored
    1.1 10/10. Now none of import, sys.modules, an import with the blocker removed, or
    reading the file reaches them."""
    sub, _ = fresh(autograder)
    with_init(sub, REACH_THE_GRADER)
    score = grade_in(autograder, "--tasks", "1.1")
    assert score["_exit"] == 0, score["_stderr"]
    reached = lines_with(score, "GRADER-REACHED")
    assert reached and set(reached) == {"GRADER-REACHED nothing"}, reached
    assert score["score"] == 0


LEAVE_BEHIND = """
def _leave_behind():
    import ctypes, os
    for folder in {folders!r}:
        try:
            with open(os.path.join(folder, "left-by-worker.txt"), "w") as f:
                f.write("still here")
            os.makedirs(os.path.join(folder, "left-dir", "deeper"), exist_ok=True)
        except OSError as exc:
            print("LEAVE-FAILED", folder, exc)
    libc = ctypes.CDLL(None, use_errno=True)
    print("SHMID", libc.shmget(0, 4096, 0o1000 | 0o600))  # IPC_PRIVATE, IPC_CREAT
    print("SEMID", libc.semget(0, 1, 0o1000 | 0o600))
_leave_behind()
"""


def test_files_and_ipc_left_anywhere_are_removed(autograder):
    """The worker writes in shared folders no list names (a world-writable spool folder,
    one deep below another) and makes System V IPC objects: all gone after the grading
    (on main 9efcd2d only /tmp, /var/tmp, /dev/shm and /run/lock were cleaned)."""
    shared = [Path(tempfile.mkdtemp(prefix="tinytrain-spool-", dir="/var/cache")),
              Path(tempfile.mkdtemp(prefix="tinytrain-deep-", dir="/srv" if os.path.isdir("/srv")
                                    else "/var/lib"))]
    try:
        deep = shared[1] / "a" / "b" / "c"
        deep.mkdir(parents=True)
        for path in (shared[0], shared[1], shared[1] / "a", shared[1] / "a" / "b"):
            os.chmod(path, 0o755)
        os.chmod(shared[0], 0o1777)
        os.chmod(deep, 0o777)
        folders = [str(shared[0]), str(deep)]
        sub, _ = fresh(autograder)
        with_init(sub, LEAVE_BEHIND.format(folders=folders))
        score = grade_in(autograder, "--tasks", "1.1")
        assert score["_exit"] == 0, score["_stderr"]
        assert score["score"] == 0
        assert "LEAVE-FAILED" not in json.dumps(score)
        uid = worker_uid()
        for folder in folders:
            assert os.listdir(folder) == [], folder
        made = {line.split()[0]: int(line.split()[1])
                for line in lines_with(score, "SHMID") + lines_with(score, "SEMID")}
        assert made and min(made.values()) >= 0, made  # the objects were made
        for kind in ("shm", "sem"):
            header, *rows = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
            owners = [dict(zip(header.split(), row.split()))["uid"] for row in rows]
            assert str(uid) not in owners, (kind, rows)
        assert_nothing_left(uid)
    finally:
        for path in shared:
            shutil.rmtree(path, ignore_errors=True)


BLOCKED_PIPE = """
def _block_the_pipe():
    import builtins, fcntl, json, os, struct, sys, time  # tinytrain has its own int
    fd_in = builtins.int(sys.argv[sys.argv.index("--fd-in") + 1])
    fd_out = builtins.int(sys.argv[sys.argv.index("--fd-out") + 1])
    fcntl.fcntl(fd_in, 1031, 4096)  # F_SETPIPE_SZ: the smallest request pipe
    header = json.dumps({"body": {"ok": True, "value": {}}, "buffers": []}).encode()
    os.write(fd_out, b"TTP1" + struct.pack("<Q", len(header)) + header)  # hello answered
    time.sleep(3600)  # and no request ever read


_block_the_pipe()
"""

HUGE_FRAME = """
def _huge_frame():
    import builtins, json, os, struct, sys  # tinytrain has its own int
    fd_out = builtins.int(sys.argv[sys.argv.index("--fd-out") + 1])
    header = json.dumps({"body": {"$nd": 0, "dtype": "uint8", "shape": [1 << 30]},
                         "buffers": [1 << 30]}).encode()
    os.write(fd_out, b"TTP1" + struct.pack("<Q", len(header)) + header)
    block = b"\\0" * (1 << 20)
    while True:
        os.write(fd_out, block)


_huge_frame()
"""


@pytest.mark.parametrize(("name", "code", "status", "message"), [
    ("blocked-pipe", BLOCKED_PIPE, "timeout", "took no request"),
    ("huge-frame", HUGE_FRAME, "error", "message too large"),
], ids=["blocked-pipe", "huge-frame"])
def test_a_worker_that_blocks_or_floods_the_pipes(autograder, name, code, status, message):
    """The request pipe shrunk to a page and never read: the grader's write of a larger
    request (task 5.10 sends a 0.3 MB array) meets its deadline. A frame announcing 1 GiB:
    cut off after its header. The secret seed given in the environment reaches neither the
    worker nor its output."""
    sub, out = fresh(autograder)
    with_init(sub, code)
    # a budget: every test of the blocked pipe costs one call deadline (5 s)
    score = grade_in(autograder, "--tasks", "5.10", "--budget", "60",
                     env={"TINYTRAIN_GRADER_SEED": "5550123"})
    assert score["_exit"] == 0, score["_stderr"]
    assert score["score"] == 0
    tests = score["tasks"][0]["tests"]
    assert {t["status"] for t in tests} <= {status, "timeout"}, tests
    assert message in tests[0]["message"], tests[0]
    assert score["seed"] == 5550123
    assert "5550123" not in (out / "results.json").read_text()
    assert_own_files(out, score)
    assert_nothing_left(worker_uid())
    assert score["_elapsed"] < 240
    next_grading_unaffected(autograder)


def test_import_failures_cost_seconds(autograder):
    """An __init__.py that raises, then one that hangs: every test of every task recorded
    at once after the first (a hang costs one start timeout, 30 s)."""
    timings = {}
    for name, code in [("raises", "raise RuntimeError('broken on purpose')\n"),
                       ("hangs", "while True:\n    pass\n")]:
        sub, out = fresh(autograder)
        with_init(sub, code)
        score = grade_in(autograder)
        assert score["_exit"] == 0, score["_stderr"]
        assert score["score"] == 0
        tests = [t for k in score["tasks"] for t in k["tests"]]
        assert len(tests) > 500
        wanted = "error" if name == "raises" else "timeout"
        assert {t["status"] for t in tests} == {wanted}
        assert len({t["message"] for t in tests}) <= 2, {t["message"] for t in tests}
        timings[name] = score["_elapsed"]
        assert_own_files(out, score)
        assert_nothing_left(worker_uid())
    # collection of every suite and the grader's start take most of it (loaded machine)
    assert timings["raises"] < 90, timings
    assert timings["hangs"] < 30 + 90, timings


def test_grading_budget(autograder):
    """--budget: the tests not begun in time are timeouts, and the score files are
    written."""
    sub, out = fresh(autograder)
    shutil.copytree(REFERENCE / "tinytrain", sub / "tinytrain",
                    ignore=shutil.ignore_patterns("__pycache__"))
    score = grade_in(autograder, "--tasks", "1", "--budget", "0")
    assert score["_exit"] == 0, score["_stderr"]
    tests = [t for k in score["tasks"] for t in k["tests"]]
    assert tests and {t["status"] for t in tests} == {"timeout"}
    assert "time budget of 0 s" in tests[0]["message"]
    assert_own_files(out, score)


def test_prepare_sandbox(autograder):
    """--prepare-sandbox: the worker user and environment, then exit 0."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(autograder / "source"), TINYTRAIN_WORKER_USER=WORKER_USER)
    done = subprocess.run([sys.executable, "-m", "graders.cli", "--prepare-sandbox"],
                          cwd=autograder / "source", env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert f"worker user {WORKER_USER}" in done.stdout
    assert "worker environment" in done.stdout
    assert str(autograder / "source") in done.stdout  # checked unreadable


def test_the_worker_environment(tmp_path):
    """Built from NumPy, ml_dtypes and the worker side of the grader only; the worker user
    can run it, and finds neither torch nor the grader's trusted code in it."""
    env, _ = sandbox.worker_env(root_mode=True)
    graders = env.site / "graders"
    assert {p.name for p in graders.iterdir()} <= {"__init__.py", "__pycache__", "harness", "probes"}
    assert {p.name for p in (graders / "harness").glob("*.py")} == {
        "__init__.py", "worker.py", "protocol.py"}
    assert {p.name for p in (graders / "probes").glob("*.py")} == {
        p.name for p in (ROOT / "graders" / "probes").glob("*.py")}
    assert not (env.site / "torch").exists()
    stdlib = next((env.path / "python" / "lib").glob("python3.*"))
    assert not (stdlib / "site-packages").exists() and not (stdlib / "test").exists()
    user, _ = sandbox.acquire_user(WORKER_USER)
    try:
        probe_file = env.site / "graders" / "probes" / "_functions.py"
        code = ("import importlib.util as u; print(sys.prefix, [m for m in ('torch', "
                "'hypothesis', 'pytest') if u.find_spec(m)])\n"
                f"try:\n    open({str(probe_file)!r}).read()\nexcept PermissionError:\n"
                "    pass\nelse:\n    print('the probes are readable')")
        done = subprocess.run(env.command(code), user=user.uid, group=user.gid, extra_groups=[],
                              env={"PATH": "/usr/bin:/bin", **env.variables}, cwd="/",
                              capture_output=True, text=True, timeout=120)
    finally:
        user.release()
    assert done.returncode == 0, done.stderr
    prefix, found = done.stdout.split(" ", 1)
    assert prefix == str(env.path / "python") and found.strip() == "[]"


def test_frame_cap_is_checked_before_reading():
    """A header announcing more than MAX_FRAME_BYTES is refused after the header alone."""
    header = json.dumps({"body": None, "buffers": [protocol.MAX_FRAME_BYTES + 1]}).encode()
    data = protocol.MAGIC + len(header).to_bytes(8, "little") + header
    read = []

    def chunks(fd: int, n: int) -> bytes:
        nonlocal data
        chunk, data = data[:n], data[n:]
        read.append(n)
        return chunk

    with pytest.raises(protocol.ProtocolError, match="too large"):
        protocol.read_message(0, chunks)
    assert sum(read) == len(protocol.MAGIC) + 8 + len(header)
