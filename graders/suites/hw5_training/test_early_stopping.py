"""Task 5.7: EarlyStopping against its documented rule (tt.data.EarlyStopping's
docstring; the grader's copy is graders/oracle/data.py: early_stopping)."""

from __future__ import annotations

import math

from hypothesis import given, settings

from graders.checks import assert_equal
from graders.checks.structure import Kind, ListOf, conform
from graders.oracle import data as oracle
from graders.strategies.data import early_stopping_cases
from graders.suites._seed import case_rng, grading_seed
from graders.suites._support import examples, task

RULE = ("rule: improvement when val < best - min_delta (mode 'min') or val > best + min_delta "
        "(mode 'max'), strictly; else num_bad_epochs += 1; stop when num_bad_epochs >= patience")


def _moved(values: list[float], options: dict, *key: object) -> tuple[list[float], dict]:
    """The curve a * v + b (a a power of two, b a multiple of 1/8, both drawn from the
    grading seed; a = 1, b = 0 at seed 0) with min_delta * a: the same steps, the same
    exact ties (dyadic values stay exact), other numbers."""
    rng = case_rng(0, "5.7 curve", *key)
    a, b = (1.0, 0.0) if grading_seed() == 0 else \
        (2.0 ** int(rng.integers(-3, 4)), int(rng.integers(-40, 41)) / 8)
    moved = {**options, **({"min_delta": options["min_delta"] * a} if "min_delta" in options
                           else {})}
    return [v * a + b for v in values], moved


def _check(submission, values, options):
    got = submission.call("data.early_stopping", values, options)
    expected = oracle.early_stopping(values, **options)
    conform(got, {"steps": ListOf([Kind(bool), Kind(float), Kind(int)]),
                  "best_epoch": Kind(None, int)}, what="data.early_stopping")
    args = ", ".join(f"{k}={v!r}" for k, v in options.items())
    case = f"es = tt.data.EarlyStopping({args}); [es.step(v) for v in {values}]\n  {RULE}"
    stops = [s[0] for s in expected["steps"]]
    first = stops.index(True) if True in stops else None
    got_stops = [s[0] for s in got["steps"]]
    got_first = got_stops.index(True) if True in got_stops else None
    assert_equal(got_first, first, what="first epoch (from 0) at which step() returns True",
                 case=case)
    for epoch, (g, e) in enumerate(zip(got["steps"], expected["steps"], strict=True)):
        same_best = g[1] == e[1] or (math.isinf(e[1]) and g[1] == e[1])
        assert_equal([g[0], g[2]], [e[0], e[2]],
                     what=f"epoch {epoch}: [step() result, num_bad_epochs]", case=case)
        assert_equal(same_best, True, what=f"epoch {epoch}: best (got {g[1]}, expected {e[1]})",
                     case=case)
    assert_equal(got["best_epoch"], expected["best_epoch"], what="best_epoch", case=case)


@task("5.7")
@settings(max_examples=examples(40))
@given(case=early_stopping_cases())
def test_early_stopping_follows_the_rule(submission, case):
    """Generated validation curves (improvements, values exactly min_delta better, ties,
    worse values, NaN): the epoch it stops at, best and num_bad_epochs after every step."""
    values, options = case
    _check(submission, values, options)


@task("5.7")
def test_early_stopping_on_a_typical_curve(submission):
    """Validation loss falls, flattens, then rises: with patience 3 and min_delta 0.005
    the bad epochs are 4, 5, 6 (0.72, 0.71, 0.75 do not beat 0.69), so step() first
    returns True at epoch 6."""
    _check(submission, *_moved([1.0, 0.8, 0.7, 0.69, 0.72, 0.71, 0.75, 0.8],
                               {"patience": 3, "min_delta": 0.005}, "typical"))


EDGE_CASES = {
    # 0.875 is exactly best - min_delta: not an improvement (the rule is strict)
    "exactly min_delta better": ([1.0, 0.875, 0.875, 0.7], {"patience": 2, "min_delta": 0.125}),
    "NaN never improves": ([2.0, float("nan"), 1.5, float("nan"), float("nan")],
                           {"patience": 2}),
    "mode max (accuracy)": ([0.5, 0.6, 0.6, 0.65, 0.64, 0.66, 0.6],
                            {"patience": 2, "min_delta": 0.02, "mode": "max"}),
    "patience 1": ([3.0, 2.0, 2.0, 1.0], {"patience": 1}),
}


@task("5.7")
def test_early_stopping_edge_cases(submission):
    """Values exactly min_delta better than the best, NaN, mode "max", patience 1."""
    for name, (values, options) in EDGE_CASES.items():
        _check(submission, *_moved(values, options, name))
