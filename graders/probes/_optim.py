"""Optimizer and scheduler scenarios (tasks 5.2-5.5) written once against PyTorch's
``torch.optim`` API (as ``_modules``): the probes run them with the submission's tinytrain,
the oracle with torch. Gradients are set directly on ``.grad`` (no operators, no
backward), so these tasks do not depend on the engine or on any operator.

The adapters in ``lib``: ``optim`` (``tt.optim`` or ``torch.optim``), ``optimizer(kind,
groups, **options)`` (torch's single-tensor path), ``Toy`` (the small optimizer of the
probes' own, on each framework's Optimizer base class), ``param(values)``,
``param_copy(p, float64)``, ``set_grad(p, values | None)``, ``grad(p)`` (values or None),
``is_tensor``, ``array``, ``handle(p)`` and ``same_handle(p, h)`` (is p's data still the
array it had, updated in place), ``dtype_name(value)`` (None for a non-tensor),
``cast(values, dtype)`` (a float64 array to a tensor of that dtype name), ``param_of(t)``
and ``set_grad_tensor(p, t)`` (for such a tensor), ``cosine(opt, **args)`` (the
cosine-with-warmup schedule). Nothing here imports torch or the submission.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np


def params(lib: Any, groups: list[dict[str, Any]]) -> tuple[list[Any], list[dict[str, Any]]]:
    """Parameters for each group's arrays, and the param groups to give the optimizer."""
    flat, param_groups = [], []
    for group in groups:
        made = [lib.param(np.asarray(v)) for v in group["params"]]
        flat.extend(made)
        param_groups.append({"params": made, **group.get("options", {})})
    return flat, param_groups


def value(lib: Any, v: Any) -> Any:
    """A state entry as plain data: tensors and arrays as arrays, numbers as floats."""
    if lib.is_tensor(v):
        return lib.array(v)
    if isinstance(v, np.ndarray):
        return np.array(v, copy=True)
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, float, np.number)):
        return float(v)
    return repr(v)


def state(lib: Any, opt: Any, param: Any) -> dict[str, Any]:
    entries = opt.state.get(param, {}) if hasattr(opt.state, "get") else {}
    return {str(k): value(lib, v) for k, v in entries.items()}


def run(lib: Any, opt: Any, params: list[Any], grads: list[list[Any]]) -> list[list[Any]]:
    """Per step: set the grads, step; then each parameter's value, its state, its .grad
    (which step() must leave alone) and whether it was updated in place (its array is
    the one it had before the step)."""
    seen = []
    for step in grads:
        for p, g in zip(params, step, strict=True):
            lib.set_grad(p, None if g is None else np.asarray(g))
        handles = [lib.handle(p) for p in params]
        opt.step()
        seen.append([{"param": lib.array(p), "state": state(lib, opt, p), "grad": lib.grad(p),
                      "in_place": lib.same_handle(p, h)}
                     for p, h in zip(params, handles, strict=True)])
    return seen


def steps(lib: Any, kind: str, options: dict[str, Any], groups: list[dict[str, Any]],
          grads: list[list[Any]]) -> list[list[Any]]:
    """``optim.<kind>(param_groups, **options)``; per step, set every ``.grad`` (None
    where the step's entry is None), call ``step()``, and record each parameter and its
    optimizer state."""
    flat, param_groups = params(lib, groups)
    return run(lib, lib.optimizer(kind, param_groups, **options), flat, grads)


def state_dtypes(lib: Any, kind: str, options: dict[str, Any], dtype: str,
                 param: list[float] | None = None,
                 grads: list[float] | None = None) -> dict[str, Any]:
    """Two steps of ``optim.<kind>(**options)`` on a parameter of ``dtype`` (float16,
    bfloat16 ...) with gradients of that dtype: the dtype of the parameter and of each
    state entry afterwards. ``param`` (four values) and ``grads`` (one value per step)
    come from the grader (a linspace and 0.5, -0.25 by default)."""
    start = np.linspace(-1.0, 1.0, 4) if param is None else np.asarray(param, np.float64)
    p = lib.param_of(lib.cast(start, dtype))
    opt = lib.optimizer(kind, [p], **options)
    for v in (0.5, -0.25) if grads is None else grads:
        lib.set_grad_tensor(p, lib.cast(np.full(4, v, np.float64), dtype))
        opt.step()
    entries = opt.state.get(p, {}) if hasattr(opt.state, "get") else {}
    return {"param": lib.dtype_name(p),
            "state": {str(k): lib.dtype_name(v) for k, v in entries.items()}}


def state_dtypes_numpy_options(lib: Any, kind: str, options: dict[str, Any],
                               dtype: str, **values: Any) -> dict[str, Any]:
    """``state_dtypes`` with each float option a NumPy float64 scalar (as ``np.logspace``
    gives; unlike a Python float, it promotes the arrays it multiplies to float64)."""
    options = {k: np.float64(v) if isinstance(v, float) else v for k, v in options.items()}
    return state_dtypes(lib, kind, options, dtype, **values)


def plain_state_dict(lib: Any, sd: dict[str, Any]) -> dict[str, Any]:
    entries = sd["state"]
    return {
        "state_keys": [[type(k).__name__, str(k)] for k in entries],
        "state": {str(k): {str(n): value(lib, v) for n, v in s.items()}
                  for k, s in entries.items()},
        "param_groups": [{str(k): list(v) if k == "params" else value(lib, v)
                          for k, v in g.items()} for g in sd["param_groups"]],
    }


def toy_state_dict(lib: Any, groups: list[dict[str, Any]], grads: list[list[Any]],
                   extra_group: dict[str, Any] | None) -> dict[str, Any]:
    """Run the Toy optimizer, optionally add a param group, and return state_dict()."""
    flat, param_groups = params(lib, groups)
    opt = lib.Toy(param_groups, lr=0.1, decay=0.5)
    run(lib, opt, flat, grads)
    if extra_group is not None:
        _, [group] = params(lib, [extra_group])
        opt.add_param_group(group)
    return plain_state_dict(lib, opt.state_dict())


def toy_resume(lib: Any, groups: list[dict[str, Any]], before: list[list[Any]],
               after: list[list[Any]], float64: bool) -> dict[str, Any]:
    """Run Toy for the ``before`` steps, save its state_dict, load it into a new Toy (other
    lr and decay) over copies of the parameters (in float64 when asked), then run the new
    one for the ``after`` steps."""
    flat, param_groups = params(lib, groups)
    first = lib.Toy(param_groups, lr=0.1, decay=0.5)
    run(lib, first, flat, before)
    saved = first.state_dict()
    copies, copy_groups = [], []
    for group in first.param_groups:
        new = [lib.param_copy(p, float64) for p in group["params"]]
        copies.extend(new)
        copy_groups.append({"params": new})
    second = lib.Toy(copy_groups, lr=0.7, decay=0.9)
    second.load_state_dict(saved)
    loaded = {
        "hyper": [[g["lr"], g["decay"]] for g in second.param_groups],
        "params_are_own": [all(p is q for p, q in zip(g["params"], own["params"], strict=True))
                           for g, own in zip(second.param_groups, copy_groups, strict=True)],
        "state": [state(lib, second, p) for p in copies],
        "state_dtypes": [{str(k): lib.dtype_name(v) for k, v in second.state.get(p, {}).items()}
                         for p in copies],
    }
    return {"loaded": loaded, "steps": run(lib, second, copies, after)}


LAMBDAS = {
    "exp": lambda epoch: 0.9**epoch,
    "inverse": lambda epoch: 1.0 / (1.0 + epoch),
    "linear": lambda epoch: max(0.0, 1.0 - epoch / 10.0),
}


def schedule(lib: Any, kind: str, args: dict[str, Any], base_lrs: list[float],
             n_steps: int) -> dict[str, Any]:
    """An SGD optimizer with one group per base lr and a scheduler; the groups' lrs and
    get_last_lr() after construction and after each scheduler.step()."""
    groups = [{"params": [lib.param(np.zeros(1, np.float32))], "lr": lr} for lr in base_lrs]
    opt = lib.optim.SGD(groups, lr=1.0)
    sched_mod = lib.optim.lr_scheduler
    if kind == "StepLR":
        sched = sched_mod.StepLR(opt, **args)
    elif kind == "LambdaLR":
        fns = [LAMBDAS[name] for name in args["lambdas"]]
        sched = sched_mod.LambdaLR(opt, fns if len(fns) > 1 else fns[0])
    else:
        sched = lib.cosine(opt, **args)
    lrs, last = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: "lr_scheduler.step() before optimizer.step()"
        for i in range(n_steps + 1):
            if i:
                sched.step()
            lrs.append([float(g["lr"]) for g in opt.param_groups])
            last.append([float(v) for v in sched.get_last_lr()])
    return {"lrs": lrs, "last_lr": last}
