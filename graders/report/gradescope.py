"""Gradescope's ``results.json`` (the autograder specification's format).

Each test's ``max_score`` lies on a grid of 1/``GRID`` points: a task's points split evenly
over its tests, rounded down to the grid, the remainder spread over its first tests.
Sums of grid values are exact in floating point, so the maxima add up to the task's
points, and the tasks' to the assignment's, exactly (605, not 604.998); the top-level
``score`` is the sum of the tests' scores, so Gradescope's total and its tests agree.
"""

from __future__ import annotations

from typing import Any

from .score import Score

# Gradescope test statuses are "passed" or "failed"; the detail goes in the output
GRID = 1024  # a power of two: every multiple of 1/GRID below 2**43 is exact in a float

_MARK = {"passed": "passed", "failed": "failed", "error": "failed", "timeout": "failed",
         "not_implemented": "failed"}


def results_json(score: Score) -> dict[str, Any]:
    """Gradescope's results.json for ``score``: one test per grader test, with its task's
    visibility; the summary (always visible) names visible tasks only."""
    tests = []
    units = 0  # the score, in 1/GRID points
    for task_score in score.tasks:
        shares = grid_shares(task_score.task.points, len(task_score.tests))
        for result, share in zip(task_score.tests, shares, strict=True):
            output = result.description
            if result.status != "passed":
                output = f"[{result.status}] {result.message}".strip()
                if result.output:
                    output += f"\n--- your code printed ---\n{result.output}"
            tests.append({
                "name": f"{task_score.task.id} {task_score.task.title}: {result.name}",
                "number": task_score.task.id,
                "score": share / GRID if result.status == "passed" else 0.0,
                "max_score": share / GRID,
                "status": _MARK[result.status],
                "output": output,
                "visibility": task_score.task.visibility,
            })
            units += share if result.status == "passed" else 0
    summary = _summary(score, units / GRID)
    return {
        "score": units / GRID,
        "execution_time": round(score.duration),
        "output": summary,
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }


def grid_shares(points: float, count: int) -> list[int]:
    """``count`` test maxima in 1/GRID points that add up to ``points`` exactly (points
    rounded to the grid first): equal shares rounded down, the remainder spread one grid
    step each over the first tests (shares differ by at most 1/GRID)."""
    if count <= 0:
        return []
    each, extra = divmod(round(points * GRID), count)
    return [each + 1] * extra + [each] * (count - extra)


def _summary(score: Score, total: float) -> str:
    """The always-visible text: the scores of the visible tasks only. Tasks with any other
    visibility are not named (their tests carry their own visibility)."""
    visible = [t for t in score.tasks if t.task.visibility == "visible"]
    lines = [f"task {t.task.id} {t.task.title}: {t.score:g} / {t.task.points:g}" for t in visible]
    if visible and len(visible) == len(score.tasks):
        # the total only where every task is visible: a hidden task's points stay unnamed
        lines.append(f"total: {round(total, 4):g} / {score.max_score:g}")
    if score.error:
        lines.insert(0, f"Grading failed: {score.error}")
    return "\n".join(lines)
