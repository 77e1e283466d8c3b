"""``history.jsonl``: every grading of every submission, one JSON object a line, appended
and never rewritten, so that a regrade never overwrites a grade silently.

Each line: ``submission``, ``graded_at`` (UTC), ``content_hash`` (the SHA-256 of the
graded files, as the resume check computes it), ``status`` (graded, no_package,
import_error, import_timeout, error, crashed, timeout), ``reason``, ``score`` and
``max_score`` (the raw points of score.json; null when none was written), ``duration``
and ``options_key`` (a hash of the tasks, profile, seed, grader version and rubric: a
different key is a grading under other options). The seed itself is not written.
The class report lists the submissions whose latest grading changed their score or status.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .gradebook import import_failure


def append(path: Path, name: str, state: dict[str, Any], score: dict[str, Any] | None) -> None:
    status = state.get("status")
    if status == "graded" and (failed := import_failure(score)):
        status = failed[0]
    line = {"submission": name, "graded_at": state.get("graded_at"),
            "content_hash": state.get("content_hash"), "status": status,
            "reason": state.get("reason") or "",
            "score": score.get("score") if score else None,
            "max_score": score.get("max_score") if score else None,
            "duration": state.get("duration"), "options_key": state.get("options_key")}
    data = (json.dumps(line, sort_keys=True) + "\n").encode()
    # one write of a whole line on a file opened for appending: lines never interleave
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def read(path: Path) -> list[dict[str, Any]]:
    """The gradings in the order they were made (a torn last line is skipped)."""
    records = []
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and "submission" in record:
            records.append(record)
    return records


def changes(records: list[dict[str, Any]], names: set[str]) -> list[dict[str, Any]]:
    """For each submission in ``names`` graded more than once whose latest grading differs
    from the one before in score or status: both gradings, latest first in the list of
    the submission's gradings (``count``)."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        if record["submission"] in names:
            by_name.setdefault(record["submission"], []).append(record)
    found = []
    for name, gradings in sorted(by_name.items()):
        if len(gradings) < 2:
            continue
        before, now = gradings[-2], gradings[-1]
        if (before.get("score"), before.get("status")) != (now.get("score"), now.get("status")):
            found.append({"submission": name, "before": before, "now": now,
                          "count": len(gradings)})
    return found
