"""How much Hypothesis draws and shrinks, test by test.

Drawing, under ``--profile quick``: each test runs with the default profile's settings
and stops after the first third of its examples (``quick_draws``), so quick runs exactly
the examples a grade starts with, in the same order, besides every explicit example
(``@example``: those run in every profile). Once a test of a task has failed, the rest
of that task's tests run all of the grade's examples. So a failure quick reports is one
the grade reports too, with the same first example; quick may miss failures that only a
later example of the grade finds, in tasks where nothing failed before.

Shrinking (Hypothesis replaying smaller and smaller variants of a failing example) is
most of what a failing grading costs, and a broken helper fails dozens of tests at once.
So, per grading:

- the first test of each task whose failure Hypothesis would shrink gets a budget of
  ``CALLS_PER_EXAMPLE`` x its ``max_examples`` runs of the test (the shrink costs at most
  that many passing runs of the same test: cheap tests shrink fully, expensive ones draw
  few examples and get few runs); the rest of that task's failures report the first
  failing example found, with a note saying so;
- shrinking only keeps examples that fail the way the first one did (an ``AssertionError``
  stays a wrong result, an exception of the submission stays one, a stub reached by a
  smaller example is not taken), so a test's status is decided by the first failing
  example alone: it does not depend on the budget, on which test is first, on
  ``--no-shrink`` or on the safety net below (one exception, as before: a hang or crash
  met while shrinking ends the test with that status);
- a safety net in wall time (``SECONDS``) ends a shrink that runs away on a loaded machine
  before the test's own time budget would turn the failure into a timeout; it can only
  change which example a message shows.

Budgets are counted in runs, not seconds, so a regrade prints the same examples.
Hypothesis has no setting for this: the engine's ``test_function`` and the test body
Hypothesis runs are wrapped (internals of the pinned Hypothesis, see pyproject.toml;
``tests/runner/test_hypothesis_budget.py`` checks each behaviour).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

from hypothesis import core, reject
from hypothesis.errors import HypothesisException, StopTest
from hypothesis.internal.conjecture import engine
from hypothesis.internal.conjecture.engine import ConjectureRunner, ExitReason

from ..harness.errors import (
    HarnessError,
    ProbeOutcome,
    ProbeTimeout,
    SubmissionImportError,
    WorkerCrashed,
)

CALLS_PER_EXAMPLE = 20
SECONDS = 20.0
QUICK_FRACTION = 1 / 3
_ORIGINAL_TEST_FUNCTION = ConjectureRunner.test_function
_ORIGINAL_STATE_INIT = core.StateForActualGivenExecution.__init__
_ACTIVE: HypothesisBudget | None = None  # the policy of the grading under way, if any
# outcomes after which the worker is gone (the client repeats them for the rest of the
# test): they end the test whenever they happen, as without this module
_ENDS_THE_TEST = (ProbeTimeout, WorkerCrashed, HarnessError, SubmissionImportError)


def quick_draws(max_examples: int) -> int:
    """How many of a test's ``max_examples`` drawn examples ``--profile quick`` runs."""
    return max(2, round(max_examples * QUICK_FRACTION))


def failure_kind(exc: BaseException) -> str:
    """The status a failure would get (as ``plugin.classify`` gives it)."""
    if isinstance(exc, AssertionError):
        return "failed"
    if isinstance(exc, ProbeOutcome):
        return exc.status
    return "error"


class HypothesisBudget:
    """Draw and shrink budgets for one grading: ``begin``/``end`` around each test.
    ``quick``: each test stops after ``quick_draws`` of its examples, until a test of its
    task has failed (the rest of a failing task runs all of the grade's examples, so the
    student sees that task's failures)."""

    def __init__(self, quick: bool = False, calls_per_example: int = CALLS_PER_EXAMPLE,
                 seconds: float = SECONDS) -> None:
        self.quick = quick
        self.calls_per_example = calls_per_example
        self.seconds = seconds
        self._shrunk_tasks: set[str] = set()
        self._failed_tasks: set[str] = set()
        self._reset(shrink=False, cut=False)

    def _reset(self, shrink: bool, cut: bool) -> None:
        self.shrink = shrink  # may this test shrink at all
        self.cut = cut  # does this test stop after quick's share of its examples
        self.entered = False  # did Hypothesis start shrinking a failure of this test
        self.calls = 0  # runs of the test spent shrinking
        self.stopped: str | None = None  # why shrinking ended early: "budget" or "time"
        self.first_kind: str | None = None
        self._started = 0.0
        self._in_shrink_call = False

    # ----- around each test -----------------------------------------------------------
    def begin(self, task: str) -> None:
        self._reset(shrink=task not in self._shrunk_tasks,
                    cut=self.quick and task not in self._failed_tasks)

    def end(self, task: str, status: str) -> str:
        """Record how the test that just ran ended; a note for its message ("" if none)."""
        if status != "passed":
            self._failed_tasks.add(task)
        if not self.entered:
            return ""
        if not self.shrink:
            return ("(the first failing example found, not minimised: only the first "
                    "failing test of a task is shrunk)")
        self._shrunk_tasks.add(task)
        if self.stopped == "budget":
            return (f"(shrinking stopped after {self.calls} runs: a smaller failing "
                    "example may exist)")
        if self.stopped == "time":
            return (f"(shrinking stopped after {self.seconds:g} s: a smaller failing "
                    "example may exist)")
        return ""

    # ----- inside Hypothesis ----------------------------------------------------------
    def draws(self, runner: ConjectureRunner) -> int:
        """How many drawn examples this test runs."""
        n = runner.settings.max_examples
        return quick_draws(n) if self.cut else n

    def before_generating(self, runner: ConjectureRunner) -> None:
        """Before each run while Hypothesis generates: quick's last example was run."""
        if (self.cut and not runner.interesting_test_cases
                and runner.valid_test_cases >= self.draws(runner)):
            runner.exit_with(ExitReason.max_examples)

    def run_in_shrink_phase(self, runner: ConjectureRunner, data: Any) -> None:
        """One run of the test while Hypothesis shrinks: within the budget, or the end
        of shrinking (the smallest failing example so far is reported)."""
        if not self.entered:
            self.entered = True
            self._started = time.monotonic()
        if not self.shrink:
            runner.exit_with(ExitReason.max_shrinks)
        # the grade's count, also under quick: the same minimal example as a grade's
        if self.calls >= self.calls_per_example * runner.settings.max_examples:
            self.stopped = "budget"
            runner.exit_with(ExitReason.max_shrinks)
        if time.monotonic() - self._started > self.seconds:
            self.stopped = "time"
            runner.exit_with(ExitReason.very_slow_shrinking)
        self.calls += 1
        self._in_shrink_call = True
        try:
            _ORIGINAL_TEST_FUNCTION(runner, data)
        finally:
            self._in_shrink_call = False

    def judge(self, exc: BaseException) -> None:
        """Called with what the test body raised: the first failure sets the kind; while
        shrinking, a failure of another kind is no candidate (Hypothesis discards it)."""
        if isinstance(exc, (HypothesisException, StopTest, *_ENDS_THE_TEST)):
            return
        kind = failure_kind(exc)
        if not self._in_shrink_call:
            if self.first_kind is None:
                self.first_kind = kind
        elif kind != self.first_kind:
            reject()


def _test_function(runner: ConjectureRunner, data: Any) -> None:
    policy = _ACTIVE
    if policy is not None:
        if runner._current_phase == "shrink":
            return policy.run_in_shrink_phase(runner, data)
        if runner._current_phase == "generate":
            policy.before_generating(runner)
    return _ORIGINAL_TEST_FUNCTION(runner, data)


def judged(test: Callable[..., Any]) -> Callable[..., Any]:
    """The test body, reporting what it raises to the active policy."""

    @functools.wraps(test)
    def body(*args: Any, **kwargs: Any) -> Any:
        try:
            return test(*args, **kwargs)
        except BaseException as exc:
            if _ACTIVE is not None:
                _ACTIVE.judge(exc)
            raise

    body.tinytrain_judged = True  # type: ignore[attr-defined]
    return body


def activate(policy: HypothesisBudget | None) -> None:
    """Make ``policy`` the one the engine consults (None: Hypothesis's own behaviour)."""
    global _ACTIVE
    _ACTIVE = policy
    if engine.ConjectureRunner.test_function is not _test_function:
        engine.ConjectureRunner.test_function = _test_function  # type: ignore[method-assign]
        core.StateForActualGivenExecution.__init__ = _state_init  # type: ignore[method-assign]


def _state_init(state: Any, *args: Any, **kwargs: Any) -> None:
    """Hypothesis's state of one test run, its test body routed through ``judged`` (a
    test defined inside a grader test included)."""
    _ORIGINAL_STATE_INIT(state, *args, **kwargs)
    if not getattr(state.test, "tinytrain_judged", False):
        state.test = judged(state.test)
