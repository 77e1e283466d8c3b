"""The pytest plugin that grades: task markers, per-test budgets, status and message."""

from __future__ import annotations

import time
import traceback
from pathlib import Path
from typing import Any

import pytest
from _pytest.runner import runtestprotocol

from ..harness.errors import HarnessError, ProbeOutcome, SubmissionImportError
from . import hypothesis_budget
from .results import TestResult

MAX_MESSAGE = 6000


def classify(exc: BaseException | None) -> tuple[str, str]:
    """(status, message) for what a test raised."""
    if exc is None:
        return "passed", ""
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, ProbeOutcome):
        # the traceback's innermost frames (where the submission raised) are what the
        # student needs: the message is cut from its end, the traceback from its start
        message = _truncate(exc.message, MAX_MESSAGE // 2)
        if exc.detail:
            message += "\n" + _innermost(exc.detail, MAX_MESSAGE * 2 // 5)
        # an import failure or a breakpoint() is the same whatever the example: naming
        # the example would send the student looking at the inputs
        example = "" if isinstance(exc, SubmissionImportError) or _is_breakpoint(exc) else (
            exc.example or _falsifying_example(exc))
        if example:
            message += "\n" + example
        if isinstance(exc, HarnessError):
            return "error", message
        return exc.status, message
    if isinstance(exc, AssertionError):
        return "failed", str(exc) or _failed_check(exc)
    return "error", f"internal grader error: {type(exc).__name__}: {exc}"


def _is_breakpoint(exc: ProbeOutcome) -> bool:
    return getattr(exc, "exc_type", "") == "BdbQuit" or exc.message.startswith("BdbQuit")


def _failed_check(exc: BaseException) -> str:
    """The message of an ``assert`` that has none: the check's own line, never empty."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "a check failed (the grader gave no message)"
    frame = frames[-1]
    return (f"a check failed: {(frame.line or '').strip() or 'assert'} "
            f"({Path(frame.filename).name}, line {frame.lineno})")


def _falsifying_example(exc: BaseException) -> str:
    """Hypothesis' notes naming the example that raised (its arguments, and what
    ``st.data()`` drew), if any."""
    notes = getattr(exc, "__notes__", None) or []
    kept = [n for n in notes if n.startswith(("Falsifying", "Failing", "Draw "))]
    # the probe client is every test's first argument: naming it says nothing
    return "\n".join(kept).replace("\n    submission=submission,", "")


def description(doc: str | None) -> str:
    """A test's description: the first paragraph of its docstring, on one line."""
    paragraph = (doc or "").strip().split("\n\n", 1)[0]
    return " ".join(paragraph.split())


def _innermost(traceback: str, limit: int) -> str:
    """The last lines of ``traceback`` that fit in ``limit`` characters."""
    if len(traceback) <= limit:
        return traceback
    lines = traceback.splitlines()
    kept: list[str] = []
    size = 0
    for line in reversed(lines):
        size += len(line) + 1
        if size > limit and kept:
            break
        kept.append(line)
    left = len(lines) - len(kept)
    return "\n".join([f"  [... {left} lines of outer frames left out ...]", *reversed(kept)])


def _truncate(text: str, limit: int = MAX_MESSAGE) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters]"


class GradingPlugin:
    """Selects the tests of the chosen tasks, runs each with a fresh budget, records
    results; the ``submission`` fixture is the probe client."""

    def __init__(self, client: Any, task_ids: set[str], known_tasks: set[str],
                 test_budget: float, deadline: float = float("inf"),
                 budget_s: float | None = None, progress: Any = None,
                 hypothesis: hypothesis_budget.HypothesisBudget | None = None) -> None:
        self.client = client
        self.task_ids = task_ids
        self.known_tasks = known_tasks
        self.test_budget = test_budget
        self.deadline = deadline  # time.monotonic() when the whole grading's budget ends
        self.budget_s = budget_s
        self.hypothesis = hypothesis  # None: Hypothesis draws and shrinks on its own
        self.results: list[TestResult] = []
        self.collection_errors: list[str] = []
        self._outcomes: dict[str, tuple[str, str]] = {}
        self.progress = progress  # a report.console.Progress, or None
        self._planned: dict[str, int] = {}  # tests per task, in the order they run
        self._items: list[pytest.Item] = []  # every test to run, in order
        self._done: dict[str, int] = {}

    @pytest.fixture
    def submission(self) -> Any:
        """The probe client for the submission under grading."""
        return self.client

    def pytest_configure(self, config: pytest.Config) -> None:
        config.addinivalue_line("markers", "task(id): the rubric task a grader test belongs to")
        # messages come from the exceptions themselves: pytest's own report of a failure
        # only needs to be cheap (its long style reads and parses the source of every
        # frame, a tenth of a second per failing test)
        config.option.tbstyle = "native"

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collection_errors.append(f"{report.nodeid}: {report.longreprtext[-2000:]}")

    def pytest_collection_modifyitems(self, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        keep, drop = [], []
        for item in items:
            marker = item.get_closest_marker("task")
            task = marker.args[0] if marker and marker.args else None
            if task not in self.known_tasks:
                self.collection_errors.append(f"{item.nodeid}: no valid task marker ({task!r})")
                drop.append(item)
            elif task in self.task_ids:
                keep.append(item)
            else:
                drop.append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
        items[:] = keep
        self._items = list(keep)
        for item in keep:
            task = item.get_closest_marker("task").args[0]
            self._planned[task] = self._planned.get(task, 0) + 1

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: Any) -> bool:
        """Run one test with a fresh budget (never past the grading's deadline); once the
        submission is known not to import, or the grading's budget is spent, record the
        test at once without running it (no worker, no pytest report to format)."""
        self._outcomes.pop(item.nodeid, None)
        self._show_progress(item, finished=False)
        remaining = self.deadline - time.monotonic()
        fatal = self.client.fatal()
        if fatal is not None:
            status = "error" if isinstance(fatal, HarnessError) else fatal.status
            message = "\n".join(x for x in (fatal.message, fatal.detail) if x)
            self._record(item, status, message, duration=0.0, output="")
            return True
        if remaining <= 0:
            spent = f" of {self.budget_s:g} s" if self.budget_s is not None else ""
            self._record(item, "timeout", f"not run: the grading used up its time budget"
                         f"{spent} (--budget) before this test", duration=0.0, output="")
            return True
        self.client.begin_test(min(self.test_budget, remaining))
        task = item.get_closest_marker("task").args[0]
        policy = self.hypothesis
        if policy is not None:
            policy.begin(task)
        hypothesis_budget.activate(policy)
        start = time.perf_counter()
        try:
            item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
            runtestprotocol(item, nextitem=nextitem, log=True)
            item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        finally:
            hypothesis_budget.activate(None)
        duration = time.perf_counter() - start
        output = self.client.end_test()
        status, message = self._outcomes.get(item.nodeid, ("error", "the test did not run"))
        note = policy.end(task, status) if policy is not None else ""
        if note and status in ("failed", "error"):
            message = f"{message}\n{note}"
        self._record(item, status, message, duration=duration, output=output)
        return True

    def partial_results(self, why: str) -> list[TestResult]:
        """What grading has recorded so far, and for each test it has not, an ``error``
        saying ``why`` (a grading stopped by a signal keeps the tests that finished)."""
        done = {(r.task, r.name) for r in self.results}
        missing = [TestResult(name=item.name, task=item.get_closest_marker("task").args[0],
                              status="error", message=f"not run: {why}",
                              description=description(getattr(item, "function", None).__doc__))
                   for item in self._items
                   if (item.get_closest_marker("task").args[0], item.name) not in done]
        return [*self.results, *missing]

    def _show_progress(self, item: pytest.Item, finished: bool) -> None:
        if self.progress is None:
            return
        task = item.get_closest_marker("task").args[0]
        done = self._done[task] = self._done.get(task, 0) + finished
        order = list(self._planned)
        number = order.index(task) + 1 if task in order else 0
        self.progress.update(task, done, self._planned.get(task, 0), number, len(order),
                             test="" if finished else item.name)

    def _record(self, item: pytest.Item, status: str, message: str, duration: float,
                output: str) -> None:
        self.results.append(TestResult(
            name=item.name,
            task=item.get_closest_marker("task").args[0],
            status=status,
            message=_truncate(message),
            duration=round(duration, 3),
            output=_truncate(output, 8000),
            description=description(getattr(item, "function", None).__doc__),
            nodeid=item.nodeid,
        ))
        self._show_progress(item, finished=True)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Any:
        yield
        if call.when == "call" or (call.when == "setup" and call.excinfo is not None):
            exc = call.excinfo.value if call.excinfo is not None else None
            try:
                self._outcomes[item.nodeid] = classify(exc)
            except Exception as bug:  # noqa: BLE001 - one bad report must not stop grading
                self._outcomes[item.nodeid] = ("error", f"internal grader error: {bug!r}")
