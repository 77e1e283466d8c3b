"""The table printed for people."""

from __future__ import annotations

from .score import Score

_SYMBOL = {"passed": "ok", "failed": "FAIL", "error": "ERROR", "timeout": "TIMEOUT",
           "not_implemented": "todo"}


def render(score: Score, verbose: bool = False) -> str:
    lines = []
    if score.error:
        lines.append(f"grading failed: {score.error}")
    width = max([len(t.task.title) for t in score.tasks] + [10])
    lines.append(f"{'task':<6} {'title':<{width}} {'passed':>8} {'score':>13}")
    for t in score.tasks:
        lines.append(f"{t.task.id:<6} {t.task.title:<{width}} {t.passed:>3}/{len(t.tests):<4} "
                     f"{t.score:>6.2f} / {t.task.points:<5g}")
    lines.append(f"{'':<6} {'total':<{width}} {'':>8} {score.score:>6.2f} / {score.max_score:<5g}")
    problems = [(t.task, r) for t in score.tasks for r in t.tests if r.status != "passed"]
    shown = problems if verbose else _first_per_task(problems)
    if shown:
        lines.append("")
        for task, r in shown:
            lines.append(f"[{_SYMBOL[r.status]}] {task.id} {r.name}: {r.description}")
            if r.message:
                lines.extend("    " + line for line in r.message.splitlines()[:40])
        hidden = len(problems) - len(shown)
        if hidden:
            lines.append(f"({hidden} more; see score.json or run with --verbose)")
    return "\n".join(lines)


def _first_per_task(problems: list) -> list:
    seen, out = set(), []
    for task, r in problems:
        if task.id not in seen:
            seen.add(task.id)
            out.append((task, r))
    return out
