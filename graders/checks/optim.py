"""Comparing an optimizer run (parameters and state after every step) with torch's."""

from __future__ import annotations

from typing import Any

import numpy as np

from .compare import assert_close, assert_equal, literal


def _number(value: Any) -> Any:
    try:
        return float(np.asarray(value))
    except (TypeError, ValueError):
        return value


def _array_literal(value: Any) -> str:
    if value is None:
        return "None"
    return f"tt.tensor({literal(value)}, dtype=tt.{np.asarray(value).dtype.name})"


def reproducer(run: dict[str, Any]) -> str:
    """tinytrain code that performs ``run`` (see graders.strategies.optim.runs)."""
    lines = ["import numpy as np", "import tinytrain as tt", "params = ["]
    groups = []
    start = 0
    for group in run["groups"]:
        for value in group["params"]:
            lines.append(f"    tt.nn.Parameter({_array_literal(value)}),")
        end = start + len(group["params"])
        extra = "".join(f", {k!r}: {v!r}" for k, v in group.get("options", {}).items())
        groups.append(f"{{'params': params[{start}:{end}]{extra}}}")
        start = end
    lines.append("]")
    options = ", ".join(f"{k}={v!r}" for k, v in run["options"].items())
    lines.append(f"opt = tt.optim.{run['kind']}([{', '.join(groups)}], {options})")
    lines.append("grads = [")
    for step in run["grads"]:
        lines.append("    [" + ", ".join(_array_literal(g) for g in step) + "],")
    lines.append("]")
    lines += [
        "",
        "",
        "def values(x):  # NumPy arrays print 8 digits (a tensor prints 4)",
        "    if isinstance(x, dict):",
        "        return {k: values(v) for k, v in x.items()}",
        "    return x.data if isinstance(x, tt.Tensor) else x",
        "",
        "",
        "for k, step in enumerate(grads):",
        "    for p, g in zip(params, step):",
        "        p.grad = g",
        "    arrays = [p.data for p in params]",
        "    opt.step()",
        '    print("step", k + 1, [p.data for p in params])',
        '    print("  state:", [values(opt.state.get(p)) for p in params])',
        "    # PyTorch: each .grad as given, each parameter updated in place",
        '    print("  .grad after step():", [values(p.grad) for p in params])',
        '    print("  updated in place:", [np.shares_memory(p.data, a) for p, a in '
        "zip(params, arrays)])",
    ]
    return "\n".join(lines)


def steps_template(run: dict[str, Any]) -> list[list[Any]]:
    """The structure of ``graders.probes.optim``'s record of a run (for
    ``graders.checks.structure.conform``): per step, per parameter, its value and a
    state dict (whose keys the comparison checks)."""
    from .structure import Kind

    n = sum(len(group["params"]) for group in run["groups"])
    return [[{"param": Kind(np.ndarray), "state": Kind(dict), "grad": Kind(None, np.ndarray),
              "in_place": Kind(bool)}] * n] * len(run["grads"])


def assert_run_matches(got: list[list[Any]], expected: list[list[Any]], run: dict[str, Any],
                       ) -> None:
    """Parameters and optimizer state must match torch's after every step.

    Also: each parameter's .grad after the step (exactly as given: the step must not
    change it) and whether it was updated in place.

    Tolerance: torch.testing's default for the dtype (float32: rtol 1.3e-6, atol 1e-5;
    float64: 1e-7, 1e-7). A NumPy update
    following torch's formulas differs from torch's kernels only by float32 rounding (torch
    fuses some multiply-adds); with the strategies' value ranges the reference stays under
    0.2 of this tolerance over thousands of random runs. The step count must be exact.
    """
    options = ", ".join(f"{k}={v!r}" for k, v in run["options"].items())
    case = f"{run['kind']}({options})"
    if any("options" in g for g in run["groups"]):
        case += "; group options " + "; ".join(
            f"group {i}: {g.get('options', 'defaults')}" for i, g in enumerate(run["groups"]))
    special = [(k + 1, i) for k, step in enumerate(run["grads"]) for i, g in enumerate(step)
               if g is not None and not np.all(np.isfinite(g))]
    if special:
        case += "; with a NaN gradient entry (step, parameter #): " + ", ".join(
            f"({k}, {i})" for k, i in special)
    repro = reproducer(run)
    assert_equal(len(got), len(expected), what="number of steps recorded")
    for k, (got_step, exp_step) in enumerate(zip(got, expected, strict=True)):
        for i, (g, e) in enumerate(zip(got_step, exp_step, strict=True)):
            where = f"after step {k + 1}, parameter #{i}"
            assert_close(g["param"], e["param"], what=f"{where}: its value", case=case,
                         reproducer=repro)
            assert_close(g["grad"], e["grad"], rtol=0, atol=0, case=case, reproducer=repro,
                         what=f"{where}: its .grad after step() (the step reads the gradient "
                              "and must not change it: work on copies)")
            assert_equal(g["in_place"], e["in_place"], case=case, reproducer=repro,
                         what=f"{where}: updated in place (param.data keeps its array, so "
                              "views and state_dict() references see the new value)")
            assert_equal(sorted(g["state"]), sorted(e["state"]),
                         what=f"{where}: the keys of optimizer.state[param]", case=case,
                         reproducer=repro)
            for key, value in e["state"].items():
                if key == "step":  # a count: any number type or scalar tensor will do
                    assert_equal(_number(g["state"][key]), _number(value),
                                 what=f"{where}: state['step']", case=case, reproducer=repro)
                else:
                    assert_close(g["state"][key], value, what=f"{where}: state[{key!r}]",
                                 case=case, reproducer=repro)


def assert_state_dtypes(got: dict[str, Any], expected: dict[str, Any], case: str) -> None:
    """The parameter keeps its dtype and each state entry has torch's dtype."""
    from .structure import Kind, conform

    conform(got, {"param": Kind(None, str), "state": Kind(dict)}, what="optim.state_dtypes")
    assert_equal(got["param"], expected["param"], what="the parameter's dtype after step()",
                 case=case)
    assert_equal(sorted(got["state"]), sorted(expected["state"]),
                 what="the keys of optimizer.state[param]", case=case)
    assert_equal(got["state"], expected["state"],
                 what="dtype of each state entry (the parameter's dtype; 'step' float32)",
                 case=case)
