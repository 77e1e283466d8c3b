"""GitHub Classroom's runner result (what autograding-grading-reporter reads, base64-encoded,
from ``<RUNNER>_RESULTS``)."""

from __future__ import annotations

from typing import Any

from .score import Score


def classroom_json(score: Score) -> dict[str, Any]:
    tests = []
    for task_score in score.tasks:
        each = task_score.test_points()
        for result in task_score.tests:
            passed = result.status == "passed"
            tests.append({
                "name": f"{task_score.task.id} {result.name}",
                "status": "pass" if passed else ("error" if result.status == "error" else "fail"),
                "message": "" if passed else f"[{result.status}] {result.message}"[:2000],
                "execution_time": f"{result.duration:.2f}s",
                "score": round(each if passed else 0.0, 4),
            })
    if score.error:
        status = "error"
    else:
        status = "pass" if all(t["status"] == "pass" for t in tests) else "fail"
    return {"version": 1, "status": status, "max_score": score.max_score, "tests": tests}
