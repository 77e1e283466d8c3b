"""Task 4.3: tt.amp.GradScaler against torch.amp.GradScaler("cpu"), iteration by iteration.

The scaler drives ``Plain`` (p -= lr * grad), an optimizer defined in
graders/probes/amp.py on the submission's Optimizer base class, so this task does not
depend on SGD. Gradients are set on ``.grad`` (the true gradient times the current scale,
as a scaled backward gives); where a test runs ``scale(loss).backward()`` the graph is
built from the probes' own Functions with the engine of assignment 1.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graders.checks import assert_close, assert_equal, assert_raises_like
from graders.checks.amp import assert_run_matches, assert_state_dict_matches, config_call
from graders.checks.compare import literal
from graders.checks.structure import Kind, conform, loose
from graders.oracle import amp as oracle
from graders.strategies.amp import fixed_run, runs, scaler_configs
from graders.suites._seed import case_rng, grading_seed, seeded_values
from graders.suites._support import examples, task


def _check_run(submission, run):
    got = submission.call("amp.scaler_run", run)
    expected = oracle.scaler_run(run)
    conform(got, loose(expected), what="amp.scaler_run")
    assert_run_matches(got["steps"], expected["steps"], run)
    assert_state_dict_matches(got["state_dict"], expected["state_dict"],
                              what=f"state_dict() at the end of the run of "
                                   f"{config_call(run['config'])}")


DEFAULTS = {"init_scale": 2.0**16, "growth_factor": 2.0, "backoff_factor": 0.5}
FIXED = {
    # growth_interval=2: the scale doubles after every second clean step
    "growth": ({**DEFAULTS, "growth_interval": 2}, ["clean"] * 5, False, 1.0),
    # an overflow halves the scale, skips the step and restarts the count of clean steps
    "overflow_resets_tracker": ({**DEFAULTS, "growth_interval": 3},
                                ["clean", "clean", "inf", "clean", "clean", "clean", "nan"],
                                False, 1.0),
    "overflow_right_before_growth": ({**DEFAULTS, "growth_interval": 2},
                                     ["clean", "inf", "clean", "clean", "inf", "inf"], False,
                                     1.0),
    # one optimizer overflows: only its step is skipped, and the scale backs off
    "two_optimizers": ({**DEFAULTS, "growth_interval": 2},
                       ["clean", "inf1", "clean", "clean", "inf"], True, 1.0),
    # unscale_ before step: step must not unscale again
    "explicit_unscale": ({**DEFAULTS, "growth_interval": 2},
                         ["unscale", "inf", "unscale", "unscale", "clean"], True, 1.0),
    # update(new_scale) sets the scale and leaves the tracker alone
    "new_scale": ({**DEFAULTS, "growth_interval": 3},
                  ["clean", "new_scale", "clean", "clean", "clean"], False, 1.0),
    # growth that would overflow float32 is refused (and the tracker still restarts)
    "growth_capped": ({"init_scale": 2.0**126, "growth_factor": 4.0, "backoff_factor": 0.5,
                       "growth_interval": 1}, ["clean", "clean", "inf", "clean", "clean"],
                      False, 0.01),
    # odd factors: the scale is no power of two, so neither is its inverse
    "odd_factors": ({"init_scale": 1000.1, "growth_factor": 1.7, "backoff_factor": 0.3,
                     "growth_interval": 1}, ["clean", "clean", "inf", "clean", "nan"], False,
                    1.0),
}


@task("4.3")
@pytest.mark.parametrize("name", list(FIXED))
def test_scaler_sequence(submission, name):
    """A fixed sequence of clean and overflowing iterations; the scale, growth tracker,
    found_inf, skipped steps, unscaled gradients and parameters after each match torch."""
    config, events, two, magnitude = FIXED[name]
    run = fixed_run(config, events, two_optimizers=two, magnitude=magnitude)
    _check_run(submission, run)


@task("4.3")
@settings(max_examples=examples(40))
@given(run=runs())
def test_scaler_matches_torch(submission, run):
    """Random scaler settings (small growth intervals, odd factors), one or two
    optimizers, float32 and float64 parameters, inf/NaN injected at drawn iterations,
    explicit unscale_ calls and manual update(new_scale)."""
    _check_run(submission, run)


GETTERS = ["scale", "get_growth_factor()", "get_backoff_factor()", "get_growth_interval()"]


@task("4.3")
@settings(max_examples=examples(15))
@given(run=runs(min_steps=2), other=scaler_configs(), warm=st.booleans(), data=st.data())
def test_state_dict_resume(submission, run, other, warm, data):
    """state_dict() before the first scale() (init_scale as given), after some iterations
    (torch's five keys, Python numbers), loaded into another scaler (fresh or already
    used), which then continues exactly as torch's; loading {} is refused."""
    split = data.draw(st.integers(1, len(run["steps"]) - 1), label="split")
    got = submission.call("amp.state_dict_resume", run, split, other, warm)
    expected = oracle.state_dict_resume(run, split, other, warm)
    conform(got, loose(expected), what="amp.state_dict_resume")
    second = config_call(other)
    for key, what in (("initial", f"{config_call(run['config'])}.state_dict() before any "
                                  "scale() call"),
                      ("saved", f"state_dict() after {split} iterations"),
                      ("loaded", f"{second}{' (after one scale())' if warm else ''} "
                                 "state_dict() right after load_state_dict(saved)"),
                      ("final", "state_dict() of the loaded scaler at the end")):
        assert_state_dict_matches(got[key], expected[key], what=what)
    assert_state_dict_matches(
        dict(zip(GETTERS, got["getters"], strict=True)),
        dict(zip(GETTERS, expected["getters"], strict=True)), what="the loaded scaler's getters")
    assert_run_matches(got["before"], expected["before"], run)
    assert_run_matches(got["after"], expected["after"], run, offset=split,
                       label="after load_state_dict, ")
    assert_raises_like(got["empty"], "RuntimeError", what="scaler.load_state_dict({})",
                       contains=("The source state dict is empty",))


# scale() multiplies float16 tensors in float16 (the framework's op); scales that float16
# represents exactly keep that op's own rounding out of this task
FP16_EXACT_SCALES = [1.0, 3.5, 1000.0, 1024.0, 2.0**15]


@st.composite
def _scale_case(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(1, 5))
    leaves = []
    for _ in range(n):
        dtype = draw(st.sampled_from(["float16", "float32", "float64"]))
        shape = draw(st.sampled_from([(), (3,), (2, 2)]))
        leaves.append(rng.uniform(-4, 4, size=shape).astype(dtype))
    leaves[0] = leaves[0].astype(np.float32)
    init_scale = draw(st.one_of(st.sampled_from(FP16_EXACT_SCALES), st.floats(1.0, 2.0**20)))
    if any(v.dtype == np.float16 and v.ndim for v in leaves):
        init_scale = draw(st.sampled_from(FP16_EXACT_SCALES))
    n0 = draw(st.integers(1, n))
    n1 = draw(st.integers(0, n - n0))
    return init_scale, leaves, [n0, n1, n - n0 - n1], draw(st.floats(0.01, 0.5))


@task("4.3")
@settings(max_examples=examples(15))
@given(case=_scale_case())
def test_scale_and_scaled_backward(submission, case):
    """scale() of tensors (float16/32/64, with and without dimensions; torch's type
    promotion) and of nested lists/tuples (same containers back); non-tensors refused;
    backward of scale(loss) gives gradients times the scale, unscale_ divides them back
    in place, and step() updates the parameter."""
    init_scale, leaves, nesting, lr = case
    got = submission.call("amp.scale_outputs", init_scale, leaves, nesting, lr)
    expected = oracle.scale_outputs(init_scale, leaves, nesting, lr)
    conform(got, {**loose(expected), "nested": Kind(dict)}, what="amp.scale_outputs")
    scaler = f'scaler = tt.amp.GradScaler("cpu", init_scale={init_scale!r})'
    for i, (g, e, leaf) in enumerate(zip(got["alone"], expected["alone"], leaves, strict=True)):
        what = (f"scaler.scale(tt.tensor({literal(leaf)}, dtype=tt.{leaf.dtype.name}))")
        assert_equal(g["type"], "Tensor", what=f"{what}: type of the result", case=scaler)
        assert_equal(g["dtype"], e["dtype"], what=f"{what}: dtype of the result", case=scaler)
        assert_close(g["value"], e["value"], what=f"{what} #{i}", case=scaler)

    def same_structure(g, e, path):
        assert_equal(g["type"], e["type"], what=f"type of scale(nested){path}", case=scaler)
        if e["type"] == "Tensor":
            assert_close(g["value"], e["value"], what=f"value of scale(nested){path}",
                         case=scaler)
            return
        assert_equal(len(g["items"]), len(e["items"]), what=f"length of scale(nested){path}",
                     case=scaler)
        for j, (gi, ei) in enumerate(zip(g["items"], e["items"], strict=True)):
            same_structure(gi, ei, f"{path}[{j}]")

    n0, n1, n2 = nesting
    same_structure(got["nested"], expected["nested"],
                   f" (nested = [{n0} tensors..., ({n1} tensors..., [{n2} tensors]))])")
    for key, what in (("float", "scaler.scale(3.0)"),
                      ("list_with_float", "scaler.scale([tensor, 3.0])")):
        assert_raises_like(got["errors"][key], "ValueError", what=what,
                           contains=("outputs must be a Tensor or an iterable of Tensors",))
    x = leaves[0]
    case_text = (f"{scaler}; x = tt.nn.Parameter(tt.tensor({literal(x)})); "
                 f"opt = Plain([x], lr={lr!r}); loss = (x * x).sum() (probe Functions); "
                 "scaler.scale(loss).backward(); scaler.unscale_(opt); scaler.step(opt); "
                 "scaler.update()")
    assert_equal(got["graph"], expected["graph"],
                 what="scaled = scaler.scale(loss): {requires_grad, has grad_fn, dtype}",
                 case=case_text)
    assert_close(got["scaled_loss"], expected["scaled_loss"], what="scaler.scale(loss)",
                 case=case_text)
    assert_close(got["scaled_grad"], expected["scaled_grad"],
                 what="x.grad after scaler.scale(loss).backward() (2x times the scale)",
                 case=case_text)
    assert_close(got["unscaled"]["grad"], expected["unscaled"]["grad"],
                 what="x.grad after scaler.unscale_(opt)", case=case_text)
    assert_equal(got["unscaled"]["same_object"], True,
                 what="x.grad is the same tensor after unscale_ (it unscales in place)",
                 case=case_text)
    assert_equal(got["returned"], expected["returned"],
                 what="scaler.step(opt) returns what opt.step() returned", case=case_text)
    assert_close(got["param"], expected["param"], what="x after scaler.step(opt)",
                 case=case_text)
    assert_close(np.asarray(got["scale_after"], np.float64),
                 np.asarray(expected["scale_after"], np.float64), rtol=1.3e-6, atol=0.0,
                 what="scaler.get_scale() after update()", case=case_text)


def _expect_errors(got, expected, keys, case):
    for key, what in keys:
        exp = expected[key]
        assert_raises_like(got[key], exp["type"], what=what, case=case,
                           contains=(exp["message"],) if exp["type"] else ())


ERRORS_CASE = ('scaler = tt.amp.GradScaler("cpu", init_scale=4.0); p.grad = [4., 4.]; '
               "opt = Plain([p], lr=0.1)")


@task("4.3")
def test_call_order_errors(submission):
    """unscale_ twice before update, unscale_ after step, step twice: PyTorch's
    RuntimeErrors (and the gradients are unscaled once); after update() a new iteration
    may unscale again."""
    values = _scaler_values("errors")
    got = submission.call("amp.errors", **values)
    expected = oracle.errors(**values)
    conform(got, loose(expected), what="amp.errors")
    _expect_errors(got, expected, [
        ("unscale_twice", "scaler.scale(loss); scaler.unscale_(opt); scaler.unscale_(opt)"),
        ("unscale_after_step", "scaler.unscale_(opt); scaler.step(opt); scaler.unscale_(opt)"),
        ("step_twice", "scaler.step(opt); scaler.step(opt) before update()"),
        ("unscale_after_update", "scaler.update(); scaler.scale(loss); scaler.unscale_(opt)"),
    ], ERRORS_CASE)
    assert_close(got["grad_after_unscale_twice"], expected["grad_after_unscale_twice"],
                 what="p.grad after the refused second unscale_ (unscaled once: 4 / 4)",
                 case=ERRORS_CASE)
    assert_equal(got["steps_taken"], expected["steps_taken"],
                 what="number of opt.step() calls after step(), refused step()",
                 case=ERRORS_CASE)


@task("4.3")
def test_fp16_gradients_refused(submission):
    """float16 gradients: unscale_ and step raise "Attempting to unscale FP16 gradients."
    before changing any gradient, and the optimizer does not step."""
    values = _scaler_values("errors")
    got = submission.call("amp.errors", **values)
    expected = oracle.errors(**values)
    conform(got, loose(expected), what="amp.errors")
    case = (ERRORS_CASE + "; half = tt.nn.Parameter(tt.ones(2, dtype=tt.float16)); "
            "half.grad = tt.full((2,), 4.0, dtype=tt.float16); opt = Plain([p, half])")
    _expect_errors(got, expected, [("fp16_unscale", "scaler.unscale_(opt)"),
                                   ("fp16_step", "scaler.step(opt)")], case)
    assert_close(got["fp16_other_grad"], expected["fp16_other_grad"],
                 what="p.grad (float32) after the refused unscale_: every gradient is checked "
                      "before any is unscaled", case=case)
    assert_equal(got["fp16_steps_taken"], expected["fp16_steps_taken"],
                 what="number of opt.step() calls", case=case)


@task("4.3")
def test_misuse_errors(submission):
    """unscale_/step/update before any scale() (AssertionError, "_scale is None"),
    update() with no step recorded, step(closure=...), and the constructor's checks on
    growth_factor and backoff_factor (skipped when disabled)."""
    values = _scaler_values("errors")
    got = submission.call("amp.errors", **values)
    expected = oracle.errors(**values)
    conform(got, loose(expected), what="amp.errors")
    _expect_errors(got["before_scale"], expected["before_scale"], [
        ("unscale_", "scaler.unscale_(opt) before any scaler.scale()"),
        ("step", "scaler.step(opt) before any scaler.scale()"),
        ("update", "scaler.update() before any scaler.scale()"),
    ], ERRORS_CASE)
    _expect_errors(got, expected, [
        ("update_without_step", "scaler.scale(loss); scaler.update() with no step()"),
        ("closure", "scaler.step(opt, closure=fn)"),
        ("growth_factor_1", 'tt.amp.GradScaler("cpu", growth_factor=1.0)'),
        ("backoff_factor_1", 'tt.amp.GradScaler("cpu", backoff_factor=1.0)'),
        ("disabled_bad_factors",
         'tt.amp.GradScaler("cpu", growth_factor=0.5, backoff_factor=2.0, enabled=False)'),
    ], ERRORS_CASE)


def _scaler_values(key: str, new_scale: bool = False) -> dict[str, float]:
    """The gradient value and init_scale of the hand-written scaler cases (4.0 and 4.0 at
    grading seed 0), and update's new scale (16.0), powers of two drawn from the seed."""
    values = {"grad_value": 4.0, "init_scale": 4.0, **({"new_scale": 16.0} if new_scale else {})}
    if grading_seed():
        rng = case_rng(0, "4.3 scaler values", key)
        values = {"grad_value": 2.0 ** int(rng.integers(-2, 7)),
                  "init_scale": 2.0 ** int(rng.integers(1, 9)),
                  **({"new_scale": 2.0 ** int(rng.integers(1, 21))} if new_scale else {})}
    return values


EDGES_CASE = ('scaler = tt.amp.GradScaler("cpu", init_scale=4.0); opt = Plain([p], lr=0.1) '
               "for a float32 p of 2 elements")


@task("4.3")
def test_step_without_gradients_and_found_inf(submission):
    """step() for an optimizer none of whose parameters has a gradient: PyTorch's
    AssertionError, and no step; the found_inf flags unscale_ records (one per device):
    0-d float32 tensors, 0 for finite gradients."""
    keys = ["step_without_gradients", "steps_taken", "found_inf"]
    values = _scaler_values("edges", new_scale=True)
    got = submission.call("amp.scaler_edges", keys, **values)
    expected = oracle.scaler_edges(keys, **values)
    conform(got, loose(expected), what="amp.scaler_edges")
    _expect_errors(got, expected, [("step_without_gradients",
                                    "scaler.scale(loss); scaler.step(opt) with p.grad None")],
                   EDGES_CASE)
    assert_equal(got["steps_taken"], expected["steps_taken"],
                 what="number of opt.step() calls after the refused step()", case=EDGES_CASE)
    assert_equal(got["found_inf"], expected["found_inf"],
                 what="[dtype, shape, value] of each tensor in scaler._found_inf_per_device(opt) "
                      "after p.grad = [4., 4.]; scaler.unscale_(opt)", case=EDGES_CASE)


@task("4.3")
def test_update_with_a_new_scale_tensor(submission):
    """update(new_scale=t) takes a 1-element tensor that does not require grad (0-d here:
    PyTorch's CPU scale is 0-d) and refuses others with PyTorch's AssertionError."""
    keys = ["two_elements", "requires_grad", "zero_dim", "scale"]  # (found_inf: the test above)
    values = _scaler_values("edges", new_scale=True)
    got = submission.call("amp.scaler_edges", keys, **values)
    expected = oracle.scaler_edges(keys, **values)
    conform(got, loose(expected), what="amp.scaler_edges")
    for key, call in (("two_elements", "scaler.update(tt.tensor([2., 3.]))"),
                      ("requires_grad", "scaler.update(tt.tensor(2., requires_grad=True))")):
        # PyTorch names its tensor types where tinytrain has tinytrain.Tensor
        assert_raises_like(got[key], expected[key]["type"], what=call, case=EDGES_CASE,
                           contains=("new_scale should be a float or a 1-element",
                                     "with requires_grad=False"))
    assert_raises_like(got["zero_dim"], None, what="scaler.update(tt.tensor(16.))",
                       case=EDGES_CASE)
    assert_equal(got["scale"], expected["scale"],
                 what="scaler.get_scale() after scaler.update(tt.tensor(16.))", case=EDGES_CASE)


@task("4.3")
def test_disabled(submission):
    """GradScaler(enabled=False): scale() returns its argument itself, unscale_ and
    update do nothing, step() always calls optimizer.step() (even with inf gradients),
    get_scale() is 1.0, state_dict() is {} and load_state_dict ignores its argument."""
    grads = seeded_values([2.0, 4.0], "4.3 disabled")
    grads = [grads[0], float("inf"), grads[1]]
    got = submission.call("amp.disabled", grads)
    expected = oracle.disabled(grads)
    conform(got, loose(expected), what="amp.disabled")
    case = ('scaler = tt.amp.GradScaler("cpu", enabled=False); opt = Plain([p], lr=0.5); '
            "p = ones(3); p.grad = [2, inf, 4]")
    for key, what in (("identity", "scaler.scale(x) is x"),
                      ("nested_identity", "scaler.scale(nested) is nested"),
                      ("is_enabled", "scaler.is_enabled()"),
                      ("returned", "scaler.step(opt) (what opt.step() returned)"),
                      ("steps_taken", "number of opt.step() calls"),
                      ("scale", "scaler.get_scale()"),
                      ("tracker", "scaler._get_growth_tracker()"),
                      ("state_dict", "scaler.state_dict()")):
        assert_equal(got[key], expected[key], what=what, case=case)
    assert_close(got["grad_after_unscale"], expected["grad_after_unscale"],
                 what="p.grad after scaler.unscale_(opt) (untouched)", case=case)
    assert_close(got["param"], expected["param"], what="p after scaler.step(opt)", case=case)
    assert_raises_like(got["load"], None, what="scaler.load_state_dict({})", case=case)


DEMO = {"k": 2.0**-17, "lr": 1e6, "iterations": 5, "growth_interval": 2}


@task("4.3")
def test_loss_scaling_rescues_underflowing_fp16_gradients(submission):
    """The course's demonstration. The fp16 loss k * sum(half(w) * x) has true gradients
    k * x of about 1e-9, below float16's smallest subnormal (6e-8): without loss scaling
    every gradient underflows to zero and training does not move. With dynamic loss
    scaling (init_scale 2**16) the first iteration overflows (2**16 is inf in float16), is
    skipped and the scale backs off to 2**15; from then on the scaled gradients survive in
    float16, are unscaled in float32, and the weights move; after growth_interval clean
    steps the scale tries 2**16 again, overflows again and backs off."""
    rng = case_rng(0, "4.3 underflow demo")
    w = rng.standard_normal(6).astype(np.float32)
    x = rng.uniform(1e-4, 1e-3, 6).astype(np.float16)
    got = submission.call("amp.underflow_demo", w, x, **DEMO)
    expected = oracle.underflow_demo(w, x, **DEMO)
    conform(got, loose(expected), what="amp.underflow_demo")
    case = (f"w = tt.nn.Parameter(tt.tensor({literal(w)})); x = {literal(x)} (float16); "
            f"loss = {DEMO['k']!r} * sum(w.half() * x); opt = Plain([w], lr={DEMO['lr']!r}); "
            f"scaler = tt.amp.GradScaler('cpu', growth_interval={DEMO['growth_interval']})")
    # the story holds in torch (guards the demonstration itself)
    assert not expected["without"]["grad"].any()
    assert [r["stepped"] for r in expected["with"]] == [False, True, True, False, True]
    assert all(r["grad"].all() for r in expected["with"] if r["stepped"])

    assert_close(got["without"]["grad"], expected["without"]["grad"],
                 what="w.grad after loss.backward() without scaling (all zero: underflow)",
                 case=case)
    # the gradients are ~1e-9: compared relatively (atol 0), they are exact in torch
    tol = {"rtol": 1.3e-6, "atol": 0.0}
    for n, (g, e) in enumerate(zip(got["with"], expected["with"], strict=True), start=1):
        where = f"iteration {n} of scaler.scale(loss).backward(); scaler.step(opt); " \
                f"scaler.update() (scale {e['scale_used']:g})"
        assert_equal(g["found_inf"], e["found_inf"], what=f"{where}: found_inf", case=case)
        assert_equal(g["stepped"], e["stepped"],
                     what=f"{where}: whether opt.step() ran", case=case)
        assert_close(g["grad"], e["grad"], what=f"{where}: w.grad after step (unscaled)",
                     case=case, **tol)
        assert_close(np.asarray(g["scale"], np.float64), np.asarray(e["scale"], np.float64),
                     what=f"{where}: scaler.get_scale() after update", case=case, **tol)
        assert_close(g["param"], e["param"], what=f"{where}: w", case=case)
