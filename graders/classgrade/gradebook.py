"""The gradebook: one row per submission, written as ``grades.csv`` in otter-grader's layout.

``grades.csv``: a first row ``points-per-question`` with each task's points, then one row
per submission: ``file`` (the submission's name), one column per task (its points),
``total_points_earned``, ``percent_correct`` (a fraction, as otter writes it) and
``grading_status`` (``Completed``, or why the submission could not be graded: ``no
package``, ``did not import``, ``import timed out``, ``error``, ``crashed``, ``timeout``,
each with its reason). With a
deadline, ``submitted_at``, ``days_late``, ``penalty_percent``, ``penalty_points`` and
``final_points`` follow (the raw score is ``total_points_earned``); where the export names
the students, ``name``, ``sid`` and ``email`` close the row.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..rubric import Task
from .collect import Entry
from .late import Adjustment, LatePolicy

POINTS_ROW = "points-per-question"
COMPLETED = "Completed"
# statuses besides graded: the submission's own (no package, import) and the grading's
STATUS_LABELS = {"no_package": "no package", "import_error": "did not import",
                 "import_timeout": "import timed out", "error": "error", "crashed": "crashed",
                 "timeout": "timeout"}
IMPORT_FAILED = "the submission could not be imported"  # graders.harness's message
IMPORT_STEP = "import tinytrain: "  # a probe call's "what" when the import hung or crashed


def import_failure(score: dict[str, Any] | None) -> tuple[str, str] | None:
    """(status, the message) when no test ran because ``import tinytrain`` failed: every
    test ended with the one remembered import failure. None otherwise."""
    tests = [test for task in (score or {}).get("tasks", []) for test in task.get("tests", [])]
    if not tests or any(t.get("status") == "passed" for t in tests):
        return None
    messages = {(t.get("message") or "").split("\n")[0] for t in tests}
    if len(messages) != 1:
        return None
    message = messages.pop()
    if message.startswith(IMPORT_FAILED):
        return "import_error", message
    if message.startswith(IMPORT_STEP):
        status = "import_timeout" if all(t["status"] == "timeout" for t in tests) else "import_error"
        return status, message
    return None


@dataclass
class Row:
    entry: Entry
    status: str  # graded / error / crashed / timeout
    reason: str
    duration: float
    score: dict[str, Any] | None  # score.json, when the grader wrote one
    host: str = ""
    reused: bool = False
    task_points: dict[str, float] = field(default_factory=dict)
    total: float = 0.0
    days_late: int | None = None
    penalty_percent: float = 0.0
    adjustment: Adjustment | None = None
    deadline: datetime | None = None  # this submission's own (an extension moves it)

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def grading_status(self) -> str:
        if self.status == "graded":
            return COMPLETED
        return f"{STATUS_LABELS.get(self.status, self.status)}: {self.reason}"

    @property
    def penalty_points(self) -> float:
        return round(self.total * self.penalty_percent / 100, 4)

    @property
    def final(self) -> float:
        if self.adjustment is not None and self.adjustment.override_points is not None:
            return self.adjustment.override_points
        return round(self.total - self.penalty_points, 4)

    def tests(self) -> list[tuple[str, dict[str, Any]]]:
        """(task id, test) for every test in score.json."""
        if not self.score:
            return []
        return [(t["id"], test) for t in self.score.get("tasks", []) for test in t.get("tests", [])]

    def test_problems(self) -> dict[str, int]:
        """How many tests ended in error or timeout (the submission crashed or hung there)."""
        counts: dict[str, int] = {}
        for _, test in self.tests():
            if test["status"] in ("error", "timeout"):
                counts[test["status"]] = counts.get(test["status"], 0) + 1
        return counts


def make_row(entry: Entry, state: dict[str, Any], score: dict[str, Any] | None,
             tasks: tuple[Task, ...], policy: LatePolicy | None,
             adjustment: Adjustment | None = None) -> Row:
    """A submission's row: its task points, and with a policy its lateness (against its
    own deadline where ``adjustment`` extends it; an override sets the final points)."""
    row = Row(entry=entry, status=state["status"], reason=state.get("reason", ""),
              duration=float(state.get("duration", 0.0)), score=score,
              host=state.get("host", ""), reused=bool(state.get("reused")))
    if row.status == "graded" and (failed := import_failure(score)):
        row.status, row.reason = failed
    by_id = {t["id"]: t for t in (score or {}).get("tasks", [])}
    for task in tasks:
        got = by_id.get(task.id)
        row.task_points[task.id] = float(got["score"]) if got and row.status == "graded" else 0.0
    row.total = round(sum(row.task_points.values()), 4)
    row.adjustment = adjustment
    if policy is not None:
        own = adjustment.policy_for(policy) if adjustment else policy
        row.deadline = own.deadline
        row.days_late = own.days_late(entry.submitted_at)
        row.penalty_percent = own.penalty_percent(row.days_late)
    return row


def _num(value: float) -> str:
    return f"{value:g}" if value == int(value) else f"{round(value, 4)}"


def grades_csv(rows: list[Row], tasks: tuple[Task, ...], policy: LatePolicy | None) -> str:
    identity = any(r.entry.names or r.entry.sids or r.entry.emails for r in rows)
    adjusted = any(r.adjustment is not None for r in rows)
    late = policy is not None or adjusted
    header = ["file", *(t.id for t in tasks), "total_points_earned", "percent_correct",
              "grading_status"]
    if late:
        header += ["submitted_at", "days_late", "penalty_percent", "penalty_points",
                   "final_points"]
    if adjusted:
        header += ["adjustment"]
    if identity:
        header += ["name", "sid", "email"]
    max_total = round(sum(t.points for t in tasks), 4)
    points = [POINTS_ROW, *(_num(t.points) for t in tasks), _num(max_total), "1", "--"]
    if late:
        points += ["--", "--", "--", "--", _num(max_total)]
    if adjusted:
        points += ["--"]
    if identity:
        points += ["", "", ""]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerow(points)
    for row in sorted(rows, key=lambda r: r.name):
        percent = round(row.total / max_total, 4) if max_total else 0.0
        line = [row.name, *(_num(row.task_points[t.id]) for t in tasks), _num(row.total),
                _num(percent), row.grading_status]
        if late:
            when = row.entry.submitted_at
            line += [_iso(when), "" if row.days_late is None else str(row.days_late),
                     _num(row.penalty_percent), _num(row.penalty_points), _num(row.final)]
        if adjusted:
            line += [row.adjustment.describe() if row.adjustment else ""]
        if identity:
            line += ["; ".join(row.entry.names), "; ".join(row.entry.sids),
                     "; ".join(row.entry.emails)]
        writer.writerow(line)
    return buffer.getvalue()


def _iso(value: datetime | None) -> str:
    return value.isoformat() if value else ""


def load_score(folder: Path) -> dict[str, Any] | None:
    path = folder / "score.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
