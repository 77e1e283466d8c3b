"""Task 5.3: SGD against torch.optim.SGD (foreach=False), parameters and state after
every step. Gradients are set on ``.grad`` directly."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings

from graders.checks import assert_close, assert_equal
from graders.checks.optim import assert_run_matches, assert_state_dtypes, steps_template
from graders.checks.structure import Kind, ListOf, conform
from graders.oracle import optim as oracle
from graders.strategies.optim import fixed_run, runs, state_dtype_inputs
from graders.suites._seed import case_rng
from graders.suites._support import examples, task

CASES = {
    "plain": {"lr": 0.1},
    "momentum": {"lr": 0.1, "momentum": 0.9},
    "dampening": {"lr": 0.1, "momentum": 0.9, "dampening": 0.5},
    "nesterov": {"lr": 0.1, "momentum": 0.9, "nesterov": True},
    "weight_decay": {"lr": 0.1, "momentum": 0.5, "weight_decay": 0.1},
    "maximize": {"lr": 0.1, "momentum": 0.9, "maximize": True},
    "weight_decay_one": {"lr": 0.1, "weight_decay": 1.0},
}


def _check(submission, run):
    got = submission.call("optim.steps", run["kind"], run["options"], run["groups"], run["grads"])
    expected = oracle.steps(run["kind"], run["options"], run["groups"], run["grads"])
    conform(got, steps_template(run), what="optim.steps")
    assert_run_matches(got, expected, run)


@task("5.3")
@pytest.mark.parametrize("name", list(CASES))
def test_sgd_feature(submission, name):
    """SGD with one feature switched on at a time, five steps."""
    _check(submission, fixed_run("SGD", CASES[name]))


@task("5.3")
@settings(max_examples=examples(40))
@given(run=runs("SGD"))
def test_sgd_matches_torch(submission, run):
    """Random hyperparameters, param groups and gradient sequences (some grads None)."""
    _check(submission, run)


STATE_CASES = {"momentum": {"lr": 0.1, "momentum": 0.9},
               "nesterov and weight decay": {"lr": 0.1, "momentum": 0.9, "nesterov": True,
                                             "weight_decay": 0.1}}
DTYPES = ["float32", "float64", "float16", "bfloat16"]


@task("5.3")
def test_state_dtype_with_numpy_hyperparameters(submission):
    """As test_state_follows_parameter_dtype, with every float hyperparameter a NumPy
    float64 scalar (a sweep over np.logspace gives these): NumPy promotes
    grad + weight_decay * p to float64 by it, torch keeps the parameter's dtype."""
    for name, options in STATE_CASES.items():
        shown = ", ".join(f"{k}=np.float64({v!r})" if isinstance(v, float) else f"{k}={v!r}"
                          for k, v in options.items())
        for dtype in DTYPES:
            values = state_dtype_inputs("SGD numpy", name, dtype)
            got = submission.call("optim.state_dtypes_numpy_options", "SGD", options, dtype,
                                  **values)
            assert_state_dtypes(got, oracle.state_dtypes_numpy_options("SGD", options, dtype,
                                                                       **values),
                                case=f"{name}: SGD([p], {shown}) with p and its grads in "
                                     f"{dtype}, two steps")


@task("5.3")
def test_state_follows_parameter_dtype(submission):
    """The momentum buffer has the parameter's dtype (float32 for float32, float64 for
    float64, float16 and bfloat16 for those), and the parameter keeps its dtype."""
    for name, options in STATE_CASES.items():
        for dtype in DTYPES:
            values = state_dtype_inputs("SGD", name, dtype)
            got = submission.call("optim.state_dtypes", "SGD", options, dtype, **values)
            assert_state_dtypes(got, oracle.state_dtypes("SGD", options, dtype, **values),
                                case=f"{name}: SGD([p], {options}) with p and its grads in "
                                     f"{dtype}, two steps")


def _torch_grad_written_in_place(options, param, grads):
    p = torch.nn.Parameter(torch.tensor(param))
    opt = torch.optim.SGD([p], foreach=False, **options)
    p.grad = torch.tensor(grads[0])
    seen = []
    for i, g in enumerate(grads):
        if i:
            p.grad.copy_(torch.tensor(g))
        opt.step()
        buf = opt.state[p].get("momentum_buffer")
        seen.append({"param": p.detach().numpy().copy(),
                     "momentum_buffer": None if buf is None else buf.numpy().copy(),
                     "grad": p.grad.numpy().copy()})
    return seen


@task("5.3")
@pytest.mark.parametrize("name", ["momentum", "nesterov"])
def test_momentum_buffer_is_not_the_grad(submission, name):
    """The first step's momentum buffer is a copy of the gradient (torch clones it): a
    .grad overwritten in place before the next step (backward accumulating into a zeroed
    grad) does not change the buffer, and step() never writes into .grad."""
    options = CASES[name]
    rng = case_rng(1, "5.3 grad written in place", name)
    param = rng.standard_normal(3).astype(np.float32)
    grads = [rng.standard_normal(3).astype(np.float32) for _ in range(3)]
    got = submission.call("optim.steps_grad_written_in_place", "SGD", options, param, grads)
    expected = _torch_grad_written_in_place(options, param, grads)
    conform(got, ListOf(Kind(dict)), what="optim.steps_grad_written_in_place")
    assert_equal(len(got), len(expected), what="number of steps recorded")
    case = (f"p = Parameter(...); opt = tt.optim.SGD([p], **{options}); p.grad = g0; "
            "opt.step(); then twice: p.grad.data[...] = g; opt.step() "
            "(see graders/probes/optim.py: steps_grad_written_in_place)")
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        conform(g, {"param": Kind(np.ndarray), "state": Kind(dict), "grad": Kind(np.ndarray)},
                what=f"optim.steps_grad_written_in_place, step {i}")
        assert_close(g["grad"], e["grad"], what=f"p.grad after step {i} (step() must not "
                     "write into it)", case=case)
        assert_close(g["state"].get("momentum_buffer"), e["momentum_buffer"],
                     what=f"state['momentum_buffer'] after step {i}", case=case)
        assert_close(g["param"], e["param"], what=f"p after step {i}", case=case)
