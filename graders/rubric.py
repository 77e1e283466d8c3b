"""The rubric: assignments, tasks, points and limits, read from ``rubric.toml``."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

RUBRIC_PATH = Path(__file__).with_name("rubric.toml")
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
_TASK_ID = re.compile(r"^\d+\.\d+$")


@dataclass(frozen=True)
class Task:
    id: str
    title: str
    points: float
    visibility: str = "visible"
    # an integration task's tests run the whole stack (the GPT, end-to-end training): a
    # bug in another task may cost points there too (tests/suites/test_mutants.py allows it)
    integration: bool = False

    @property
    def assignment(self) -> str:
        return self.id.split(".")[0]


@dataclass(frozen=True)
class Limits:
    call_timeout_s: float = 5.0
    test_budget_s: float = 60.0
    start_timeout_s: float = 30.0
    grading_budget_s: float = 540.0
    memory_mb: int = 4096
    file_mb: int = 256
    nproc: int = 256
    nofile: int = 1024


@dataclass(frozen=True)
class Rubric:
    tasks: tuple[Task, ...]
    assignments: dict[str, str] = field(default_factory=dict)
    limits: Limits = Limits()

    def task(self, task_id: str) -> Task:
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise KeyError(task_id)

    def select(self, spec: str | None) -> tuple[Task, ...]:
        """Tasks named by ``spec``: "1.2,1.3", an assignment "2" (all its tasks), or all."""
        if not spec:
            return self.tasks
        wanted = [s.strip() for s in spec.split(",") if s.strip()]
        chosen = []
        for item in wanted:
            matches = [t for t in self.tasks if t.id == item or t.assignment == item]
            if not matches:
                known = ", ".join(t.id for t in self.tasks)
                raise ValueError(f"unknown task {item!r} (known tasks: {known})")
            chosen.extend(m for m in matches if m not in chosen)
        return tuple(t for t in self.tasks if t in chosen)


def load(path: Path = RUBRIC_PATH) -> Rubric:
    """Read and validate the rubric."""
    data = tomllib.loads(path.read_text())
    assignments = {str(a["id"]): a["title"] for a in data.get("assignments", [])}
    tasks = []
    for raw in data.get("tasks", []):
        task = Task(
            id=str(raw["id"]),
            title=raw["title"],
            points=float(raw["points"]),
            visibility=raw.get("visibility", "visible"),
            integration=bool(raw.get("integration", False)),
        )
        if not _TASK_ID.match(task.id):
            raise ValueError(f"rubric: task id {task.id!r} is not of the form N.M")
        if task.assignment not in assignments:
            raise ValueError(f"rubric: task {task.id} belongs to no listed assignment")
        if task.visibility not in VISIBILITIES:
            raise ValueError(f"rubric: task {task.id} has unknown visibility {task.visibility!r}")
        if task.points <= 0:
            raise ValueError(f"rubric: task {task.id} must be worth points")
        if any(t.id == task.id for t in tasks):
            raise ValueError(f"rubric: task {task.id} is listed twice")
        tasks.append(task)
    limits = Limits(**data.get("limits", {}))
    return Rubric(tasks=tuple(tasks), assignments=assignments, limits=limits)
