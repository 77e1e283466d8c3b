"""GitHub Classroom's runner result: what ``autograding-grading-reporter`` (v1) reads,
base64-encoded, from the environment variable ``<RUNNER>_RESULTS``.

What the reporter does with it (read from its source at tag v1):
- per test it prints ``name`` (with `` - line {line_no}`` unless ``line_no`` is 0),
  ``test_code`` when present, and for an ``error`` test only ``message``;
- a runner's console total is ``passed entries / entries x max_score``;
- the grade it hands to Classroom is the float sum of every test's ``score`` over
  ``max_score``: a test without a score makes it NaN, an empty list NaN/max.
It reads nothing else (no ``filename``, ``duration`` or ``execution_time``), so nothing
else is written: the full messages stay in score.json.

So that every printed figure is right:
- each task is its own runner (``runners`` lists them; ``python -m graders.report.classroom``
  splits the file for the workflow), so a runner's console total is the task's score;
- a task whose tests all passed, or all failed, is one entry; a partly done task has one
  entry per test, which keeps ``passed / entries`` equal to the task's fraction;
- points are multiples of 1/1024 (exact in floating point, so the reporter's sum is
  exact in any order), rounded from the exact running total, so the grand total is the
  exact score rounded to 1/1024: the reference gets exactly the maximum, and a full or
  empty task exactly its points or 0. Within a task the remainder goes to the last test.

The file is itself a valid runner result (the runner-level fields plus the ``runners``
index), usable as a single runner: its grand total is then still right, but the
reporter's console line for that one runner counts entries, not points.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

from .score import Score, TaskScore

GRID = 1024  # points are multiples of 1/GRID
CODE_CHARS = 300  # test_code shown for the first failing test of a task
CODE_LINES = 6
MESSAGE_CHARS = 1000  # the reason of a grading error
SINGLE_RUNNER = "tinytrain"  # the one runner of an error, or of a result without an index


def runner_name(task_id: str) -> str:
    """The runner of a task: ``1.2`` -> ``hw1task2`` (letters and digits only, as the
    reporter's ``runners`` input requires)."""
    assignment, number = task_id.split(".")
    return f"hw{assignment}task{number}"


def classroom_json(score: Score) -> dict[str, Any]:
    """The runner result for ``score``, with a ``runners`` index of one runner per task."""
    max_score = sum((Fraction(t.task.points) for t in score.tasks), Fraction(0))
    if score.error:
        reason = f"grading failed: {score.error}"[:MESSAGE_CHARS]
        tests = [_entry("grading", "error", Fraction(0), message=reason)]
        return _document("error", max_score, tests,
                         [{"runner": SINGLE_RUNNER, "max_score": _number(max_score), "tests": 1}])
    tests: list[dict[str, Any]] = []
    runners = []
    for task_score, points in zip(score.tasks, _task_points(score.tasks)):
        entries = _task_entries(task_score, points)
        runners.append({"runner": runner_name(task_score.task.id),
                        "max_score": _number(Fraction(task_score.task.points)),
                        "tests": len(entries)})
        tests.extend(entries)
    return _document(_status(tests), max_score, tests, runners)


def split_runners(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(runner name, runner result) for each runner listed in ``document``; a result with
    no ``runners`` index (another grader's) is one runner."""
    if "runners" not in document:
        return [(SINGLE_RUNNER, document)]
    out, start = [], 0
    for runner in document["runners"]:
        tests = document["tests"][start:start + runner["tests"]]
        start += runner["tests"]
        out.append((runner["runner"], {"version": 1, "status": _status(tests),
                                       "max_score": runner["max_score"], "tests": tests}))
    if start != len(document["tests"]):
        raise ValueError("classroom.json: the runners do not cover its tests")
    return out


def encode(results: dict[str, Any]) -> str:
    """A runner result as the reporter reads it: compact JSON, base64."""
    return base64.b64encode(json.dumps(results, separators=(",", ":")).encode()).decode()


def failure_document(reason: str) -> dict[str, Any]:
    """A runner result saying that there is nothing to report, and why."""
    tests = [_entry("grading", "error", Fraction(0), message=reason[:MESSAGE_CHARS])]
    return _document("error", Fraction(0), tests,
                     [{"runner": SINGLE_RUNNER, "max_score": 0, "tests": 1}])


def _document(status: str, max_score: Fraction, tests: list, runners: list) -> dict[str, Any]:
    return {"version": 1, "status": status, "max_score": _number(max_score), "tests": tests,
            "runners": runners}


def _status(tests: list[dict[str, Any]]) -> str:
    statuses = {t["status"] for t in tests}
    if "error" in statuses:
        return "error"
    return "pass" if statuses == {"pass"} else "fail"


def _task_points(tasks: list[TaskScore]) -> list[Fraction]:
    """Each task's points on the 1/GRID grid: differences of the rounded exact running
    total, so the sum is the exact total rounded, a task with no test passed gets 0 and
    a task with every test passed its points (when those are multiples of 1/GRID)."""
    out, exact, rounded = [], Fraction(0), Fraction(0)
    for t in tasks:
        if t.tests:
            exact += Fraction(t.task.points) * t.passed / len(t.tests)
        now = Fraction(math.floor(exact * GRID + Fraction(1, 2)), GRID)
        out.append(now - rounded)
        rounded = now
    return out


def _task_entries(task_score: TaskScore, points: Fraction) -> list[dict[str, Any]]:
    task, results = task_score.task, task_score.tests
    if not results:
        return [_entry(f"{task.id} {task.title}", "error", Fraction(0),
                       message=f"{task.id} {task.title}: no test of this task ran")]
    passed = [r for r in results if r.status == "passed"]
    failing = [r for r in results if r.status != "passed"]
    code = _test_code(failing[0]) if failing else None
    if not passed or not failing:  # all or nothing: one entry for the task
        status = "pass" if not failing else "fail"
        name = f"{task.id} {task.title}: {len(passed)}/{len(results)} tests passed"
        return [_entry(name, status, points, test_code=code)]
    each = Fraction(math.floor(points * GRID / len(passed)), GRID)
    last = passed[-1]
    entries = []
    for r in results:
        if r.status == "passed":
            value = points - each * (len(passed) - 1) if r is last else each
            entries.append(_entry(f"{task.id} {r.name}", "pass", value))
        else:
            entries.append(_entry(f"{task.id} {r.name}", "fail", Fraction(0),
                                  test_code=code if r is failing[0] else None))
    return entries


def _entry(name: str, status: str, points: Fraction, *, test_code: str | None = None,
           message: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "status": status, "score": _number(points),
                             "line_no": 0}
    if test_code:
        entry["test_code"] = test_code
    if message:
        entry["message"] = message
    return entry


def _test_code(result: Any) -> str:
    """The reason a test did not pass, short: the reporter prints it under the test."""
    lines = f"[{result.status}] {result.name}: {result.message}".strip().splitlines()
    text = "\n".join(lines[:CODE_LINES])
    if len(text) > CODE_CHARS or len(lines) > CODE_LINES:
        text = text[:CODE_CHARS].rstrip() + "\n... (the full message is in score.json)"
    return text


def _number(value: Fraction) -> int | float:
    """A grid value as JSON writes it exactly (an int when whole)."""
    return int(value) if value.denominator == 1 else float(value)


def main(argv: list[str] | None = None) -> int:
    """Split classroom.json into one reporter runner per task, for a GitHub Actions step:
    ``<RUNNER>_RESULTS=<base64>`` lines appended to ``--env`` (``$GITHUB_ENV``) and
    ``runners=<names>`` to ``--output`` (``$GITHUB_OUTPUT``). A missing or unreadable file
    gives one ``error`` runner that says so, so the report step always has a result."""
    parser = argparse.ArgumentParser(prog="python -m graders.report.classroom",
                                     description=main.__doc__)
    parser.add_argument("classroom_json", type=Path)
    parser.add_argument("--env", type=Path, required=True, help="the file to append "
                        "<RUNNER>_RESULTS lines to ($GITHUB_ENV)")
    parser.add_argument("--output", type=Path, required=True,
                        help="the file to append runners=... to ($GITHUB_OUTPUT)")
    args = parser.parse_args(argv)
    try:
        runners = split_runners(json.loads(args.classroom_json.read_text()))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        reason = f"no grading result to report ({args.classroom_json}: {exc})"
        runners = split_runners(failure_document(reason))
    with args.env.open("a") as env:
        for name, results in runners:
            env.write(f"{name.upper()}_RESULTS={encode(results)}\n")
    with args.output.open("a") as output:
        output.write(f"runners={','.join(name for name, _ in runners)}\n")
    print(f"{len(runners)} runner(s): {', '.join(name for name, _ in runners)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
