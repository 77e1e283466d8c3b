"""Task 5.4: Adam and AdamW against torch.optim (foreach=False), parameters and state
(step, exp_avg, exp_avg_sq, max_exp_avg_sq) after every step."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from graders.checks.optim import assert_run_matches, steps_template
from graders.checks.structure import conform
from graders.oracle import optim as oracle
from graders.strategies.optim import fixed_run, runs
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
