"""Probes for tasks 5.2-5.5: optimizers and learning-rate schedulers; the scenarios with
a torch twin are written once in ``_optim``.

Gradients are set directly on ``.grad`` (no operators, no backward), so these tasks do
not depend on the engine or on any operator.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from . import _optim, probe
from ._observe import array, grad, raised


def _lib(tt: Any) -> SimpleNamespace:
    """The adapters ``_optim`` needs, for tinytrain."""

    def set_grad(p: Any, values: np.ndarray | None) -> None:
        p.grad = None if values is None else tt.tensor(np.asarray(values))

    def set_grad_tensor(p: Any, t: Any) -> None:
        p.grad = t

    def param_copy(p: Any, float64: bool) -> Any:
        return tt.nn.Parameter(tt.tensor(np.asarray(p.data, np.float64 if float64 else np.float32)))

    return SimpleNamespace(
        optim=tt.optim,
        optimizer=lambda kind, groups, **options: getattr(tt.optim, kind)(groups, **options),
        Toy=lambda *args, **kwargs: toy_class(tt)(*args, **kwargs),
        param=lambda values: tt.nn.Parameter(tt.tensor(np.asarray(values))),
        param_copy=param_copy,
        param_of=tt.nn.Parameter,
        cast=lambda values, dtype: tt.tensor(values.astype(getattr(tt, dtype).np)),
        set_grad=set_grad,
        set_grad_tensor=set_grad_tensor,
        grad=grad,
        # duck-typed: any object with a NumPy ``.data`` is the submission's tensor
        is_tensor=lambda x: hasattr(x, "data") and isinstance(x.data, np.ndarray),
        array=array,
        handle=lambda p: p.data,
        same_handle=lambda p, a: p.data is a or bool(np.shares_memory(p.data, a)),
        dtype_name=lambda v: _dtype_name(getattr(v, "data", v)),
        cosine=lambda opt, **args: tt.optim.lr_scheduler.get_cosine_schedule_with_warmup(
            opt, **args),
    )


def _dtype_name(value: Any) -> str | None:
    dtype = getattr(value, "dtype", None)
    return getattr(dtype, "name", None if dtype is None else str(dtype))


@probe
def steps(tt: Any, kind: str, options: dict[str, Any], groups: list[dict[str, Any]],
          grads: list[list[Any]]) -> list[list[Any]]:
    """``_optim.steps`` with ``tt.optim.<kind>``."""
    return _optim.steps(_lib(tt), kind, options, groups, grads)


@probe
def steps_grad_written_in_place(tt: Any, kind: str, options: dict[str, Any],
                                param: np.ndarray, grads: list[np.ndarray]) -> list[Any]:
    """``tt.optim.<kind>([p], **options)`` where p keeps one .grad tensor that each step
    after the first overwrites in place (as backward accumulating into a zeroed grad
    does); after each step: p, its state and its grad."""
    lib = _lib(tt)
    p = tt.nn.Parameter(tt.tensor(np.asarray(param)))
    opt = getattr(tt.optim, kind)([p], **options)
    p.grad = tt.tensor(np.array(grads[0], copy=True))
    seen = []
    for i, g in enumerate(grads):
        if i:
            p.grad.data[...] = g
        opt.step()
        seen.append({"param": array(p), "state": _optim.state(lib, opt, p),
                     "grad": array(p.grad)})
    return seen


@probe
def state_dtypes(tt: Any, kind: str, options: dict[str, Any], dtype: str,
                 param: list[float] | None = None,
                 grads: list[float] | None = None) -> dict[str, Any]:
    """``_optim.state_dtypes``: the dtypes of a parameter and its state after two steps."""
    return _optim.state_dtypes(_lib(tt), kind, options, dtype, param, grads)


@probe
def state_dtypes_numpy_options(tt: Any, kind: str, options: dict[str, Any],
                               dtype: str, **values: Any) -> dict[str, Any]:
    """``_optim.state_dtypes_numpy_options``: the float options as NumPy float64 scalars."""
    return _optim.state_dtypes_numpy_options(_lib(tt), kind, options, dtype, **values)


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


@probe
def toy_state_dict(tt: Any, groups: list[dict[str, Any]], grads: list[list[Any]],
                   extra_group: dict[str, Any] | None) -> dict[str, Any]:
    """``_optim.toy_state_dict``: run Toy, maybe add a param group, return state_dict()."""
    return _optim.toy_state_dict(_lib(tt), groups, grads, extra_group)


@probe
def toy_resume(tt: Any, groups: list[dict[str, Any]], before: list[list[Any]],
               after: list[list[Any]], float64: bool) -> dict[str, Any]:
    """``_optim.toy_resume``: a Toy's state_dict loaded into another Toy, which goes on."""
    return _optim.toy_resume(_lib(tt), groups, before, after, float64)


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
        entries = opt.state[opt.param_groups[0]["params"][0]]
        return {str(k): _optim.value(_lib(tt), v) for k, v in entries.items()}

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
@probe
def schedule(tt: Any, kind: str, args: dict[str, Any], base_lrs: list[float],
             n_steps: int) -> dict[str, Any]:
    """``_optim.schedule`` with ``tt.optim.lr_scheduler``."""
    return _optim.schedule(_lib(tt), kind, args, base_lrs, n_steps)
