"""The hand-back folder: ``handback/<submission>/``, one folder per submission holding only
what its student may see, to zip and return (or upload) as it is.

Each folder holds ``feedback.html`` (a page on its own: it links nowhere, not to the class
report, not to the grader's files), ``scores.json`` (the same numbers for a script) and
``reproducers/`` (each reproducer a failing test printed, as a script the student runs
with their package on ``PYTHONPATH``). The scores are the final ones: the raw points, the
late penalty and any adjustment, then the final points. Nothing of the class (other
students, the similarity check, the report) and nothing of the grading's secrets: no
seed, no grader versions or options, not the grader's printed log. Tasks that are
``hidden`` in the rubric show their score only, never their tests. When nothing could be
graded (no package, an import that failed or hung) the page says so once, instead of
repeating the same message for every test; failing tests with one message share one box.
"""

from __future__ import annotations

import json
import re
import shutil
from html import escape
from pathlib import Path
from typing import Any

from ..rubric import Task
from .gradebook import STATUS_LABELS, Row

HANDBACK = "handback"
_BLOCK = re.compile(r"^  reproduce:\n((?:(?:    .*)?\n?)+)", re.M)
_SYMBOL = {"passed": "ok", "failed": "FAILED", "error": "ERROR", "timeout": "TIMEOUT",
           "not_implemented": "not implemented"}
CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;max-width:960px;
padding:0 1em;color:#1d1d1f}
table{border-collapse:collapse;margin:.6em 0;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid #e4e4e4;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f5f5f7}td.n,th.n{text-align:right}.bad{color:#b8433a;font-weight:600}
.muted{color:#777}pre{background:#f7f7f9;padding:.6em;overflow:auto;max-height:24em;
font-size:12px;white-space:pre-wrap;overflow-wrap:anywhere}
"""


def _num(value: float) -> str:
    return f"{value:.4f}".rstrip("0").rstrip(".")


def reproducers(message: str) -> list[str]:
    """The code of each ``reproduce:`` block in a test's message."""
    return ["\n".join(line[4:] for line in m.group(1).splitlines()).strip()
            for m in _BLOCK.finditer(message)]


def scores(row: Row, tasks: tuple[Task, ...]) -> dict[str, Any]:
    """What the student may know of their grade, as data."""
    by_id = {t["id"]: t for t in (row.score or {}).get("tasks", [])}
    data: dict[str, Any] = {
        "submission": row.name,
        "students": list(row.entry.names),
        "status": "graded" if row.status == "graded" else STATUS_LABELS.get(row.status, row.status),
        "reason": row.reason if row.status != "graded" else "",
        "tasks": [{"id": t.id, "title": t.title, "points": row.task_points[t.id],
                   "max_points": t.points,
                   **({"passed": by_id[t.id]["passed"], "tests": by_id[t.id]["total"]}
                      if t.id in by_id and row.status == "graded" else {})}
                  for t in tasks],
        "raw_points": row.total,
        "max_points": round(sum(t.points for t in tasks), 4),
        "final_points": row.final,
    }
    if row.deadline is not None:
        data.update(deadline=row.deadline.isoformat(),
                    submitted_at=row.entry.submitted_at.isoformat()
                    if row.entry.submitted_at else None,
                    days_late=row.days_late, penalty_percent=row.penalty_percent,
                    penalty_points=row.penalty_points)
    if row.adjustment is not None:
        data["adjustment"] = row.adjustment.describe()
    return data


def write(folder: Path, row: Row, tasks: tuple[Task, ...], students: list[str] | None = None
          ) -> None:
    """(Re)write ``folder`` for ``row`` (made by ``students``, the names a roster gives):
    nothing of an earlier hand-back stays."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    data = scores(row, tasks)
    if students:
        data["students"] = students
    visible = {t.id for t in tasks if t.visibility != "hidden"}
    failures: dict[str, list[tuple[str, str]]] = {}  # message -> [(task, test)]
    statuses: dict[str, str] = {}
    descriptions: dict[tuple[str, str], str] = {}
    if row.status == "graded":
        for task_id, test in row.tests():
            if task_id not in visible or test["status"] == "passed":
                continue
            message = test.get("message") or ""
            if test["status"] == "not_implemented":  # one stub, however it was reached
                first = message.splitlines()[0] if message else ""
                message = next((m for m in failures if m.splitlines()[:1] == [first]
                                and statuses.get(m) == "not_implemented"), message)
            failures.setdefault(message, []).append((task_id, test["name"]))
            statuses.setdefault(message, test["status"])
            descriptions[(task_id, test["name"])] = test.get("description", "")
    scripts: dict[str, str] = {}  # code -> file name
    for message, tests in failures.items():
        for code in reproducers(message):
            if code not in scripts:
                task_id, name = tests[0]
                scripts[code] = f"{task_id}-{re.sub(r'[^A-Za-z0-9_.-]+', '_', name)[:60]}" \
                                f"-{len(scripts) + 1}.py"
    if scripts:
        (folder / "reproducers").mkdir()
        for code, name in scripts.items():
            (folder / "reproducers" / name).write_text(
                "# a failing case of the autograder: run it with your tinytrain on the path,\n"
                "#   PYTHONPATH=<the folder holding tinytrain/> python " + name + "\n"
                + code + "\n")
    (folder / "scores.json").write_text(json.dumps(data, indent=2) + "\n")
    (folder / "feedback.html").write_text(_page(row, data, tasks, failures, statuses,
                                                descriptions, scripts), encoding="utf-8")


def _page(row: Row, data: dict[str, Any], tasks: tuple[Task, ...],
          failures: dict[str, list[tuple[str, str]]], statuses: dict[str, str],
          descriptions: dict[tuple[str, str], str], scripts: dict[str, str]) -> str:
    display = ", ".join(data["students"]) or row.entry.display
    title = f"Feedback: {display}"
    parts = [f"<h1>{escape(display)}</h1>"]
    if display != row.name:
        parts.append(f"<p class='muted'>submission {escape(row.name)}</p>")
    if row.status != "graded":
        parts.append(f"<p class='bad'>Not graded: {escape(data['status'])}.</p>"
                     f"<pre>{escape(row.reason)}</pre><p>No test could run, so every task "
                     "scores 0. Fix this first (run <code>tinytrain-grade .</code> where your "
                     "<code>tinytrain/</code> folder is), then submit again.</p>")
    lines = [("raw points", f"{_num(data['raw_points'])} / {_num(data['max_points'])}")]
    if "days_late" in data:
        late = data["days_late"]
        lines.append(("submitted", data["submitted_at"] or "unknown (no penalty applied)"))
        lines.append(("deadline", data["deadline"]))
        if late:
            lines.append(("late penalty", f"{late} day(s) late: -{_num(data['penalty_points'])}"
                                          f" ({data['penalty_percent']:g}%)"))
        else:
            lines.append(("late penalty", "none"))
    if "adjustment" in data:
        lines.append(("adjustment", data["adjustment"]))
    lines.append(("final points", f"{_num(data['final_points'])} / {_num(data['max_points'])}"))
    parts.append("<table>" + "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>"
                                     for k, v in lines) + "</table>")
    parts.append("<table><tr><th>task</th><th>title</th><th class='n'>tests passed</th>"
                 "<th class='n'>points</th></tr>")
    for task in data["tasks"]:
        passed = f"{task['passed']}/{task['tests']}" if "tests" in task else "-"
        parts.append(f"<tr><td>{escape(task['id'])}</td><td>{escape(task['title'])}</td>"
                     f"<td class='n'>{passed}</td><td class='n'>{_num(task['points'])} / "
                     f"{_num(task['max_points'])}</td></tr>")
    parts.append("</table>")
    hidden = [t.id for t in tasks if t.visibility == "hidden"]
    if hidden:
        parts.append(f"<p class='muted'>Tasks {', '.join(hidden)} are graded by hidden tests: "
                     "their points are shown, their tests are not.</p>")
    if failures:
        parts.append("<h2>What failed</h2>")
    for message, tests in failures.items():
        status = _SYMBOL.get(statuses[message], statuses[message])
        names = ", ".join(f"{t} <code>{escape(n)}</code>" for t, n in tests[:8])
        if len(tests) > 8:
            names += f" and {len(tests) - 8} more"
        parts.append(f"<h3>[{escape(status)}] {names}</h3>")
        if len(tests) == 1 and descriptions.get(tests[0]):
            parts.append(f"<p>{escape(descriptions[tests[0]])}</p>")
        elif len(tests) > 1:
            parts.append(f"<p class='muted'>{len(tests)} tests failed with this message.</p>")
        if message:
            parts.append(f"<pre>{escape(message)}</pre>")
        files = [scripts[c] for c in reproducers(message)]
        if files:
            parts.append("<p>Reproducer: " + ", ".join(
                f"<a href='reproducers/{escape(f)}'>{escape(f)}</a>" for f in files) + "</p>")
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{CSS}</style></head>"
            f"<body>\n" + "\n".join(parts) + "\n</body></html>\n")
