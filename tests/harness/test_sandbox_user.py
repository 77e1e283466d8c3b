"""The sandbox as a normal user (a student's laptop): the worker runs as the grader's own
user, so the sandbox is a fault boundary. What holds without root is tested here, with
the grader run as an unprivileged test user: limits, deadlines, frame caps, a refused
symbolic link, the seed kept out of the worker's reach, forged score files and a
SIGTERM to the grader, a daemon that outlives the grading, score.json made a folder."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from graders.harness import sandbox

from ..conftest import REFERENCE, ROOT, TEMPLATE
from ..hostile import hostile_submission, lines_with, reports, with_init
from .test_sandbox import BLOCKED_PIPE, BUGS, HUGE_FRAME

# A test user per xdist worker: a test's daemon kills every process of its user and
# RLIMIT_NPROC counts them all, so tests on two workers must not share one.
TEST_USER = f"tinytrain-tu{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
FILE_MB = 256
NPROC = 256


def _user() -> tuple[int, int] | None:
    """(uid, gid) to run the grader as: this user when not root, else a test user."""
    if os.geteuid() != 0:
        return None
    with contextlib.suppress(KeyError):
        entry = pwd.getpwnam(TEST_USER)
        return entry.pw_uid, entry.pw_gid
    done = subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                           "--shell", "/usr/sbin/nologin", "--user-group", TEST_USER],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot create a test user: {done.stderr.strip()}")
    entry = pwd.getpwnam(TEST_USER)
    return entry.pw_uid, entry.pw_gid


def _as_user(user: tuple[int, int] | None) -> dict[str, Any]:
    return {} if user is None else {"user": user[0], "group": user[1], "extra_groups": []}


@pytest.fixture(scope="module")
def setup() -> Any:
    """A folder everyone can read with a copy of the grader and the reference, a cache
    and a scratch folder of the test user, and an interpreter (with torch) it can run:
    this one, or hard links to it when it lives where the user cannot reach (/root)."""
    user = _user()
    root = Path(tempfile.mkdtemp(prefix="tinytrain-user-"))
    os.chmod(root, 0o755)
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "graders", root / "source" / "graders", ignore=ignore)
    shutil.copytree(REFERENCE / "tinytrain", root / "reference" / "tinytrain", ignore=ignore)
    for path in [root / "source", *(root / "source").rglob("*"), root / "reference",
                 *(root / "reference").rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    home = root / "home"
    home.mkdir()
    if user:
        os.chown(home, *user)
    python, env = sys.executable, {}
    probe = [python, "-c", "import torch, hypothesis, pytest"]
    try:
        usable = subprocess.run(probe, capture_output=True, cwd="/", **_as_user(user)).returncode == 0
    except OSError:  # cannot even be started
        usable = False
    if not usable:
        try:
            python = _farm(root / "python")
        except OSError as exc:
            shutil.rmtree(root, ignore_errors=True)
            pytest.skip(f"the test user cannot run this interpreter and hard links failed: {exc}")
        env["LD_LIBRARY_PATH"] = str(root / "python" / "lib")
    yield {"root": root, "user": user, "python": python, "env": env, "home": home}
    shutil.rmtree(root, ignore_errors=True)


def _farm(dst: Path) -> str:
    """This interpreter, its standard library and the packages the grader needs (by
    their installed file lists), hard-linked under ``dst``; returns its executable."""
    sandbox._copy_python(dst)
    site = dst / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    todo, seen = ["torch", "hypothesis", "pytest", "numpy", "ml_dtypes"], set()
    while todo:
        name = re.split(r"[ ;<>=!~\[(]", todo.pop(), maxsplit=1)[0]
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        todo += [r for r in dist.requires or [] if "extra ==" not in r]
        for entry in dist.files or []:
            rel = Path(str(entry))
            src = Path(dist.locate_file(entry))
            if rel.parts[0] != ".." and src.is_file():
                sandbox._link_or_copy(src, site / rel)
    return str(dst / "bin" / Path(os.path.realpath(sys.executable)).name)


def fresh(setup: dict[str, Any], name: str) -> tuple[Path, Path]:
    sub, out = setup["home"] / name / "submission", setup["home"] / name / "results"
    for path in (sub, out):
        path.mkdir(parents=True)
    if setup["user"]:
        for path in (sub.parent, sub, out):
            os.chown(path, *setup["user"])
    return sub, out


def own(setup: dict[str, Any], folder: Path) -> None:
    if setup["user"]:
        for path in [folder, *folder.rglob("*")]:
            os.lchown(path, *setup["user"])


def grade_as_user(setup: dict[str, Any], sub: Path, out: Path, *args: str,
                  env: dict[str, str] | None = None) -> dict[str, Any]:
    full_env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(setup["root"] / "source"),
                "HOME": str(setup["home"]), "XDG_CACHE_HOME": str(setup["home"] / ".cache"),
                **setup["env"], **(env or {})}
    start = time.monotonic()
    proc = subprocess.run([setup["python"], "-m", "graders.cli", str(sub), "--out", str(out), *args],
                          cwd=setup["root"] / "source", env=full_env, capture_output=True, text=True,
                          timeout=600, **_as_user(setup["user"]))
    score: dict[str, Any] = {}
    with contextlib.suppress(OSError, ValueError):
        score = json.loads((out / "score.json").read_text())
    score.update(_exit=proc.returncode, _stdout=proc.stdout, _stderr=proc.stderr,
                 _elapsed=time.monotonic() - start)
    return score


def uid_of(setup: dict[str, Any]) -> int:
    return setup["user"][0] if setup["user"] else os.getuid()


def assert_no_leftovers(setup: dict[str, Any]) -> None:
    """No process of the test user is left (when it is a user of its own)."""
    if setup["user"]:
        left = sandbox.user_processes(uid_of(setup))
        assert not left, f"processes of the test user left: {left}"


def assert_own_files(out: Path) -> dict[str, Any]:
    for name in ("score.json", "results.json", "classroom.json"):
        path = out / name
        assert path.is_file() and not path.is_symlink(), name
        assert "forged" not in path.read_text(), f"{name} is forged"
    return json.loads((out / "score.json").read_text())


def next_grading_unaffected(setup: dict[str, Any]) -> None:
    sub, out = fresh(setup, f"next-{time.monotonic_ns()}")
    shutil.copytree(setup["root"] / "reference" / "tinytrain", sub / "tinytrain")
    own(setup, sub)
    score = grade_as_user(setup, sub, out, "--tasks", "1.1")
    assert score["_exit"] == 0, score["_stderr"]
    assert score["score"] == score["max_score"] == 10
    assert_no_leftovers(setup)


USER_ATTACKS = ["seed-env", "seed-proc", "rlimit-as", "rlimit-fsize", "rlimit-nproc", "memory",
                "big-file", "fork-many", "daemon", "score-dir", "forge", "signal-SIGTERM"]


def test_what_holds_as_a_normal_user(setup):
    """Limits, the seed, a daemon that waits for the grader to exit, score.json made a
    folder, forged score files and then a SIGTERM to the grader: the grader kills what the
    worker started, writes its own files (grading stopped: an error, 0 points), and the
    next grading gets full marks."""
    sub, out = fresh(setup, "attacks")
    report = setup["home"] / "attacks" / "report.txt"
    cfg = {"attacks": USER_ATTACKS, "site_dirs": [], "pythons": [], "sources": [],
           "solutions": [], "tamper": [], "out": str(out), "submission": str(sub),
           "big_file_mb": FILE_MB + 16, "big_file_dirs": [str(setup["home"] / "attacks")],
           "fork_max": 4 * NPROC + 2000, "daemon_s": 30, "signals": ["SIGTERM"],
           "report_file": str(report)}
    hostile_submission(sub, cfg)
    own(setup, sub)
    score = grade_as_user(setup, sub, out, "--tasks", "1.1",
                          env={"TINYTRAIN_GRADER_SEED": "7770123"})
    assert score["_exit"] == 3, score["_stderr"]
    assert "stopped by SIGTERM" in score["_stderr"]
    assert "fault boundary" in score["_stderr"]
    final = assert_own_files(out)
    assert final["status"] == "error" and final["score"] == 0
    assert "SIGTERM" in final["error"]
    text = report.read_text()
    found = reports({}, text)
    missing = [a for a in USER_ATTACKS if not any(k.startswith(a) for k in found)]
    assert not missing, (missing, text)
    bugs = {k: v for k, v in found.items() if v[1] in BUGS}
    assert not bugs, bugs
    # forging and the signal worked (same user): what matters is that they changed nothing
    broke = {k: v for k, v in found.items()
             if v[0] != "held" and not k.startswith(("forge", "score-dir", "signal-"))}
    assert not broke, broke
    assert "7770123" not in text
    big = setup["home"] / "attacks"
    assert all(p.stat().st_size <= FILE_MB << 20 for p in big.glob("tinytrain-attack-*"))
    time.sleep(1.0)  # a surviving daemon would forge the files now
    assert_own_files(out)
    assert_no_leftovers(setup)
    next_grading_unaffected(setup)


def test_limits_and_forks_as_a_normal_user(setup):
    """The same limits without the SIGTERM: every probe result is recorded; the fork
    count stops at the user's processes plus the worker's share."""
    sub, out = fresh(setup, "limits")
    cfg = {"attacks": ["rlimit-as", "rlimit-nproc", "memory", "fork-many"], "site_dirs": [],
           "pythons": [], "sources": [], "solutions": [], "tamper": [], "out": str(out),
           "submission": str(sub), "fork_max": 4 * NPROC + 2000}
    hostile_submission(sub, cfg)
    own(setup, sub)
    score = grade_as_user(setup, sub, out, "--tasks", "1.1")
    assert score["_exit"] == 0, score["_stderr"]
    assert score["score"] == 0
    found = reports(score)
    assert {k: v[0] for k, v in found.items()} == dict.fromkeys(cfg["attacks"], "held"), found
    forks = lines_with(score, "FORKS")
    assert forks and int(forks[0].split()[1]) < 4 * NPROC + 2000
    assert_no_leftovers(setup)


@pytest.mark.parametrize("case", ["symlink", "huge-frame", "blocked-pipe", "import-hang"])
def test_harness_defences_as_a_normal_user(setup, case):
    sub, out = fresh(setup, case)
    args = ["--tasks", "1.1"]
    if case == "symlink":
        (sub / "tinytrain").symlink_to(setup["root"] / "reference" / "tinytrain")
    elif case == "huge-frame":
        with_init(sub, HUGE_FRAME)
    elif case == "blocked-pipe":
        with_init(sub, BLOCKED_PIPE)
        args = ["--tasks", "5.10", "--budget", "60"]
    else:
        with_init(sub, "while True:\n    pass\n")
        args = ["--tasks", "1"]
    own(setup, sub)
    score = grade_as_user(setup, sub, out, *args)
    final = assert_own_files(out)
    assert final["score"] == 0
    tests = [t for k in final["tasks"] for t in k["tests"]]
    if case == "symlink":
        assert score["_exit"] == 2 and "symbolic link" in final["error"]
    elif case == "huge-frame":
        assert {t["status"] for t in tests} == {"error"}
        assert "message too large" in tests[0]["message"]
    elif case == "blocked-pipe":
        assert "took no request" in tests[0]["message"]
        assert score["_elapsed"] < 240
    else:
        assert {t["status"] for t in tests} == {"timeout"}
        assert score["_elapsed"] < 30 + 60
    assert_no_leftovers(setup)


def test_template_and_reference_as_a_normal_user(setup):
    """Sanity: as a normal user the template scores 0 (not_implemented) and the reference
    full marks."""
    sub, out = fresh(setup, "template")
    shutil.copytree(TEMPLATE / "tinytrain", sub / "tinytrain")
    own(setup, sub)
    score = grade_as_user(setup, sub, out, "--tasks", "1.1")
    assert score["_exit"] == 0, score["_stderr"]
    assert score["score"] == 0
    assert {t["status"] for k in score["tasks"] for t in k["tests"]} == {"not_implemented"}
    assert score["environment"]["sandbox"].startswith("normal user")
    next_grading_unaffected(setup)
