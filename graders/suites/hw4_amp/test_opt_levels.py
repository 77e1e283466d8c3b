"""Task 4.4: APEX's opt levels (``tt.amp.initialize``, ``scale_loss``, ``LossScaler``).

APEX needs CUDA and is not installed: its recipes are spelled out in
graders/oracle/opt_levels.py with torch tensors. The model is the probes' Net (linear,
relu, linear, with Functions of the probes' own that compute in float32 and round once,
like torch's kernels), trained with ``Plain`` (p -= lr * grad), so a wrong value points
at initialize / scale_loss / the optimizer wrapper, not at an operator.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings

from graders.checks import assert_close, assert_equal, assert_raises_like
from graders.checks.structure import RAISED, Kind, ListOf, Shaped, conform, loose
from graders.oracle import opt_levels as oracle
from graders.strategies.opt_levels import (
    overflow_sequences,
    scaler_configs,
    training_setup,
    training_setups,
)
from graders.suites._seed import case_seed
from graders.suites._support import examples, task

TINY_GRADIENTS = "the tiny-gradients example"

PARAMS = ["w1", "b1", "w2", "b2"]
EXPECTED_STATE = {  # param dtype, optimizer holds float32 masters, initial loss scale
    "O0": ("float32", False, 1.0),
    "O1": ("float32", False, 2.0**16),
    "O2": ("float16", True, 2.0**16),
    "O3": ("float16", False, 1.0),
}
FORWARD = {  # [autocast on?, input dtype] seen inside forward for a float32 input; output
    "O0": ([False, "float32"], "float32"),
    "O1": ([True, "float32"], "float32"),
    "O2": ([False, "float16"], "float32"),
    "O3": ([False, "float16"], "float32"),
}
# Per level, the tolerance of a training run against the oracle. Both sides do the same
# math, rounded at the same points; only the order of float32 sums differs (BLAS against
# torch). At O1-O3 every value is float16 or comes from one: measured equal bit for bit,
# one float16 unit in the last place (2**-10) is allowed for an unlucky rounding. At O0
# the sum order shows in float32 gradients that nearly cancel (measured: relative 2e-4
# on values of 1e-7 next to gradients of 1e-3), hence an absolute floor.
RUN_TOLERANCE = {"O0": (1e-4, 1e-6), "O1": (2.0**-10, 0.0), "O2": (2.0**-10, 0.0),
                 "O3": (2.0**-10, 0.0)}


def _weights_case(setup: dict) -> str:
    sizes = [list(np.shape(setup["weights"][n])) for n in PARAMS]
    return (f"Net: x @ w1 + b1 -> relu -> @ w2 + b2, sizes {sizes}, "
            f"lr {setup['lr']}, {len(setup['batches'])} steps of mse_loss")


@task("4.4")
@pytest.mark.parametrize("level", sorted(EXPECTED_STATE))
def test_initialize_sets_up_each_level(submission, level):
    """Parameter dtypes, master weights, the loss scale and the forward's casts per
    opt level."""
    setup = training_setup(seed=case_seed(0, "4.4 initialize", level), weight_scale=1.0,
                           data_scale=1.0, lr=0.5, steps=0)
    got = submission.call("opt_levels.initialize_state", level, setup["weights"])
    dtype, masters, scale = EXPECTED_STATE[level]
    flags, names = [Kind(bool)] * 4, [Kind(str)] * 4
    conform(got, {"same_parameter_objects": Kind(bool), "param_dtypes": names,
                  "optimizer_holds_model_params": flags, "optimizer_dtypes": names,
                  "optimizer_requires_grad": flags,
                  "optimizer_values": [Shaped(np.shape(setup["weights"][n])) for n in PARAMS],
                  "loss_scale": Kind(float), "forward_saw": ListOf([Kind(bool), Kind(str)]),
                  "output_dtype": Kind(str), "bad_level": RAISED},
            what="opt_levels.initialize_state")
    where = f"after model, optimizer = tt.amp.initialize(model, optimizer, opt_level={level!r})"
    assert_equal(got["same_parameter_objects"], True,
                 what=f"{where}: model.parameters() are the same Parameter objects")
    assert_equal(got["param_dtypes"], [dtype] * 4, what=f"{where}: parameter dtypes")
    holds = "float32 master copies" if masters else "the model's parameters"
    assert_equal(got["optimizer_holds_model_params"], [not masters] * 4,
                 what=f"{where}: optimizer.param_groups should hold {holds}")
    assert_equal(got["optimizer_dtypes"], ["float32" if masters else dtype] * 4,
                 what=f"{where}: dtypes of the tensors in optimizer.param_groups")
    # APEX makes each master a leaf with requires_grad = True, as the parameters are
    assert_equal(got["optimizer_requires_grad"], [True] * 4,
                 what=f"{where}: requires_grad of the tensors in optimizer.param_groups")
    for name, value in zip(PARAMS, got["optimizer_values"], strict=True):
        expected = np.asarray(setup["weights"][name]).astype(dtype).astype(
            "float32" if masters else dtype)
        assert_close(value, expected, rtol=0, atol=0,
                     what=f"{where}: optimizer's copy of {name} (the model's value, exactly)")
    assert_equal(got["loss_scale"], scale, what=f"{where}: optimizer.loss_scaler.loss_scale()")
    seen, out_dtype = FORWARD[level]
    assert_equal(got["forward_saw"], [seen],
                 what=f"{where}: [is_autocast_enabled(), input dtype] inside model.forward "
                      "for a float32 input")
    assert_equal(got["output_dtype"], out_dtype, what=f"{where}: dtype of model(x)")
    assert_raises_like(got["bad_level"], "RuntimeError", contains=("O4",),
                       what="tt.amp.initialize(..., opt_level='O4')")


@task("4.4")
@pytest.mark.parametrize("level", sorted(RUN_TOLERANCE))
@settings(max_examples=examples(4))
@given(setup=training_setups())
# tiny gradients: unscaled, they are float16 subnormals (float32 math keeps them)
# (drawn when it runs, from the grading seed: seed 1 at grading seed 0)
@example(setup=TINY_GRADIENTS)
def test_training_run_tracks_the_oracle(submission, setup, level):
    """A few steps of the APEX loop (scale_loss, step, zero_grad) at every level: the
    loss, the scale used, skipped steps, gradients and parameters step by step (O1 runs
    through the submission's autocast)."""
    if setup == TINY_GRADIENTS:
        setup = training_setup(seed=case_seed(1, "4.4 tiny gradients", level),
                               weight_scale=0.1, data_scale=1e-3, lr=2.0**-5, bias_scale=1e-3)
    got = submission.call("opt_levels.train_run", level, setup["weights"], setup["batches"],
                          setup["lr"])
    expected = oracle.train_run(level, setup["weights"], setup["batches"], setup["lr"])
    _check_run(got, expected, level, _weights_case(setup) + f", opt_level={level!r}")


@task("4.4")
@pytest.mark.parametrize("loss_scale", [2.0, 1024.0])
@pytest.mark.parametrize("level", ["O1", "O2", "O3"])
def test_training_run_with_a_static_loss_scale(submission, level, loss_scale):
    """initialize(..., loss_scale=s) replaces the level's scale by a static one: the loss
    is scaled by s and every gradient unscaled (at O1 and O3 in place, at O2 into the
    masters) before each step."""
    setup = training_setup(seed=case_seed(3, "4.4 static scale", level, loss_scale),
                           weight_scale=1.0, data_scale=1.0, lr=2.0**-3, steps=3)
    got = submission.call("opt_levels.train_run", level, setup["weights"], setup["batches"],
                          setup["lr"], loss_scale)
    expected = oracle.train_run(level, setup["weights"], setup["batches"], setup["lr"],
                                loss_scale)
    _check_run(got, expected, level, _weights_case(setup) + f", opt_level={level!r}, "
               f"loss_scale={loss_scale!r}")


def _check_run(got: Any, expected: list[dict[str, Any]], level: str, case: str) -> None:
    """A train_run's records, step by step, against the oracle's."""
    conform(got, loose(expected), what="opt_levels.train_run")
    rtol, atol = RUN_TOLERANCE[level]
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        where = f"step {i + 1}"
        assert_equal(g["scale_used"], e["scale_used"], what=f"{where}: loss scale", case=case)
        assert_close(np.asarray(g["loss"], np.float32), np.asarray(e["loss"], np.float32),
                     rtol=rtol, atol=atol, what=f"{where}: loss", case=case)
        assert_equal(g["stepped"], e["stepped"],
                     what=f"{where}: optimizer.step() ran (False: skipped after an overflow)",
                     case=case)
        for name, gg, eg in zip(PARAMS, g["optimizer_grads"], e["optimizer_grads"],
                                strict=True):
            assert_close(gg, eg, rtol=rtol, atol=atol, case=case,
                         what=f"{where}: unscaled .grad of the optimizer's {name}")
        for name, gm, em in zip(PARAMS, g["model_grads"], e["model_grads"], strict=True):
            assert_close(gm, em, rtol=rtol, atol=atol, case=case,
                         what=f"{where}: the model's {name}.grad after scale_loss (at O2 the "
                              "scaled float16 gradient: unscaling fills the masters' .grad)")
        for name, gv, ev in zip(PARAMS, g["optimizer_values"], e["optimizer_values"],
                                strict=True):
            assert_close(gv, ev, rtol=rtol, atol=atol, case=case,
                         what=f"{where}: optimizer's {name} after the step")
        for name, gp, ep in zip(PARAMS, g["params"], e["params"], strict=True):
            assert_close(gp, ep, rtol=rtol, atol=atol, case=case,
                         what=f"{where}: model's {name} after the step")


@task("4.4")
@settings(max_examples=examples(25))
@given(config=scaler_configs(), overflows=overflow_sequences())
def test_loss_scaler_follows_apex(submission, config, overflows):
    """LossScaler(**config).update_scale(overflow) for a sequence of steps."""
    got = submission.call("opt_levels.loss_scaler_run", config, overflows)
    expected = oracle.loss_scaler_run(config, overflows)
    conform(got, loose(expected), what="opt_levels.loss_scaler_run")
    args = ", ".join(f"{k}={v!r}" for k, v in config.items())
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        assert_equal(g, e, what=f"loss_scale() after update #{i}",
                     case=f"scaler = tt.amp.LossScaler({args})\n"
                          f"for overflow in {overflows[:i]}: scaler.update_scale(overflow)")
