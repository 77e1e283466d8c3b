"""The late policy: a deadline, per-student submission times, and the penalty rule.

The rule: a submission made after ``deadline + grace`` is late by the number of *started*
days (24 h each) past the deadline; it loses ``percent_per_day`` percent of its raw points
per late day, at most ``cap_percent`` percent. ``final = raw - penalty``. A submission
whose time is unknown gets no penalty, and the report lists it.

Times are ISO 8601 (``2024-03-01T23:59:00-08:00``; Gradescope's
``2024-03-01 23:59:12.123 -0800`` too). A time without a UTC offset is read as UTC.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

# the columns a submission-times CSV may use: ours, GitHub Classroom's grades CSV
# (gh classroom assignment-grades), and a Gradescope-like one
NAME_COLUMNS = ("submission", "file", "student_repository_name", "github_username", "name")
TIME_COLUMNS = ("submitted_at", "submission_timestamp", "created_at", "submission_time")


@dataclass(frozen=True)
class LatePolicy:
    deadline: datetime
    percent_per_day: float = 10.0
    cap_percent: float = 100.0
    grace: timedelta = timedelta(0)

    def days_late(self, submitted_at: datetime | None) -> int | None:
        """Started days past the deadline (0 when on time), None when the time is unknown."""
        if submitted_at is None:
            return None
        over = (submitted_at - self.deadline).total_seconds()
        if over <= self.grace.total_seconds():
            return 0
        return math.ceil(over / 86400)

    def penalty_percent(self, days_late: int | None) -> float:
        if not days_late:
            return 0.0
        return min(self.cap_percent, self.percent_per_day * days_late)

    def describe(self) -> str:
        grace = f" after a grace period of {_minutes(self.grace)} min" if self.grace else ""
        return (f"deadline {self.deadline.isoformat()}; {self.percent_per_day:g}% of the raw "
                f"points per started day late{grace}, at most {self.cap_percent:g}%")


def _minutes(delta: timedelta) -> str:
    return f"{delta.total_seconds() / 60:g}"


_GRADESCOPE_TIME = re.compile(
    r"^(?P<date>\d{4}-\d{2}-\d{2})[ T](?P<time>\d{2}:\d{2}(:\d{2}(\.\d+)?)?)"
    r"\s*(?P<tz>Z|UTC|[+-]\d{2}:?\d{2})?$")


def parse_datetime(text: str) -> datetime:
    """An aware datetime from ISO 8601 text; naive times are UTC. Raises ValueError."""
    text = text.strip()
    match = _GRADESCOPE_TIME.match(text)
    if match:
        time = match["time"]
        if "." in time:  # Gradescope writes nanoseconds; Python takes microseconds
            head, frac = time.split(".")
            time = f"{head}.{frac[:6]}"
        tz = match["tz"] or ""
        tz = "+00:00" if tz in ("Z", "UTC") else tz
        if tz and ":" not in tz:
            tz = f"{tz[:3]}:{tz[3:]}"
        text = f"{match['date']}T{time}{tz}"
    value = datetime.fromisoformat(text)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def read_times(path: Path) -> dict[str, datetime]:
    """Submission times by entry name from a CSV (see ``NAME_COLUMNS``/``TIME_COLUMNS``)."""
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        fields = [f.strip() for f in reader.fieldnames or []]
        name_col = next((c for c in NAME_COLUMNS if c in fields), None)
        time_col = next((c for c in TIME_COLUMNS if c in fields), None)
        if name_col is None or time_col is None:
            raise ValueError(
                f"{path}: needs a name column ({', '.join(NAME_COLUMNS)}) and a time column "
                f"({', '.join(TIME_COLUMNS)}); it has {', '.join(fields) or 'none'}")
        times = {}
        for line, row in enumerate(reader, start=2):
            row = {k.strip(): (v or "").strip() for k, v in row.items() if k}
            name, when = row.get(name_col, ""), row.get(time_col, "")
            if not name or not when:
                continue
            try:
                times[name] = parse_datetime(when)
            except ValueError as exc:
                raise ValueError(f"{path}:{line}: bad time {when!r} ({exc})") from exc
    return times


# --- per-student adjustments: extensions and overrides ------------------------------------

ADJUSTMENT_COLUMNS = ("submission", "extension_days", "extension_hours", "override_points",
                      "note")


@dataclass(frozen=True)
class Adjustment:
    """One student's exception to the rule: more time (the deadline moves for them), or a
    final score set by hand (an override wins over everything, the penalty included)."""

    extension: timedelta = timedelta(0)
    override_points: float | None = None
    note: str = ""

    def policy_for(self, policy: LatePolicy) -> LatePolicy:
        if not self.extension:
            return policy
        return LatePolicy(policy.deadline + self.extension, policy.percent_per_day,
                          policy.cap_percent, policy.grace)

    def describe(self) -> str:
        parts = []
        if self.extension:
            parts.append(f"extension of {_hours(self.extension)} h")
        if self.override_points is not None:
            parts.append(f"final points set to {self.override_points:g}")
        text = ", ".join(parts)
        return f"{text} ({self.note})" if self.note and text else (text or self.note)


def _hours(delta: timedelta) -> str:
    return f"{delta.total_seconds() / 3600:g}"


def _number(text: str, path: Path, line: int, column: str) -> float | None:
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{path}:{line}: {column} {text!r} is not a number") from None
    if value != value or value < 0:
        raise ValueError(f"{path}:{line}: {column} must not be negative")
    return value


def read_adjustments(path: Path) -> dict[str, Adjustment]:
    """Adjustments by submission name (or a student's name, SID or email) from a CSV with
    the columns ``submission`` and any of ``extension_days``, ``extension_hours``,
    ``override_points``, ``note``."""
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        fields = [f.strip() for f in reader.fieldnames or []]
        if "submission" not in fields:
            raise ValueError(f"{path}: needs a submission column (and any of "
                             f"{', '.join(ADJUSTMENT_COLUMNS[1:])}); it has "
                             f"{', '.join(fields) or 'none'}")
        unknown = [f for f in fields if f not in ADJUSTMENT_COLUMNS]
        if unknown:
            raise ValueError(f"{path}: unknown column(s) {', '.join(unknown)} (known: "
                             f"{', '.join(ADJUSTMENT_COLUMNS)})")
        found: dict[str, Adjustment] = {}
        for line, row in enumerate(reader, start=2):
            row = {k.strip(): (v or "").strip() for k, v in row.items() if k}
            name = row.get("submission", "")
            if not name:
                continue
            if name in found:
                raise ValueError(f"{path}:{line}: a second row for {name!r}")
            days = _number(row.get("extension_days", ""), path, line, "extension_days") or 0.0
            hours = _number(row.get("extension_hours", ""), path, line, "extension_hours") or 0.0
            found[name] = Adjustment(
                timedelta(days=days, hours=hours),
                _number(row.get("override_points", ""), path, line, "override_points"),
                row.get("note", ""))
    return found
