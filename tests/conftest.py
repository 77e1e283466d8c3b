"""Shared fixtures: grading a folder with the real command line, in a subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "reference"
TEMPLATE = ROOT / "student_template"


def grade(submission: Path, out: Path, *args: str, timeout: float = 600,
          env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``tinytrain-grade`` (as ``python -m graders.cli``) and return score.json,
    with the exit code and printed text under ``_exit``, ``_stdout``, ``_stderr``.
    ``env`` adds environment variables."""
    env = {**os.environ, **(env or {}), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "graders.cli", str(submission), "--out", str(out), *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout,
    )
    score_path = out / "score.json"
    score = json.loads(score_path.read_text()) if score_path.exists() else {}
    score["_exit"] = proc.returncode
    score["_stdout"] = proc.stdout
    score["_stderr"] = proc.stderr
    return score


def wait_for_grading(pid: int, submission: Path, timeout: float) -> int:
    """The wait status of the forked grading ``pid``; killed past ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise TimeoutError(f"grading {submission} took over {timeout} s")
        time.sleep(0.05)


def grade_forked(submission: Path, out: Path, *args: str, timeout: float = 600) -> dict[str, Any]:
    """Like ``grade``, but in a fork of this process, which has torch, pytest and the grader
    imported already: the many gradings of known-wrong variants skip ~3 s of start-up
    each. The command line itself is tested with ``grade``."""
    import torch  # noqa: F401 - imported before forking, once

    import graders.cli

    out.mkdir(parents=True, exist_ok=True)
    log = out / "grader.log"
    pid = os.fork()
    if pid == 0:  # the child: grade, then leave without running any of pytest's teardown
        code = 99
        try:
            sys.stdout = sys.stderr = open(log, "w")
            code = graders.cli.main([str(submission), "--out", str(out), *args])
        except BaseException:  # noqa: BLE001 - reported through the log and the exit code
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            os._exit(code)
    status = wait_for_grading(pid, submission, timeout)
    score_path = out / "score.json"
    score = json.loads(score_path.read_text()) if score_path.exists() else {}
    score["_exit"] = os.waitstatus_to_exitcode(status)
    score["_stdout"] = score["_stderr"] = log.read_text() if log.exists() else ""
    return score


def task_scores(score: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """{task id: (score, max_score)}."""
    return {t["id"]: (t["score"], t["max_score"]) for t in score["tasks"]}


def statuses(score: dict[str, Any]) -> list[str]:
    return [test["status"] for t in score["tasks"] for test in t["tests"]]


@pytest.fixture(scope="session")
def reference_score(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return grade(REFERENCE, tmp_path_factory.mktemp("reference"))


@pytest.fixture(scope="session")
def template_score(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return grade(TEMPLATE, tmp_path_factory.mktemp("template"))
