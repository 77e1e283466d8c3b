"""Comparing a GradScaler run (graders.strategies.amp.runs) with torch's, iteration by
iteration, with a description and a tinytrain reproducer of the run so far."""

from __future__ import annotations

from typing import Any

import numpy as np

from .compare import assert_close, assert_equal, literal

# The scale is a float32 number: torch computes every update in float64 and rounds it once
# (float32(float64(scale) * factor), checked in torch 2.13 on CPU), so it is compared
# exactly: a scale grown or backed off with a float32 multiply is one ulp off for about half
# of the non-power-of-two factors.
SCALE_RTOL = 0.0
# The unscaled gradients are exact too: torch multiplies each gradient by the float32
# inverse scale float32(1 / float64(scale)) (a float64 gradient by that float32 value), one
# rounding in the gradient's dtype; an inverse scale left in float64 rounds a float32
# gradient twice and a float64 one not at all.
UNSCALE_TOL = {"rtol": 0.0, "atol": 0.0}
# Parameters at float32's tolerance: the optimizers' own arithmetic is graded elsewhere.
FLOAT32_TOL = {"rtol": 1.3e-6, "atol": 1e-5}


def config_call(config: dict[str, Any]) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in config.items())
    return f'tt.amp.GradScaler("cpu", {args})'


def describe(run: dict[str, Any], upto: int) -> str:
    """The scaler and what happened in iterations 1..upto."""
    events = []
    for k, step in enumerate(run["steps"][:upto]):
        parts = []
        for o, hit in enumerate(step["overflow"]):
            if hit:
                parts.append(f"inf/NaN in optimizer {o}'s grads")
            if step["unscale_first"][o]:
                parts.append(f"unscale_(opt{o}) before step")
        if step["new_scale"] is not None:
            parts.append(f"update(new_scale={step['new_scale']!r})")
        events.append(f"{k + 1}: " + (", ".join(parts) if parts else "clean"))
    return f"scaler = {config_call(run['config'])}; iterations " + "; ".join(events)


def _array(value: Any) -> str:
    if value is None:
        return "None"
    value = np.asarray(value)
    text = literal(value).replace("inf", "np.inf").replace("nan", "np.nan")
    return f"np.array({text}, dtype=np.{value.dtype.name})"


PLAIN = '''class Plain(tt.optim.Optimizer):  # the graders' optimizer
    def __init__(self, params, lr):
        super().__init__(params, {"lr": lr})

    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.data -= group["lr"] * p.grad.data'''


def reproducer(run: dict[str, Any], upto: int) -> str:
    """tinytrain code playing iterations 1..upto of ``run``."""
    lines = ["import numpy as np", "import tinytrain as tt", "", PLAIN, "",
             "params = [" + ", ".join(f"tt.nn.Parameter(tt.tensor({_array(v)}))"
                                      for v in run["params"]) + "]"]
    for o, lr in enumerate(run["lrs"]):
        mine = [i for i, owner in enumerate(run["owners"]) if owner == o]
        lines.append(f"opt{o} = Plain([{', '.join(f'params[{i}]' for i in mine)}], lr={lr!r})")
    lines.append(f"scaler = {config_call(run['config'])}")
    for k, step in enumerate(run["steps"][:upto]):
        lines.append(f"# iteration {k + 1}")
        lines.append(f"scaler.scale(tt.tensor(np.float32({step['loss']!r})))")
        lines.append("true_grads = [" + ", ".join(_array(g) for g in step["grads"]) + "]")
        lines.append("for p, g in zip(params, true_grads):  # what a scaled backward gives")
        lines.append("    p.grad = None if g is None else "
                     "tt.tensor(g * g.dtype.type(scaler.get_scale()))")
        for o, first in enumerate(step["unscale_first"]):
            if first:
                lines.append(f"scaler.unscale_(opt{o})")
            lines.append(f"print(scaler.step(opt{o}), scaler._found_inf_per_device(opt{o}))")
        new_scale = "" if step["new_scale"] is None else repr(step["new_scale"])
        lines.append(f"scaler.update({new_scale})")
        lines.append("print(scaler.get_scale(), scaler._get_growth_tracker(), "
                     "[p.grad for p in params], params)")
    return "\n".join(lines)


def assert_run_matches(got: list[dict[str, Any]], expected: list[dict[str, Any]],
                       run: dict[str, Any], offset: int = 0, label: str = "") -> None:
    """Every iteration: per optimizer, found_inf, whether optimizer.step() ran and what
    scaler.step returned, the gradients after unscale_ and after step; then the scaled
    loss, the scale, the growth tracker and the parameters. ``offset``: iterations
    already played before these (their numbers continue)."""
    assert_equal(len(got), len(expected), what="number of iterations recorded")
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        n = offset + k + 1
        _check_iteration(g, e, f"{label}iteration {n}", describe(run, n), reproducer(run, n))


def _check_iteration(g: dict[str, Any], e: dict[str, Any], where: str, case: str,
                     repro: str) -> None:
    def close(got_value: Any, exp_value: Any, what: str, **kw: Any) -> None:
        assert_close(got_value, exp_value, what=f"{where}: {what}", case=case,
                     reproducer=repro, **kw)

    def equal(got_value: Any, exp_value: Any, what: str) -> None:
        assert_equal(got_value, exp_value, what=f"{where}: {what}", case=case,
                     reproducer=repro)

    for o, (go, eo) in enumerate(zip(g["optimizers"], e["optimizers"], strict=True)):
        equal(go["found_inf"], eo["found_inf"],
              f"opt{o}: found_inf after scaler.step(opt{o}) (sum of "
              f"scaler._found_inf_per_device(opt{o}); 1.0 when its grads hold inf/NaN)")
        equal(go["stepped"], eo["stepped"],
              f"opt{o}: whether scaler.step(opt{o}) called opt{o}.step() (skipped when "
              "found_inf)")
        equal(go["returned"], eo["returned"],
              f"opt{o}: value returned by scaler.step(opt{o}) (optimizer.step()'s result, "
              "None when skipped)")
        if eo["unscaled_early"] is not None:
            for i, (gg, eg) in enumerate(zip(go["unscaled_early"], eo["unscaled_early"],
                                             strict=True)):
                close(gg, eg, f"opt{o}: grad #{i} after scaler.unscale_(opt{o}) (bit-exact, with "
                      "the run's scale and factors)", **UNSCALE_TOL)
        for i, (gg, eg) in enumerate(zip(go["grads"], eo["grads"], strict=True)):
            close(gg, eg, f"opt{o}: grad #{i} after scaler.step(opt{o}) (unscaled, bit-exact "
                          "with the run's scale and factors)", **UNSCALE_TOL)
    close(g["loss"], e["loss"], "value of scaler.scale(loss)")
    close(np.asarray(g["scale"], dtype=np.float64), np.asarray(e["scale"], dtype=np.float64),
          "scaler.get_scale() after update() (bit-exact: torch rounds float64(scale) * "
          "factor to float32 once, for any init_scale, growth_factor and backoff_factor)",
          rtol=SCALE_RTOL, atol=0.0)
    equal(g["tracker"], e["tracker"],
          "growth tracker after update() (scaler._get_growth_tracker(): clean steps in a "
          "row since the last growth or overflow)")
    for i, (gp, ep) in enumerate(zip(g["params"], e["params"], strict=True)):
        close(gp, ep, f"parameter #{i} after the iteration", **FLOAT32_TOL)


def assert_state_dict_matches(got: dict[str, Any], expected: dict[str, Any], *, what: str,
                              case: str | None = None) -> None:
    """Same keys, same Python types, "scale" within SCALE_RTOL, the rest exact."""
    assert_equal(sorted(got), sorted(expected), what=f"keys of {what}", case=case)
    assert_equal({k: type(v).__name__ for k, v in got.items()},
                 {k: type(v).__name__ for k, v in expected.items()},
                 what=f"types of the values of {what}", case=case)
    for key, value in expected.items():
        if key == "scale":
            assert_close(np.asarray(got[key], np.float64), np.asarray(value, np.float64),
                         rtol=SCALE_RTOL, atol=0.0, what=f"{what}['scale']", case=case)
        else:
            assert_equal(got[key], value, what=f"{what}[{key!r}]", case=case)
