"""pytest's JSON report (the format of the pytest-json-report plugin, 1.5), written from the
grading's own verdicts, so that CI dashboards and tools that read that report take a
grading as it is.

The grader runs pytest with its own plugin and no others (student-facing verdicts are the
grader's, not pytest's: a test stopped by its budget is a timeout, a stub is
not_implemented), so the report is built from the score rather than by the plugin: the
same top-level keys (``created``, ``duration``, ``exitcode``, ``root``, ``environment``,
``summary``, ``collectors``, ``tests``), the same per-test keys (``nodeid``, ``lineno``,
``outcome``, ``keywords``, ``setup``, ``call``, ``teardown``; a failing call has
``crash``, ``traceback``, ``longrepr`` and what the code printed as ``stdout``) and
pytest's outcomes (``passed`` or ``failed``). What pytest's report has no place for goes
in each test's ``metadata`` (the plugin's own extension point): the task, the grader's
status, and the points. No seed: the report may be shown to the student.
"""

from __future__ import annotations

import time
from typing import Any

from .gradescope import GRID, grid_shares
from .score import Score

PYTEST_REPORT = "pytest_report.json"
SUITES_ROOT = "graders/suites"


def _phase(duration: float = 0.0, outcome: str = "passed") -> dict[str, Any]:
    return {"duration": duration, "outcome": outcome}


def pytest_json_report(score: Score) -> dict[str, Any]:
    tests = []
    counts: dict[str, int] = {}
    for task_score in score.tasks:
        task = task_score.task
        shares = grid_shares(task.points, len(task_score.tests))
        for result, share in zip(task_score.tests, shares, strict=True):
            outcome = "passed" if result.status == "passed" else "failed"
            counts[outcome] = counts.get(outcome, 0) + 1
            nodeid = result.nodeid or f"{task.id}::{result.name}"
            call = _phase(result.duration, outcome)
            if outcome == "failed":
                first = (result.message or result.status).splitlines()[0] if (
                    result.message or result.status) else ""
                path = nodeid.split("::")[0]
                call.update(crash={"path": path, "lineno": 0, "message": first},
                            traceback=[{"path": path, "lineno": 0, "message": result.status}],
                            longrepr=f"[{result.status}] {result.message}".strip())
            if result.output:
                call["stdout"] = result.output
            tests.append({
                "nodeid": nodeid,
                "lineno": 0,
                "outcome": outcome,
                "keywords": [result.name, nodeid.split("::")[0].rsplit("/", 1)[-1],
                             f"task_{task.id}", ""],
                "setup": _phase(),
                "call": call,
                "teardown": _phase(),
                "metadata": {"task": task.id, "task_title": task.title,
                             "status": result.status, "visibility": task.visibility,
                             "score": share / GRID if outcome == "passed" else 0.0,
                             "max_score": share / GRID},
            })
    total = len(tests)
    summary: dict[str, int] = {k: counts[k] for k in ("passed", "failed") if counts.get(k)}
    summary.update(total=total, collected=total)
    environment = {"Python": score.environment.get("python", ""),
                   "Platform": score.environment.get("platform", ""),
                   "Packages": {k: v for k, v in score.environment.items()
                                if k not in ("python", "platform")}}
    if score.error:
        exitcode = 3  # pytest's INTERNAL_ERROR: the grading could not run
    elif counts.get("failed"):
        exitcode = 1
    else:
        exitcode = 0 if total else 5  # 5: no tests collected
    report = {
        "created": time.time(),
        "duration": round(score.duration, 3),
        "exitcode": exitcode,
        "root": SUITES_ROOT,
        "environment": environment,
        "summary": summary,
        "collectors": [],
        "tests": tests,
    }
    if score.error:
        report["warnings"] = [{"message": score.error, "category": "GradingError",
                               "when": "collect", "filename": "", "lineno": 0}]
    return report
