"""The score model and the native ``score.json`` (see ``graders/schema/score.schema.json``)."""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from .. import __version__
from ..rubric import Task
from ..runner.results import TestResult

SCHEMA_VERSION = 1


@dataclass
class TaskScore:
    task: Task
    tests: list[TestResult]

    @property
    def passed(self) -> int:
        return sum(t.status == "passed" for t in self.tests)

    @property
    def score(self) -> float:
        if not self.tests:
            return 0.0
        return round(self.task.points * self.passed / len(self.tests), 4)

    def test_points(self) -> float:
        """Points one test of this task is worth."""
        return self.task.points / len(self.tests) if self.tests else 0.0


@dataclass
class Score:
    submission: str
    tasks: list[TaskScore]
    seed: int
    profile: str
    sandbox: bool
    error: str | None = None
    duration: float = 0.0
    environment: dict[str, str] = field(default_factory=dict)

    @property
    def score(self) -> float:
        return round(sum(t.score for t in self.tasks), 4)

    @property
    def max_score(self) -> float:
        return round(sum(t.task.points for t in self.tasks), 4)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "grader_version": __version__,
            "submission": self.submission,
            "status": "error" if self.error else "graded",
            "error": self.error,
            "score": self.score,
            "max_score": self.max_score,
            "seed": self.seed,
            "profile": self.profile,
            "sandbox": self.sandbox,
            "duration": round(self.duration, 3),
            "environment": self.environment,
            "tasks": [
                {
                    "id": t.task.id,
                    "title": t.task.title,
                    "score": t.score,
                    "max_score": t.task.points,
                    "visibility": t.task.visibility,
                    "passed": t.passed,
                    "total": len(t.tests),
                    "tests": [
                        {
                            "name": r.name,
                            "description": r.description,
                            "status": r.status,
                            "message": r.message,
                            "output": r.output,
                            "duration": r.duration,
                        }
                        for r in t.tests
                    ],
                }
                for t in self.tasks
            ],
        }


def environment() -> dict[str, str]:
    """Versions that determine the expected values (torch is the oracle)."""
    env = {"python": platform.python_version(), "platform": sys.platform}
    for package in ("numpy", "torch", "hypothesis", "pytest"):
        try:
            env[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            env[package] = "missing"
    return env


def build_score(submission: str, tasks: tuple[Task, ...], results: list[TestResult], *,
                seed: int, profile: str, sandbox: bool, duration: float) -> Score:
    by_task = {t.id: TaskScore(t, []) for t in tasks}
    for result in results:
        by_task[result.task].tests.append(result)
    return Score(submission, list(by_task.values()), seed, profile, sandbox,
                 duration=duration, environment=environment())


def error_score(submission: str, tasks: tuple[Task, ...], message: str, *, seed: int,
                profile: str, sandbox: bool) -> Score:
    """Zero points with a top-level error: grading could not run at all."""
    return Score(submission, [TaskScore(t, []) for t in tasks], seed, profile, sandbox,
                 error=message, environment=environment())
