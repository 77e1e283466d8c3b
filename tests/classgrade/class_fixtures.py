"""The small generated class, graded once per test run by ``tinytrain-grade-class``, shared
by the class tests (under pytest-xdist too: the first worker grades it, the others wait
for it on a file lock and read the same report)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from filelock import FileLock

from ..conftest import ROOT
from .class_builder import build, small_class

TASKS = "1.1"


def grade_class(submissions: Path, out: Path, *args: str, env: dict[str, str] | None = None,
                timeout: float = 900) -> subprocess.CompletedProcess:
    """Run the real command line (as ``python -m graders.classgrade.cli``)."""
    full_env = {**os.environ, **(env or {}), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "graders.classgrade.cli", str(submissions), "--out", str(out),
         *args], cwd=ROOT, env=full_env, capture_output=True, text=True, timeout=timeout)


@dataclass(frozen=True)
class GradedClass:
    submissions: Path
    report: Path
    stdout: str
    stderr: str
    returncode: int

    def grades(self) -> list[dict[str, str]]:
        import csv

        with open(self.report / "grades.csv", newline="") as handle:
            return list(csv.DictReader(handle))


@pytest.fixture(scope="session")
def graded_class(tmp_path_factory: pytest.TempPathFactory) -> GradedClass:
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = shared / "graded-class"
    with FileLock(str(shared / "graded-class.lock")):
        result_file = folder / "result.json"
        if not result_file.exists():
            submissions = build(folder / "class", small_class())
            proc = grade_class(submissions, folder / "report", "--tasks", TASKS, "--no-shrink",
                               "--jobs", "2")
            result_file.write_text(json.dumps({"stdout": proc.stdout, "stderr": proc.stderr,
                                               "returncode": proc.returncode}))
        result = json.loads(result_file.read_text())
    return GradedClass(folder / "class", folder / "report", result["stdout"], result["stderr"],
                       result["returncode"])
