"""Task 5.4: Adam and AdamW against torch.optim (foreach=False), parameters and state
(step, exp_avg, exp_avg_sq, max_exp_avg_sq) after every step."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from graders.checks.optim import assert_run_matches, assert_state_dtypes, steps_template
from graders.checks.structure import conform
from graders.oracle import optim as oracle
from graders.strategies.optim import fixed_run, runs, state_dtype_inputs
from graders.suites._support import examples, task

CASES = {
    "Adam defaults": ("Adam", {"lr": 0.01}),
    "Adam betas": ("Adam", {"lr": 0.01, "betas": (0.5, 0.9)}),
    "Adam large eps": ("Adam", {"lr": 0.01, "eps": 0.1}),
    "Adam amsgrad": ("Adam", {"lr": 0.01, "amsgrad": True}),
    "Adam weight_decay (L2, into the gradient)": ("Adam", {"lr": 0.01, "weight_decay": 0.3}),
    "Adam maximize": ("Adam", {"lr": 0.01, "maximize": True}),
    "AdamW (decoupled weight decay)": ("AdamW", {"lr": 0.01, "weight_decay": 0.3}),
    "AdamW amsgrad": ("AdamW", {"lr": 0.01, "amsgrad": True, "betas": (0.8, 0.95)}),
}


def _check(submission, run):
    got = submission.call("optim.steps", run["kind"], run["options"], run["groups"], run["grads"])
    expected = oracle.steps(run["kind"], run["options"], run["groups"], run["grads"])
    conform(got, steps_template(run), what="optim.steps")
    assert_run_matches(got, expected, run)


@task("5.4")
@pytest.mark.parametrize("name", list(CASES))
def test_adam_feature(submission, name):
    """Adam / AdamW with one feature at a time, five steps."""
    kind, options = CASES[name]
    _check(submission, fixed_run(kind, options))


SPECIAL_CASES = ["Adam defaults", "Adam amsgrad", "AdamW amsgrad", "Adam maximize"]


@task("5.4")
@pytest.mark.parametrize("name", SPECIAL_CASES)
def test_adam_nan_gradient(submission, name):
    """The values axis: one gradient entry NaN at step 2 of five; torch propagates it into
    exp_avg, exp_avg_sq, max_exp_avg_sq (torch.maximum keeps NaN) and the parameter.
    (An infinite entry is not graded here: the moments after it are inf in the textbook
    form and NaN in torch's lerp, both reasonable; the parameter is NaN either way.)"""
    kind, options = CASES[name]
    _check(submission, fixed_run(kind, options, special=float("nan")))


@task("5.4")
@settings(max_examples=examples(30))
@given(run=runs("Adam"))
def test_adam_matches_torch(submission, run):
    """Random Adam hyperparameters, param groups and gradient sequences."""
    _check(submission, run)


@task("5.4")
@settings(max_examples=examples(30))
@given(run=runs("AdamW"))
def test_adamw_matches_torch(submission, run):
    """Random AdamW hyperparameters, param groups and gradient sequences."""
    _check(submission, run)


STATE_CASES = {"Adam": ("Adam", {"lr": 0.01}),
               "Adam amsgrad and weight decay": ("Adam", {"lr": 0.01, "amsgrad": True,
                                                          "weight_decay": 0.1}),
               "AdamW": ("AdamW", {"lr": 0.01})}
DTYPES = ["float32", "float64", "float16", "bfloat16"]


@task("5.4")
def test_state_follows_parameter_dtype(submission):
    """exp_avg, exp_avg_sq and max_exp_avg_sq have the parameter's dtype, "step" is a
    float32 scalar, and the parameter keeps its dtype."""
    for name, (kind, options) in STATE_CASES.items():
        for dtype in DTYPES:
            values = state_dtype_inputs(kind, name, dtype)
            got = submission.call("optim.state_dtypes", kind, options, dtype, **values)
            assert_state_dtypes(got, oracle.state_dtypes(kind, options, dtype, **values),
                                case=f"{name}: {kind}([p], {options}) with p and its grads "
                                     f"in {dtype}, two steps")
