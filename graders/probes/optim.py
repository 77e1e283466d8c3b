"""Probes for tasks 5.2-5.5: optimizers and learning-rate schedulers.

Gradients are set directly on ``.grad`` (no operators, no backward), so these tasks do
not depend on the engine or on any operator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import probe
from ._observe import array, raised


def _params(tt: Any, groups: list[dict[str, Any]]) -> tuple[list[Any], list[dict[str, Any]]]:
    """Parameters for each group's arrays, and the param groups to give the optimizer."""
    flat, param_groups = [], []
    for group in groups:
        params = [tt.nn.Parameter(tt.tensor(np.asarray(v))) for v in group["params"]]
        flat.extend(params)
        param_groups.append({"params": params, **group.get("options", {})})
    return flat, param_groups


def _value(value: Any) -> Any:
    if hasattr(value, "data") and isinstance(value.data, np.ndarray):
        return array(value)
    if isinstance(value, np.ndarray):
        return np.array(value, copy=True)
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, float, np.number)):
        return float(value)
    return repr(value)


def _dtype_name(value: Any) -> str | None:
    dtype = getattr(value, "dtype", None)
    return getattr(dtype, "name", None if dtype is None else str(dtype))


def _state(opt: Any, param: Any) -> dict[str, Any]:
    state = opt.state.get(param, {}) if hasattr(opt.state, "get") else {}
    return {str(k): _value(v) for k, v in state.items()}


def _set_grads(tt: Any, params: list[Any], grads: list[Any]) -> None:
    for p, g in zip(params, grads, strict=True):
        p.grad = None if g is None else tt.tensor(np.asarray(g))


def _run(tt: Any, opt: Any, params: list[Any], grads: list[list[Any]]) -> list[list[Any]]:
    """Per step: set the grads, step; then each parameter's value, its state, its .grad
    (which step() must leave alone) and whether it was updated in place (its array is
    the one it had before the step)."""
    seen = []
    for step in grads:
        _set_grads(tt, params, step)
        arrays = [p.data for p in params]
        opt.step()
        seen.append([{"param": array(p), "state": _state(opt, p),
                      "grad": None if p._grad is None else array(p._grad),
                      "in_place": p.data is a or bool(np.shares_memory(p.data, a))}
                     for p, a in zip(params, arrays, strict=True)])
    return seen


@probe
def steps(tt: Any, kind: str, options: dict[str, Any], groups: list[dict[str, Any]],
          grads: list[list[Any]]) -> list[list[Any]]:
    """``tt.optim.<kind>(param_groups, **options)``; per step, set every ``.grad`` (None
    where the step's entry is None), call ``step()``, and record each parameter and its
    optimizer state."""
    params, param_groups = _params(tt, groups)
    opt = getattr(tt.optim, kind)(param_groups, **options)
    return _run(tt, opt, params, grads)


@probe
def steps_grad_written_in_place(tt: Any, kind: str, options: dict[str, Any],
                                param: np.ndarray, grads: list[np.ndarray]) -> list[Any]:
    """``tt.optim.<kind>([p], **options)`` where p keeps one .grad tensor that each step
    after the first overwrites in place (as backward accumulating into a zeroed grad
    does); after each step: p, its state and its grad."""
    p = tt.nn.Parameter(tt.tensor(np.asarray(param)))
    opt = getattr(tt.optim, kind)([p], **options)
    p.grad = tt.tensor(np.array(grads[0], copy=True))
    seen = []
    for i, g in enumerate(grads):
        if i:
            p.grad.data[...] = g
        opt.step()
        seen.append({"param": array(p), "state": _state(opt, p), "grad": array(p.grad)})
    return seen


@probe
def state_dtypes(tt: Any, kind: str, options: dict[str, Any], dtype: str,
                 param: list[float] | None = None,
                 grads: list[float] | None = None) -> dict[str, Any]:
    """Two steps of ``tt.optim.<kind>(**options)`` on a parameter of ``dtype`` (float16,
    bfloat16 ...) with gradients of that dtype: the dtype of the parameter and of each
    state entry afterwards. ``param`` (four values) and ``grads`` (one value per step)
    come from the grader (a linspace and 0.5, -0.25 by default)."""
    np_dtype = getattr(tt, dtype).np
    start = np.linspace(-1.0, 1.0, 4) if param is None else np.asarray(param, np.float64)
    p = tt.nn.Parameter(tt.tensor(start.astype(np_dtype)))
    opt = getattr(tt.optim, kind)([p], **options)
    for value in (0.5, -0.25) if grads is None else grads:
        p.grad = tt.tensor(np.full(4, value).astype(np_dtype))
        opt.step()
    state = opt.state.get(p, {}) if hasattr(opt.state, "get") else {}
    return {"param": _dtype_name(p.data),
            "state": {str(k): _dtype_name(getattr(v, "data", v)) for k, v in state.items()}}


@probe
def state_dtypes_numpy_options(tt: Any, kind: str, options: dict[str, Any],
                               dtype: str, **values: Any) -> dict[str, Any]:
    """``state_dtypes`` with each float option a NumPy float64 scalar (as ``np.logspace``
    gives; unlike a Python float, it promotes the arrays it multiplies to float64)."""
    options = {k: np.float64(v) if isinstance(v, float) else v for k, v in options.items()}
    return state_dtypes(tt, kind, options, dtype, **values)


# ----- the Optimizer base class, with a small optimizer of the probe's own -------------
def toy_class(tt: Any) -> type:
    """``Toy``: trace = decay * trace + grad; p -= lr * trace. State: "step" (a float32
    scalar tensor, like Adam's) and "trace". It uses only what the Optimizer base class
    provides, so task 5.2 is graded without SGD or Adam."""

    class Toy(tt.optim.Optimizer):
        def __init__(self, params: Any, lr: float = 0.1, decay: float = 0.5) -> None:
            super().__init__(params, {"lr": lr, "decay": decay})

        def step(self) -> None:
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = tt.tensor(np.zeros((), np.float32))
                        state["trace"] = tt.tensor(np.zeros_like(p.data))
                    state["step"].data += 1
                    trace = state["trace"].data
                    trace *= group["decay"]
                    trace += p.grad.data
                    p.data -= group["lr"] * trace

    return Toy


def _plain_state_dict(sd: dict[str, Any]) -> dict[str, Any]:
    state = sd["state"]
    return {
        "state_keys": [[type(k).__name__, str(k)] for k in state],
        "state": {str(k): {str(n): _value(v) for n, v in s.items()} for k, s in state.items()},
        "param_groups": [{str(k): list(v) if k == "params" else _value(v)
                          for k, v in g.items()} for g in sd["param_groups"]],
    }


@probe
def toy_state_dict(tt: Any, groups: list[dict[str, Any]], grads: list[list[Any]],
                   extra_group: dict[str, Any] | None) -> dict[str, Any]:
    """Run the Toy optimizer, optionally add a param group, and return state_dict()."""
    params, param_groups = _params(tt, groups)
    opt = toy_class(tt)(param_groups, lr=0.1, decay=0.5)
    _run(tt, opt, params, grads)
    if extra_group is not None:
        _, [group] = _params(tt, [extra_group])
        opt.add_param_group(group)
    return _plain_state_dict(opt.state_dict())


@probe
def toy_resume(tt: Any, groups: list[dict[str, Any]], before: list[list[Any]],
               after: list[list[Any]], float64: bool) -> dict[str, Any]:
    """Run Toy for the ``before`` steps, save its state_dict, load it into a new Toy (other
    lr and decay) over copies of the parameters (in float64 when asked), then run the new
    one for the ``after`` steps."""
    params, param_groups = _params(tt, groups)
    toy = toy_class(tt)
    first = toy(param_groups, lr=0.1, decay=0.5)
    _run(tt, first, params, before)
    saved = first.state_dict()
    dtype = np.float64 if float64 else np.float32
    copies, copy_groups = [], []
    for group in first.param_groups:
        new = [tt.nn.Parameter(tt.tensor(np.asarray(p.data, dtype=dtype)))
               for p in group["params"]]
        copies.extend(new)
        copy_groups.append({"params": new})
    second = toy(copy_groups, lr=0.7, decay=0.9)
    second.load_state_dict(saved)
    loaded = {
        "hyper": [[g["lr"], g["decay"]] for g in second.param_groups],
        "params_are_own": [all(p is q for p, q in zip(g["params"], own["params"], strict=True))
                           for g, own in zip(second.param_groups, copy_groups, strict=True)],
        "state": [_state(second, p) for p in copies],
        "state_dtypes": [{str(k): _dtype_name(v) for k, v in second.state.get(p, {}).items()}
                         for p in copies],
    }
    return {"loaded": loaded, "steps": _run(tt, second, copies, after)}


@probe
def load_state_dict_errors(tt: Any, sizes: list[list[int]] | None = None) -> dict[str, Any]:
    """Loading a state_dict with another number of groups, or another group size
    (``sizes``, the grader's: the saved groups' sizes, the one-group optimizer's, and the
    other sizes; [1, 2], [3], [2, 1] by default)."""
    toy = toy_class(tt)

    def make(sizes: list[int]) -> Any:
        groups = [{"params": [tt.nn.Parameter(tt.tensor(np.zeros(2, np.float32)))
                              for _ in range(n)]} for n in sizes]
        return toy(groups)

    saved_sizes, one_group, other_sizes = sizes or ([1, 2], [3], [2, 1])
    saved = make(saved_sizes).state_dict()
    return {
        "groups": raised(lambda: make(one_group).load_state_dict(saved)),
        "sizes": raised(lambda: make(other_sizes).load_state_dict(saved)),
    }


@probe
def load_state_dict_leaves_it(tt: Any, values: dict[str, Any] | None = None) -> dict[str, Any]:
    """Load a state_dict (state holding Python numbers besides tensors) into a base
    Optimizer, set the loaded optimizer's lr, then load the same dict into a third: what
    each loaded, and the dict's own groups afterwards. ``values`` (the grader's): count,
    scale, buf, lr and the new lr (3, 0.5, ones, 0.1, 9.0 by default)."""
    v = {"count": 3, "scale": 0.5, "buf": [1.0, 1.0], "lr": 0.1, "new_lr": 9.0,
         **(values or {})}

    def make() -> Any:
        return tt.optim.Optimizer([tt.nn.Parameter(tt.tensor(np.zeros(2, np.float32)))
                                   for _ in range(2)], {"lr": v["lr"]})

    def plain(opt: Any) -> dict[str, Any]:
        return {str(k): _value(v) for k, v in opt.state[opt.param_groups[0]["params"][0]].items()}

    first = make()
    state = first.state[first.param_groups[0]["params"][0]]
    state["count"], state["scale"] = v["count"], v["scale"]
    state["buf"] = tt.tensor(np.asarray(v["buf"], np.float32))
    saved = first.state_dict()
    second = make()
    second.load_state_dict(saved)
    second.param_groups[0]["lr"] = v["new_lr"]
    third = make()
    again = raised(lambda: third.load_state_dict(saved))
    return {
        "loaded": plain(second),
        "saved params": [type(i).__name__ for i in saved["param_groups"][0]["params"]],
        "saved lr": saved["param_groups"][0]["lr"],
        "load again": again,
        "loaded again": plain(third) if again["type"] is None else None,
    }


@probe
def zero_grad(tt: Any, shapes: list[list[int]]) -> dict[str, Any]:
    """optimizer.zero_grad() and zero_grad(set_to_none=False), on two param groups."""
    params = [tt.nn.Parameter(tt.tensor(np.ones(s, np.float32))) for s in shapes]
    half = len(params) // 2
    opt = tt.optim.SGD([{"params": params[:half]}, {"params": params[half:], "lr": 0.5}],
                       lr=0.1)

    def fill() -> list[Any]:
        for i, p in enumerate(params):
            p.grad = tt.tensor(np.full(tuple(p.shape), i + 1.0, np.float32))
        return [p._grad for p in params]

    fill()
    opt.zero_grad()
    to_none = [p._grad is None for p in params]
    objects = fill()
    versions = [int(g._version) for g in objects]
    opt.zero_grad(set_to_none=False)
    return {
        "grad_versions": [int(g._version) - v for g, v in zip(objects, versions, strict=True)],
        "set_to_none": to_none,
        "zeros": [array(p._grad) for p in params],
        "same_objects": [p._grad is g for p, g in zip(params, objects, strict=True)],
        "params_unchanged": [array(p) for p in params],
    }


# ----- schedulers -------------------------------------------------------------------
LAMBDAS = {
    "exp": lambda epoch: 0.9**epoch,
    "inverse": lambda epoch: 1.0 / (1.0 + epoch),
    "linear": lambda epoch: max(0.0, 1.0 - epoch / 10.0),
}


@probe
def schedule(tt: Any, kind: str, args: dict[str, Any], base_lrs: list[float],
             n_steps: int) -> dict[str, Any]:
    """An SGD optimizer with one group per base lr and a scheduler; the groups' lrs and
    get_last_lr() after construction and after each scheduler.step()."""
    groups = [{"params": [tt.nn.Parameter(tt.tensor(np.zeros(1, np.float32)))], "lr": lr}
              for lr in base_lrs]
    opt = tt.optim.SGD(groups, lr=1.0)
    sched_mod = tt.optim.lr_scheduler
    if kind == "StepLR":
        sched = sched_mod.StepLR(opt, **args)
    elif kind == "LambdaLR":
        fns = [LAMBDAS[name] for name in args["lambdas"]]
        sched = sched_mod.LambdaLR(opt, fns if len(fns) > 1 else fns[0])
    else:
        sched = sched_mod.get_cosine_schedule_with_warmup(opt, **args)
    lrs, last = [], []
    for i in range(n_steps + 1):
        if i:
            sched.step()
        lrs.append([float(g["lr"]) for g in opt.param_groups])
        last.append([float(v) for v in sched.get_last_lr()])
    return {"lrs": lrs, "last_lr": last}
