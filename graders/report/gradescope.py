"""Gradescope's ``results.json`` (the autograder specification's format)."""

from __future__ import annotations

from typing import Any

from .score import Score

# Gradescope test statuses are "passed" or "failed"; the detail goes in the output
_MARK = {"passed": "passed", "failed": "failed", "error": "failed", "timeout": "failed",
         "not_implemented": "failed"}


def results_json(score: Score) -> dict[str, Any]:
    """Gradescope's results.json for ``score``: one test per grader test, with its task's
    visibility; the summary (always visible) names visible tasks only."""
    tests = []
    for task_score in score.tasks:
        each = task_score.test_points()
        for result in task_score.tests:
            output = result.description
            if result.status != "passed":
                output = f"[{result.status}] {result.message}".strip()
                if result.output:
                    output += f"\n--- your code printed ---\n{result.output}"
            tests.append({
                "name": f"{task_score.task.id} {task_score.task.title}: {result.name}",
                "number": task_score.task.id,
                "score": round(each if result.status == "passed" else 0.0, 4),
                "max_score": round(each, 4),
                "status": _MARK[result.status],
                "output": output,
                "visibility": task_score.task.visibility,
            })
    summary = _summary(score)
    return {
        "score": score.score,
        "execution_time": round(score.duration),
        "output": summary,
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }


def _summary(score: Score) -> str:
    """The always-visible text: the scores of the visible tasks only. Tasks with any other
    visibility are not named (their tests carry their own visibility)."""
    visible = [t for t in score.tasks if t.task.visibility == "visible"]
    lines = [f"task {t.task.id} {t.task.title}: {t.score:g} / {t.task.points:g}" for t in visible]
    if score.error:
        lines.insert(0, f"Grading failed: {score.error}")
    return "\n".join(lines)
