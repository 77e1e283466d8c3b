"""Probes for assignment 1: errors of backward, grad modes, retain_grad, hooks, detach."""

from __future__ import annotations

import contextlib
import functools
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from . import probe
from ._functions import add_hook, apply, functions, own_hooks, own_recording, run_backward
from ._observe import array, grad, raised


def _leaf(tt: Any, values: Any, requires_grad: bool = True) -> Any:
    return tt.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


def _recorded_by_the_probes(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run the probe with the probes' own graph recording (``own_recording``): tasks
    1.2-1.4 are graded whatever the state of task 1.1's ``record``."""

    @functools.wraps(fn)
    def wrapper(tt: Any, *args: Any, **kwargs: Any) -> Any:
        with own_recording(tt):
            return fn(tt, *args, **kwargs)

    return wrapper


@probe
@_recorded_by_the_probes
def worked_example(tt: Any, x: np.ndarray) -> dict[str, Any]:
    """The course's y = x * exp(x^2), summed, then backward."""
    fns = functions(tt)
    xt = _leaf(tt, x)
    y = apply(fns, "mul", [xt, apply(fns, "exp", [apply(fns, "square", [xt])])])
    apply(fns, "sum", [y]).backward()
    return {"y": array(y), "grad": grad(xt)}


@probe
@_recorded_by_the_probes
def backward_errors(tt: Any, values: Any = None) -> dict[str, Any]:
    """The errors PyTorch raises: backward twice, implicit grad of a non-scalar, backward
    of a tensor that does not require grad; and what must work: one-element outputs.
    ``values``: x's three values and the one-element output's input (the grader's; 1, 2,
    3 and 0.5 by default)."""
    fns = functions(tt)
    single = 0.5 if values is None else float(values[-1])
    values = [1.0, 2.0, 3.0] if values is None else [float(v) for v in values[:3]]
    x = _leaf(tt, values)
    s = apply(fns, "sum", [apply(fns, "mul", [x, x])])
    s.backward()
    twice = raised(lambda: s.backward())
    non_scalar = raised(lambda: apply(fns, "sin", [x]).backward())
    no_grad_tensor = raised(lambda: _leaf(tt, values[:1], False).backward())
    one_element = apply(fns, "sin", [_leaf(tt, [[single]])])
    one = raised(lambda: one_element.backward())
    return {"twice": twice, "non_scalar": non_scalar, "no_grad_tensor": no_grad_tensor,
            "one_element": one}


@probe
@_recorded_by_the_probes
def explicit_gradient(tt: Any, x: np.ndarray, g: np.ndarray) -> dict[str, Any]:
    """y = sin(x) * x backpropagated with an explicit gradient ``g``."""
    fns = functions(tt)
    xt = _leaf(tt, x)
    y = apply(fns, "mul", [apply(fns, "sin", [xt]), xt])
    y.backward(tt.tensor(np.asarray(g, dtype=np.float64)))
    return {"grad": grad(xt)}


# ----- grad modes --------------------------------------------------------------------
def _records(tt: Any, values: Any = None) -> bool:
    fns = functions(tt)
    a, b = (1.0, 2.0) if values is None else (float(values[0]), float(values[1]))
    return apply(fns, "mul", [_leaf(tt, [a]), _leaf(tt, [b])]).grad_fn is not None


@probe
@_recorded_by_the_probes
def grad_mode_script(tt: Any, script: list[list[Any]]) -> list[Any]:
    """Run a nest of grad-mode contexts; at every "check" report (is_grad_enabled,
    whether an op on a requires-grad input records)."""
    seen: list[Any] = []

    def run(steps: list[list[Any]]) -> None:
        for step in steps:
            kind = step[0]
            if kind == "check":
                seen.append([bool(tt.is_grad_enabled()), _records(tt)])
            elif kind == "call_set":  # set_grad_enabled(b) as a plain call
                tt.set_grad_enabled(bool(step[1]))
            else:
                with _context(tt, kind, step[1]):
                    run(step[2])

    run(script)
    return seen


def _context(tt: Any, kind: str, arg: Any) -> Any:
    if kind == "no_grad":
        return tt.no_grad()
    if kind == "enable_grad":
        return tt.enable_grad()
    if kind == "set_grad_enabled":
        return tt.set_grad_enabled(bool(arg))
    if kind == "inference_mode":
        return tt.inference_mode(bool(arg))
    raise ValueError(kind)


@probe
def grad_mode_restored_after_exception(tt: Any, order: Any = None) -> dict[str, Any]:
    """Modes come back when the block raises (the contexts in ``order``, the grader's)."""
    out = {}
    kinds = {"no_grad": None, "set_grad_enabled": False, "inference_mode": True}
    for kind in order or list(kinds):
        arg = kinds[kind]
        try:
            with _context(tt, kind, arg):
                raise KeyError("boom")
        except KeyError:
            pass
        out[kind] = [bool(tt.is_grad_enabled()), bool(tt.is_inference_mode_enabled())]
    return out


@probe
def grad_mode_nested_exceptions(tt: Any, cases: list[Any]) -> list[Any]:
    """Each case: ``[contexts, catch_at]``, contexts (outer first) each ``[kind, arg]``
    (``_context``); an exception raised inside the innermost is caught inside the first
    ``catch_at`` contexts (0: outside them all). Reports, per case, [is_grad_enabled,
    is_inference_mode_enabled] where it was caught and after every block is left."""

    def mode() -> list[bool]:
        return [bool(tt.is_grad_enabled()), bool(tt.is_inference_mode_enabled())]

    def enter(contexts: list[Any], depth: int, catch_at: int, seen: list[Any]) -> None:
        if depth == len(contexts):
            raise KeyError("boom")
        with _context(tt, *contexts[depth]):
            if depth + 1 == catch_at:
                try:
                    enter(contexts, depth + 1, catch_at, seen)
                except KeyError:
                    seen.append(mode())
            else:
                enter(contexts, depth + 1, catch_at, seen)

    out = []
    for contexts, catch_at in cases:
        seen: list[Any] = []
        try:
            enter(contexts, 0, int(catch_at), seen)
        except KeyError:
            seen.append(mode())
        out.append([seen[0] if seen else None, mode()])
    return out


@probe
@_recorded_by_the_probes
def grad_mode_decorators(tt: Any, values: Any = None) -> dict[str, Any]:
    """no_grad(), enable_grad() and set_grad_enabled(b) used as decorators; whether an op
    on ``values`` (two numbers, the grader's) records inside the first two."""

    @tt.no_grad()
    def under_no_grad() -> bool:
        return bool(tt.is_grad_enabled())

    @tt.no_grad()
    def records_under_no_grad() -> bool:
        return _records(tt, values)

    @tt.enable_grad()
    def records_under_enable_grad() -> bool:
        return _records(tt, values)

    @tt.enable_grad()
    def under_enable_grad() -> bool:
        return bool(tt.is_grad_enabled())

    created_with_mode = bool(tt.is_grad_enabled())

    @tt.set_grad_enabled(False)
    def under_set_false() -> bool:
        return bool(tt.is_grad_enabled())

    after_decorating = bool(tt.is_grad_enabled())
    result = {
        "no_grad": under_no_grad(),
        "after_no_grad": bool(tt.is_grad_enabled()),
        "set_false": under_set_false(),
        "after_set_false": bool(tt.is_grad_enabled()),
        "decorating_changed_mode": created_with_mode != after_decorating,
        "set_false_twice": under_set_false(),
    }
    with tt.no_grad():
        result["enable_inside_no_grad"] = under_enable_grad()
        result["after_enable"] = bool(tt.is_grad_enabled())
        result["enable_records_inside_no_grad"] = records_under_enable_grad()
    result["no_grad_records"] = records_under_no_grad()
    return result


@probe
@_recorded_by_the_probes
def grad_mode_threads(tt: Any, values: Any = None) -> dict[str, Any]:
    """Grad mode is per thread: no_grad in one thread leaves another recording."""
    inside = threading.Event()
    release = threading.Event()
    seen: dict[str, Any] = {}
    failure: list[BaseException] = []

    def other() -> None:
        try:
            with tt.no_grad():
                seen["other"] = bool(tt.is_grad_enabled())
                inside.set()
                release.wait(5)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the probe's thread
            failure.append(exc)
        finally:
            inside.set()

    thread = threading.Thread(target=other)
    thread.start()
    inside.wait(5)
    try:
        if failure:
            raise failure[0]
        seen["main"] = bool(tt.is_grad_enabled())
        seen["main_records"] = _records(tt, values)
    finally:
        release.set()
        thread.join(5)
    return seen


@probe
@_recorded_by_the_probes
def inference_mode_tensors(tt: Any, values: Any = None) -> dict[str, Any]:
    """Inside inference_mode: no recording, inference tensors; outside: their limits.
    ``values``: the tensors' five values (the grader's; 1, 2, 3, 4, 1 by default)."""
    fns = functions(tt)
    values = [1.0, 2.0, 3.0, 4.0, 1.0] if values is None else [float(v) for v in values]
    x = _leaf(tt, values[:2])
    with tt.inference_mode():
        enabled_inside = bool(tt.is_inference_mode_enabled())
        grad_inside = bool(tt.is_grad_enabled())
        t = tt.tensor(values[2:4], dtype=tt.float64)
        y = apply(fns, "mul", [x, t])
        recorded_inside = y.grad_fn is not None
        with tt.inference_mode(False):
            nested_false = [bool(tt.is_inference_mode_enabled()), bool(tt.is_grad_enabled())]
            normal = tt.tensor(values[4:5])
    out = {
        "enabled_inside": enabled_inside,
        "grad_inside": grad_inside,
        "recorded_inside": recorded_inside,
        "is_inference": bool(t.is_inference()),
        "output_is_inference": bool(y.is_inference()),
        "nested_false": nested_false,
        "nested_false_tensor_is_inference": bool(normal.is_inference()),
        "enabled_after": bool(tt.is_inference_mode_enabled()),
        "normal_is_inference": bool(_leaf(tt, values[4:5]).is_inference()),
    }
    out["save_outside"] = raised(lambda: apply(fns, "mul", [x, t]))
    out["add_outside"] = raised(lambda: apply(fns, "add", [x, t]))
    out["requires_grad_outside"] = raised(lambda: t.requires_grad_())
    return out


@probe
@_recorded_by_the_probes
def eval_keeps_autograd(tt: Any, values: Any = None) -> dict[str, Any]:
    """module.eval() changes train/eval behaviour only; no_grad stops recording.
    ``values``: w's two values and x's two (the grader's; 2, 3 and 1, 1 by default)."""
    fns = functions(tt)
    values = [2.0, 3.0, 1.0, 1.0] if values is None else [float(v) for v in values]

    class Scale(tt.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = tt.nn.Parameter(tt.tensor(np.array(values[:2])))

        def forward(self, x: Any) -> Any:
            return apply(fns, "mul", [x, self.w])

    model = Scale()
    model.eval()
    x = _leaf(tt, values[2:], requires_grad=False)
    y = model(x)
    with tt.no_grad():
        y_no_grad = model(x)
    return {
        "training": bool(model.training),
        "eval_records": y.grad_fn is not None,
        "eval_requires_grad": bool(y.requires_grad),
        "no_grad_records": y_no_grad.grad_fn is not None,
    }


# ----- retain_grad, hooks, detach ------------------------------------------------------
# Task 1.4 runs backward with the probes' own engine (``_functions.run_backward``), so its
# hooks and retain_grad are graded whatever the state of the submission's engine (1.2).
@probe
@_recorded_by_the_probes
def retain_grad(tt: Any, x: np.ndarray, k: float, calls: int) -> dict[str, Any]:
    """a = 3x (retained), b = k*a (not retained), loss = sum(b); ``calls`` backward passes.
    A chain of ops that save nothing, so it only exercises retain_grad itself."""
    fns = functions(tt)
    xt = _leaf(tt, x)
    a = apply(fns, "scale", [xt, 3.0])
    a.retain_grad()
    b = apply(fns, "scale", [a, k])
    out = apply(fns, "sum", [b])
    for _ in range(calls):
        run_backward(tt, [(out, None)], retain_graph=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b_grad = b.grad
    return {
        "a_grad": grad(a),
        "b_grad_is_none": b_grad is None,
        "a_retains": bool(a.retains_grad),
        "b_retains": bool(b.retains_grad),
        "x_grad": grad(xt),
        "leaf_retain": raised(lambda: xt.retain_grad()),
        "leaf_retains": bool(xt.retains_grad),
    }


@probe
@_recorded_by_the_probes
def hooks(tt: Any, x: np.ndarray, factor: float) -> dict[str, Any]:
    """x -> mid = sin(x) (hook returns grad * factor) -> y = 2 * mid; hook on x too."""
    fns = functions(tt)
    xt = _leaf(tt, x)
    seen_leaf: list[np.ndarray] = []
    seen_mid: list[np.ndarray] = []
    xt.register_hook(lambda g: seen_leaf.append(array(g)))
    mid = apply(fns, "sin", [xt])
    mid.register_hook(lambda g: (seen_mid.append(array(g)), apply(fns, "scale", [g, factor]))[1])
    y = apply(fns, "scale", [mid, 2.0])
    run_backward(tt, [(apply(fns, "sum", [y]), None)])
    return {"grad": grad(xt), "leaf_calls": seen_leaf, "mid_calls": seen_mid}


@probe
@_recorded_by_the_probes
def hook_replaces_leaf_grad(tt: Any, x: np.ndarray) -> dict[str, Any]:
    """A leaf hook's return value is what gets accumulated; removed hooks stop."""
    fns = functions(tt)
    xt = _leaf(tt, x)
    handle = xt.register_hook(lambda g: apply(fns, "scale", [g, 10.0]))
    run_backward(tt, [(apply(fns, "sum", [apply(fns, "sin", [xt])]), None)])
    first = grad(xt)
    handle.remove()
    xt.grad = None
    run_backward(tt, [(apply(fns, "sum", [apply(fns, "sin", [xt])]), None)])
    plain = tt.tensor([1.0], requires_grad=False)
    return {
        "hooked": first,
        "after_remove": grad(xt),
        "no_grad_tensor": raised(lambda: plain.register_hook(lambda g: g)),
    }


@probe
@_recorded_by_the_probes
def detach(tt: Any, x: np.ndarray) -> dict[str, Any]:
    """detach(): a leaf sharing storage, no history; gradient stops there."""
    fns = functions(tt)
    xt = _leaf(tt, x)
    mid = apply(fns, "sin", [xt])
    d = mid.detach()
    y = apply(fns, "mul", [xt, d])  # d(x * stop(sin x))/dx = sin x
    run_backward(tt, [(apply(fns, "sum", [y]), None)])
    return {
        "requires_grad": bool(d.requires_grad),
        "is_leaf": bool(d.is_leaf),
        "grad_fn_none": d.grad_fn is None,
        "shares_storage": bool(np.shares_memory(d.data, mid.data)),
        "shares_version": d._version_counter is mid._version_counter,
        "values": array(d),
        "grad": grad(xt),
    }


def _hook(tt: Any, seen: list[Any], where: str, index: int, step: list[Any],
          tensor: Any = None, handles: dict[int, Any] | None = None) -> Callable:
    """A hook that logs what it sees, then returns grad * k ("mul", and "remove_self",
    "remove_next" after removing its own handle or the next hook's on the tensor),
    grad + c ("add"), or None ("observe"; "inplace" after multiplying the gradient it
    was given by k in place; "register" after registering a hook returning grad * k on
    the tensor, logged as index 100 + its own)."""
    kind = step[0]

    def hook(g: Any) -> Any:
        seen.append([where, index, array(g)])
        if kind == "inplace":
            g.data[...] *= float(step[1])
            return None
        if kind == "register":
            tensor.register_hook(_hook(tt, seen, where, 100 + index, ["mul", step[1]]))
            return None
        if kind in ("remove_self", "remove_next"):
            handle = handles.pop(index if kind == "remove_self" else index + 1, None)
            if handle is not None:
                handle.remove()
        if kind in ("mul", "remove_self", "remove_next"):
            return tt.tensor(array(g) * float(step[1]))
        if kind == "add":
            return tt.tensor(array(g) + float(step[1]))
        return None

    return hook


@probe
@_recorded_by_the_probes
def hook_chain(tt: Any, x: np.ndarray, mid_steps: list[list[Any]],
               leaf_steps: list[list[Any]], mid_op: str = "sin",
               calls: int = 1) -> dict[str, Any]:
    """mid = sin(x) (``mid_op`` "sin") or x + 0.5 ("add"); y = 2 * mid;
    sum(y).backward(retain_graph=True) ``calls`` times. Before that, ``mid_steps`` on mid
    and ``leaf_steps`` on x, in order: ["retain"] calls retain_grad(), any other step
    registers a hook (``_hook``). Reports every hook call in order, mid.grad, x.grad and
    retains_grad."""
    fns = functions(tt)
    xt = _leaf(tt, x)
    if mid_op == "add":
        mid = apply(fns, "add", [xt, _leaf(tt, np.full(np.shape(x), 0.5), False)])
    else:
        mid = apply(fns, "sin", [xt])
    seen: list[Any] = []
    for where, tensor, steps in (("mid", mid, mid_steps), ("x", xt, leaf_steps)):
        handles: dict[int, Any] = {}
        for i, step in enumerate(steps):
            if step[0] == "retain":
                tensor.retain_grad()
            else:
                handles[i] = tensor.register_hook(_hook(tt, seen, where, i, step, tensor,
                                                        handles))
    y = apply(fns, "scale", [mid, 2.0])
    out = apply(fns, "sum", [y])
    for _ in range(calls):
        run_backward(tt, [(out, None)], retain_graph=True)
    return {"seen": seen, "mid_grad": grad(mid), "x_grad": grad(xt),
            "retains_grad": [bool(mid.retains_grad), bool(xt.retains_grad)]}


@probe
@_recorded_by_the_probes
def retain_grad_misuse(tt: Any, values: Any = None) -> dict[str, Any]:
    """retain_grad() where torch refuses it (no requires_grad), twice on one tensor, and
    what retains_grad says before and after. ``values``: plain's two values and x's two
    (the grader's; 1, 2 and 0.5, -1 by default)."""
    fns = functions(tt)
    values = [1.0, 2.0, 0.5, -1.0] if values is None else [float(v) for v in values]
    plain = _leaf(tt, values[:2], requires_grad=False)
    computed = apply(fns, "mul", [plain, plain])  # not recorded: no input requires grad
    x = _leaf(tt, values[2:])
    mid = apply(fns, "scale", [x, 3.0])
    before = [bool(x.retains_grad), bool(mid.retains_grad)]
    leaf = raised(lambda: x.retain_grad())
    mid.retain_grad()
    mid.retain_grad()
    after = [bool(x.retains_grad), bool(mid.retains_grad)]
    run_backward(tt, [(apply(fns, "sum", [apply(fns, "scale", [mid, 2.0])]), None)])
    return {
        "plain": raised(lambda: plain.retain_grad()),
        "computed": raised(lambda: computed.retain_grad()),
        "leaf": leaf,
        "before": before,
        "after": after,
        "after_backward": [bool(x.retains_grad), bool(mid.retains_grad)],
        "mid_grad": grad(mid),
    }


@probe
@_recorded_by_the_probes
def hooks_without_gradient(tt: Any, x: np.ndarray) -> dict[str, Any]:
    """Hooks on a leaf x and on mid = sin(x) whose only gradient is None (mid's one consumer
    is ``zero``, whose backward returns None); loss = sum(zero(mid) + 2 * w). Backward must
    go through; x gets no gradient, w its own. (torch calls such hooks with None; whether
    they are called is not graded.)"""
    fns = functions(tt)
    xt, wt = _leaf(tt, x), _leaf(tt, np.ones_like(x))
    xt.register_hook(lambda g: None)
    mid = apply(fns, "sin", [xt])
    mid.register_hook(lambda g: None)
    loss = apply(fns, "sum", [apply(fns, "add", [apply(fns, "zero", [mid]),
                                                 apply(fns, "scale", [wt, 2.0])])])
    backward = raised(lambda: run_backward(tt, [(loss, None)]))
    return {"backward": backward, "x_grad_is_none": grad(xt) is None, "w_grad": grad(wt)}


@probe
@_recorded_by_the_probes
def implicit_root_gradient(tt: Any, x: np.ndarray) -> dict[str, Any]:
    """s = sum(sin(x)) for a float32 x, then s.backward() with no gradient: the gradient
    backward starts from (seen by a hook on s, run by the probes' own hook runner), and
    x.grad."""
    fns = functions(tt)
    seen: list[np.ndarray] = []
    with own_hooks(tt):
        xt = tt.tensor(np.asarray(x, dtype=np.float32), requires_grad=True)
        s = apply(fns, "sum", [apply(fns, "sin", [xt])])
        add_hook(s, lambda g: seen.append(np.array(g.data, copy=True)))
        s.backward()
    return {"root_grads": seen, "root_dtypes": [str(g.dtype) for g in seen], "grad": grad(xt),
            "grad_dtype": str(grad(xt).dtype) if grad(xt) is not None else None}


@probe
@_recorded_by_the_probes
def gradient_shape_errors(tt: Any, values: Any = None) -> dict[str, Any]:
    """backward with a gradient of the wrong shape: y.backward(g) and
    tt.autograd.backward([y], [g]) for y = sin(x) of shape (3,) and g of shape (2,)
    (``values``: x's three and g's two, the grader's; 0.5, 1, 1.5 and ones by default)."""
    fns = functions(tt)
    values = [0.5, 1.0, 1.5, 1.0, 1.0] if values is None else [float(v) for v in values]
    x = _leaf(tt, values[:3])
    g = tt.tensor(np.array(values[3:]))
    method = raised(lambda: apply(fns, "sin", [x]).backward(g))
    function = raised(lambda: tt.autograd.backward([apply(fns, "sin", [x])], [g]))
    return {"method": method, "function": function, "x_grad_is_none": grad(x) is None}


@probe
def grad_mode_query_types(tt: Any, order: Any = None) -> dict[str, Any]:
    """The type and truth of is_grad_enabled() and is_inference_mode_enabled() outside any
    context and inside each grad-mode context manager (in ``order``, the grader's)."""
    contexts = {
        "none": contextlib.nullcontext, "no_grad": tt.no_grad, "enable_grad": tt.enable_grad,
        "set_grad_enabled(False)": lambda: tt.set_grad_enabled(False),
        "set_grad_enabled(True)": lambda: tt.set_grad_enabled(True),
        "inference_mode()": tt.inference_mode,
        "inference_mode(False)": lambda: tt.inference_mode(False),
    }
    seen = {}
    for name in order or list(contexts):
        with contexts[name]():
            seen[name] = [[type(v).__name__, bool(v)]
                          for v in (tt.is_grad_enabled(), tt.is_inference_mode_enabled())]
    return seen


@probe
@_recorded_by_the_probes
def explicit_root_gradient(tt: Any, x: np.ndarray, g: np.ndarray) -> dict[str, Any]:
    """y = sin(x) for a float32 x, then y.backward(tt.tensor(g)) with a float64 g: the
    gradient backward starts from (seen by a hook on y, run by the probes' own hook
    runner), and x.grad."""
    fns = functions(tt)
    seen: list[np.ndarray] = []
    with own_hooks(tt):
        xt = tt.tensor(np.asarray(x, dtype=np.float32), requires_grad=True)
        y = apply(fns, "sin", [xt])
        add_hook(y, lambda grad_: seen.append(np.array(grad_.data, copy=True)))
        y.backward(tt.tensor(np.asarray(g, dtype=np.float64)))
    return {"root_grads": seen, "root_dtypes": [str(s.dtype) for s in seen], "grad": grad(xt)}


@probe
@_recorded_by_the_probes
def retain_grad_without_gradient(tt: Any, x: np.ndarray) -> dict[str, Any]:
    """retain_grad where there is nothing to keep: (a) on mid = sin(x) whose one consumer,
    ``zero``, returns None; (b) on both outputs of ``sincos`` with only the second used;
    (c) on a tensor dropped before backward. Backward by the probes' own engine."""
    fns = functions(tt)
    xt, wt = _leaf(tt, x), _leaf(tt, np.ones_like(x))
    mid = apply(fns, "sin", [xt])
    mid.retain_grad()
    loss = apply(fns, "sum", [apply(fns, "add", [apply(fns, "zero", [mid]),
                                                 apply(fns, "scale", [wt, 2.0])])])
    zero_case = raised(lambda: run_backward(tt, [(loss, None)]))
    xs = _leaf(tt, x)
    first, second = apply(fns, "sincos", [xs])
    first.retain_grad()
    second.retain_grad()
    two = raised(lambda: run_backward(tt, [(apply(fns, "sum", [second]), None)]))
    xd = _leaf(tt, x)
    dropped = apply(fns, "sin", [xd])
    dropped.retain_grad()
    out = apply(fns, "sum", [dropped])
    del dropped
    dropped_case = raised(lambda: run_backward(tt, [(out, None)]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grads = [mid.grad, first.grad, second.grad]
    return {"zero": zero_case, "mid_grad_is_none": grads[0] is None, "w_grad": grad(wt),
            "two_outputs": two, "first_grad_is_none": grads[1] is None,
            "second_grad": None if grads[2] is None else array(grads[2]), "x_grad": grad(xs),
            "dropped": dropped_case, "dropped_x_grad": grad(xd)}


@probe
def detach_inference(tt: Any, values: Any = None) -> dict[str, Any]:
    """is_inference() of detach() of a normal tensor and of an inference tensor (marked
    through the framework's flag, not task 1.3's inference_mode): [type, value]
    (``values``: their two values, the grader's; ones by default)."""
    values = np.ones(2) if values is None else np.asarray(values, np.float64)
    plain = tt.tensor(values)
    inference = tt.tensor(values)
    inference._is_inference = True
    seen = [plain.detach().is_inference(), inference.detach().is_inference()]
    return {"plain": [type(seen[0]).__name__, bool(seen[0])],
            "inference": [type(seen[1]).__name__, bool(seen[1])]}


@probe
@_recorded_by_the_probes
def raising_tensor_hook(tt: Any, x: np.ndarray, where: str) -> dict[str, Any]:
    """mid = sin(x); a hook on mid (``where`` "mid") or on x ("leaf") that raises
    ValueError on its first call and returns grad * 2 after; out = sum(3 * mid);
    out.backward(retain_graph=True) (fails), then out.backward() again. Reports the first
    error, x.grad and the grad mode after it, then the second backward's error, x.grad
    and the hook's calls."""
    fns = functions(tt)
    xt = _leaf(tt, x)
    mid = apply(fns, "sin", [xt])
    calls: list[int] = []

    def hook(g: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise ValueError("hook boom")
        return tt.tensor(array(g) * 2.0)

    (mid if where == "mid" else xt).register_hook(hook)
    out = apply(fns, "sum", [apply(fns, "scale", [mid, 3.0])])
    first = raised(lambda: run_backward(tt, [(out, None)], retain_graph=True))
    result = {"first": first, "x_grad_is_none": xt.grad is None,
              "grad_enabled": bool(tt.is_grad_enabled())}
    result["second"] = raised(lambda: run_backward(tt, [(out, None)]))
    result["x_grad"] = grad(xt)
    result["calls"] = len(calls)
    result["after_grad_enabled"] = bool(tt.is_grad_enabled())
    return result
