"""Shared fixtures: grading a folder with the real command line, in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "reference"
TEMPLATE = ROOT / "student_template"


def grade(submission: Path, out: Path, *args: str, timeout: float = 600) -> dict[str, Any]:
    """Run ``tinytrain-grade`` (as ``python -m graders.cli``) and return score.json,
    with the exit code and printed text under ``_exit``, ``_stdout``, ``_stderr``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
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
