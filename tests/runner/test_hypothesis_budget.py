"""The grader's draw and shrink budgets (graders/runner/hypothesis_budget.py), on small
Hypothesis tests run here: the first failure of a task shrinks within its budget, later
ones report their first example, shrinking never changes a failure's kind, and quick
runs the first third of the default's examples."""

from __future__ import annotations

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from graders.runner import hypothesis_budget as hb

PHASES = [p for p in Phase if p is not Phase.explain]


def _run(test, policy, task="1.1"):
    """Run ``test`` as the plugin does; (what it raised or None, the note)."""
    policy.begin(task)
    hb.activate(policy)
    raised = None
    try:
        test()
    except BaseException as exc:  # noqa: BLE001 - the test under test's failure
        raised = exc
    finally:
        hb.activate(None)
    status = "passed" if raised is None else hb.failure_kind(raised)
    return raised, policy.end(task, status)


def _failing_above(threshold, seen, max_examples=20):
    @settings(database=None, max_examples=max_examples, phases=PHASES, derandomize=True,
              report_multiple_bugs=False)
    @given(x=st.integers(0, 10**6))
    def test(x):
        seen.append(x)
        if x >= threshold:
            raise AssertionError(str(x))

    return test


def test_first_failure_of_a_task_is_minimised_the_next_is_not():
    policy = hb.HypothesisBudget()
    first, note = _run(_failing_above(100, []), policy)
    assert str(first) == "100" and note == ""
    seen = []
    second, note = _run(_failing_above(100, seen), policy)
    assert isinstance(second, AssertionError) and "not minimised" in note
    assert int(str(second)) == next(x for x in seen if x >= 100), "the first failing example"
    # another task gets its own minimised failure
    third, note = _run(_failing_above(100, []), policy, task="1.2")
    assert str(third) == "100" and note == ""


def test_shrinking_stops_at_its_budget():
    policy = hb.HypothesisBudget(calls_per_example=1)
    seen = []
    raised, note = _run(_failing_above(100, seen, max_examples=3), policy)
    first_failure = next(i for i, x in enumerate(seen) if x >= 100)
    shrink_runs = len(seen) - first_failure - 1 - 1  # less the first failure and the replay
    assert shrink_runs <= 3, seen
    assert "shrinking stopped after 3 runs" in note
    assert isinstance(raised, AssertionError) and int(str(raised)) >= 100


def test_the_safety_net_ends_a_slow_shrink_and_keeps_the_failure():
    import time

    seen = []

    @settings(database=None, max_examples=20, phases=PHASES, derandomize=True,
              report_multiple_bugs=False)
    @given(x=st.integers(0, 10**6))
    def slow(x):
        seen.append(x)
        time.sleep(0.02)
        if x >= 100:
            raise AssertionError(str(x))

    raised, note = _run(slow, hb.HypothesisBudget(seconds=0.05))
    first_failure = next(i for i, x in enumerate(seen) if x >= 100)
    assert len(seen) - first_failure <= 6, "the shrink ran on past its time"
    assert isinstance(raised, AssertionError) and int(str(raised)) >= 100
    assert "shrinking stopped after 0.05 s" in note


def _two_kinds(seen):
    # a wrong result (AssertionError) for large x, the submission raising below: shrinking
    # alone would slip from the first to the second
    @settings(database=None, max_examples=50, phases=PHASES, derandomize=True,
              report_multiple_bugs=False)
    @given(x=st.integers(0, 10**6))
    def test(x):
        seen.append(x)
        if x >= 1000:
            raise AssertionError(f"wrong at {x}")
        if x >= 1:
            raise ValueError(f"raised at {x}")

    return test


def test_shrinking_keeps_the_kind_of_the_first_failure():
    seen = []
    with pytest.raises(ValueError):  # Hypothesis alone slips to the other kind
        _two_kinds(seen)()
    first = next(x for x in seen if x >= 1)
    assert first >= 1000, "the example should first fail as a wrong result"
    raised, _ = _run(_two_kinds([]), hb.HypothesisBudget())
    assert isinstance(raised, AssertionError) and str(raised) == "wrong at 1000"


def _drawing(seen, max_examples=30):
    @settings(database=None, max_examples=max_examples, phases=PHASES, derandomize=True,
              report_multiple_bugs=False)
    @given(x=st.integers(0, 10**6))
    def test(x):
        seen.append(x)

    return test


def test_quick_runs_the_first_third_of_the_default_examples():
    default, quick = [], []
    _run(_drawing(default), hb.HypothesisBudget())
    _run(_drawing(quick), hb.HypothesisBudget(quick=True))
    assert len(default) == 30 and len(quick) == hb.quick_draws(30) == 10
    assert quick == default[:10]


def test_quick_runs_every_example_after_a_failure_in_the_task():
    policy = hb.HypothesisBudget(quick=True)
    raised, _ = _run(_failing_above(-1, []), policy)  # fails at once
    assert isinstance(raised, AssertionError)
    after, other_task = [], []
    _run(_drawing(after), policy)
    _run(_drawing(other_task), policy, task="1.2")
    assert len(after) == 30 and len(other_task) == 10


def test_without_an_active_budget_hypothesis_shrinks_as_usual():
    policy = hb.HypothesisBudget()
    _run(_failing_above(100, []), policy)  # the engine is wrapped from here on
    for _ in range(2):  # outside a grading every failure is minimised
        with pytest.raises(AssertionError) as raised:
            _failing_above(100, [])()
        assert str(raised.value) == "100"


def _results(score):
    return {r["name"]: r for t in score["tasks"] for r in t["tests"]}


def test_a_failing_task_shrinks_once_and_keeps_every_status(tmp_path):
    from ..conftest import grade_forked
    from ..mutants import all_mutants

    mutant = next(m for m in all_mutants() if m.id == "view-write-no-version-bump")
    mutant.apply(tmp_path / "sub")
    default = grade_forked(tmp_path / "sub", tmp_path / "default", "--tasks", mutant.task)
    unshrunk = grade_forked(tmp_path / "sub", tmp_path / "unshrunk", "--tasks", mutant.task,
                            "--no-shrink")
    assert default["_exit"] == 0 and unshrunk["_exit"] == 0, default["_stderr"]
    ours, theirs = _results(default), _results(unshrunk)
    assert {n: r["status"] for n, r in ours.items()} == {
        n: r["status"] for n, r in theirs.items()}, "shrinking changed a status"
    failing = [n for n, r in ours.items() if r["status"] in ("failed", "error")]
    marked = [n for n in failing if "not minimised" in ours[n]["message"]]
    assert not any("not minimised" in r["message"] for r in theirs.values())
    # one failure was shrunk: its message differs from the first example's; every later
    # one shows the first example found (the same as --no-shrink's), marked as such
    shrunk = [n for n in failing
              if ours[n]["message"].split("\n(the first failing example")[0]
              != theirs[n]["message"]]
    assert len(shrunk) == 1 and marked, (shrunk, marked)
    assert all(failing.index(n) > failing.index(shrunk[0]) for n in marked)
