"""Probes for assignment 3.2: saved-tensor hooks and the inspection of saved tensors.

Graphs are built from probe Functions that save exactly what torch's ops save (mul saves
``other`` if ``self`` needs a gradient, then ``self`` if ``other`` does; sin and square
their input; exp its result), so hook calls can be compared with torch's one for one.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from . import probe
from ._functions import apply, functions
from ._observe import array, grad, raised

_OPS = {"mul": "torch_mul"}


def _build(tt: Any, program: dict[str, Any], contexts: Any) -> list[Any]:
    """Run a graph program (``graders.strategies.programs``); ``contexts(i)`` is the
    context manager op ``i`` runs in."""
    fns = functions(tt)
    values = [tt.tensor(np.asarray(v), requires_grad=bool(rg)) for v, rg in program["leaves"]]
    for i, (op, *args) in enumerate(program["ops"]):
        operands = [values[args[0]], float(args[1])] if op == "scale" else [values[a] for a in args]
        with contexts(i):
            values.append(apply(fns, _OPS.get(op, op), operands, label=f"v{len(values)}"))
    return values


class _Log:
    """A (pack_hook, unpack_hook) pair that logs its calls: pack returns a token (the
    call's number) and keeps the tensor, unpack returns the kept tensor."""

    def __init__(self, tt: Any, name: str, events: list[Any]) -> None:
        self.tt, self.name, self.events, self.kept = tt, name, events, []

    def pack(self, tensor: Any) -> int:
        self.events.append([self.name, "pack", len(self.kept), array(tensor),
                            bool(self.tt.is_grad_enabled())])
        self.kept.append(tensor)
        return len(self.kept) - 1

    def unpack(self, token: int) -> Any:
        self.events.append([self.name, "unpack", token, None, bool(self.tt.is_grad_enabled())])
        return self.kept[token]

    def hooks(self) -> Any:
        return self.tt.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)


@probe
def hook_calls(tt: Any, program: dict[str, Any], inner_ops: int = 0, calls: int = 1) -> dict[str, Any]:
    """Run the program's forward under an "outer" logging pair, its first ``inner_ops``
    ops also under an "inner" one; then ``calls`` backward passes (retain_graph between).
    Returns every hook call in order ([pair, "pack"|"unpack", token, packed values,
    grad mode inside the hook]) and the leaf gradients."""
    events: list[Any] = []
    outer, inner = _Log(tt, "outer", events), _Log(tt, "inner", events)

    @contextlib.contextmanager
    def contexts(i: int) -> Any:
        with inner.hooks() if i < inner_ops else contextlib.nullcontext():
            yield

    with outer.hooks():
        values = _build(tt, program, contexts)
    forward_events = len(events)
    for k in range(calls):
        values[-1].backward(retain_graph=k < calls - 1)
    n = len(program["leaves"])
    return {"events": events, "forward_events": forward_events,
            "grads": [grad(v) for v in values[:n]]}


@probe
def inspection(tt: Any, x: Any = None) -> dict[str, Any]:
    """``grad_fn._saved_self`` / ``_saved_other`` / ``_saved_result`` of probe ops, and
    what accessing them does (through hooks, after backward, unknown names)."""
    fns = functions(tt)
    # x: the grader's 3 values ([0.5, -1.0, 2.0] by default)
    x = tt.tensor(np.array([0.5, -1.0, 2.0] if x is None else x, np.float64), requires_grad=True)
    c = tt.tensor(np.array([3.0, 4.0, 5.0]))
    s = apply(fns, "sin", [x])
    e = apply(fns, "exp", [x])
    m = apply(fns, "torch_mul", [x, c])
    result = e.grad_fn._saved_result
    out = {
        "sin_self_is_input": s.grad_fn._saved_self is x,
        "exp_result": array(result),
        "exp_output": array(e),
        "exp_result_grad_fn_is_node": result.grad_fn is e.grad_fn,
        "exp_result_version": int(result._version),
        "mul_other_is_c": m.grad_fn._saved_other is c,
        "mul_self_is_none": m.grad_fn._saved_self is None,
        "unknown": raised(lambda: m.grad_fn._saved_nothing),
        "node_class": type(m.grad_fn).__name__,
    }
    added = apply(fns, "add", [x, c])  # saves nothing
    out["nothing_saved"] = raised(lambda: added.grad_fn._saved_self)
    out["nothing_saved_class"] = type(added.grad_fn).__name__
    log: list[Any] = []
    pair = _Log(tt, "pair", log)
    with pair.hooks():
        h = apply(fns, "sin", [x])
    log.clear()
    first = h.grad_fn._saved_self
    h.grad_fn._saved_self  # noqa: B018 - each access unpacks
    out["unpacks_for_two_accesses"] = sum(1 for ev in log if ev[1] == "unpack")
    out["through_hooks_is_input"] = first is x
    apply(fns, "sum", [s]).backward()
    out["after_backward"] = raised(lambda: s.grad_fn._saved_self)
    return out


@probe
def bad_unpack(tt: Any, x: Any = None) -> dict[str, Any]:
    """An unpack hook that returns something that is not a Tensor."""
    fns = functions(tt)
    # x: the grader's 2 values ([0.5, -1.0] by default)
    x = tt.tensor(np.array([0.5, -1.0] if x is None else x, np.float64), requires_grad=True)
    with tt.autograd.graph.saved_tensors_hooks(lambda t: 7, lambda p: p):
        y = apply(fns, "sin", [x])
    return {"backward": raised(lambda: apply(fns, "sum", [y]).backward())}


@probe
def raising_hooks(tt: Any, x: Any, where: str) -> dict[str, Any]:
    """A pair whose pack hook (``where`` "pack") or unpack hook ("unpack") raises
    KeyError: y = sin(x) under the pair, then sum(y).backward(). Reports what each step
    raised, x.grad, the grad mode and the hook calls after, then what a fresh
    sum(sin(x)).backward() outside the pair gives (the hooks are no longer active)."""
    fns = functions(tt)
    xt = tt.tensor(np.asarray(x, np.float64), requires_grad=True)
    calls: list[str] = []

    def pack(tensor: Any) -> Any:
        calls.append("pack")
        if where == "pack":
            raise KeyError("pack boom")
        return tensor

    def unpack(packed: Any) -> Any:
        calls.append("unpack")
        if where == "unpack":
            raise KeyError("unpack boom")
        return packed

    out: dict[str, Any] = {}
    state: dict[str, Any] = {}

    def forward() -> None:
        with tt.autograd.graph.saved_tensors_hooks(pack, unpack):
            state["y"] = apply(fns, "sin", [xt])

    out["forward"] = raised(forward)
    out["backward"] = (raised(lambda: apply(fns, "sum", [state["y"]]).backward())
                       if "y" in state else raised(lambda: None))
    out["x_grad_is_none"] = xt.grad is None
    out["grad_enabled"] = bool(tt.is_grad_enabled())
    out["calls"] = list(calls)
    xt.grad = None
    out["after_backward"] = raised(lambda: apply(fns, "sum", [apply(fns, "sin", [xt])]).backward())
    out["after_grad"] = grad(xt)
    out["after_calls"] = calls[len(out["calls"]):]
    out["after_grad_enabled"] = bool(tt.is_grad_enabled())
    return out


@probe
def hooks_per_thread(tt: Any, x: Any = None) -> dict[str, Any]:
    """Hooks installed in another thread do not apply in this one."""
    import threading

    fns = functions(tt)
    # x: the grader's 2 values ([0.5, -1.0] by default)
    x = tt.tensor(np.array([0.5, -1.0] if x is None else x, np.float64), requires_grad=True)
    events: list[Any] = []
    pair = _Log(tt, "other-thread", events)
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with pair.hooks():
            inside.set()
            release.wait(5)

    thread = threading.Thread(target=other)
    thread.start()
    inside.wait(5)
    try:
        y = apply(fns, "sin", [x])
        apply(fns, "sum", [y]).backward()
        seen_here = len(events)
        with _Log(tt, "this-thread", events).hooks():
            z = apply(fns, "sin", [x])
        apply(fns, "sum", [z]).backward()
    finally:
        release.set()
        thread.join(5)
    return {"calls_seen": seen_here, "calls_here": [ev[:2] for ev in events], "grad": grad(x)}


@probe
def raising_hooks_nested(tt: Any, x: Any, where: str, nested: bool) -> dict[str, Any]:
    """A saved-tensor hook that raises KeyError (``where``: "pack", raised by the forward
    inside the block, or "unpack", raised by backward after it), inside an outer counting
    pair when ``nested``. Reports the error the caller got, the grad mode and inference
    mode after it, then how a new forward and backward behave (the outer pair's pack
    calls, x.grad)."""
    fns = functions(tt)
    graph = tt.autograd.graph
    outer_calls: list[str] = []

    def boom(_: Any) -> Any:
        raise KeyError("boom")

    def count_pack(t: Any) -> Any:
        outer_calls.append("pack")
        return t

    def count_unpack(t: Any) -> Any:
        outer_calls.append("unpack")
        return t

    outer = graph.saved_tensors_hooks(count_pack, count_unpack) if nested else None
    xt = tt.tensor(np.asarray(x, np.float64), requires_grad=True)
    with outer if outer is not None else contextlib.nullcontext():

        def run() -> None:
            with graph.saved_tensors_hooks(boom if where == "pack" else (lambda t: t),
                                           (lambda t: t) if where == "pack" else boom):
                y = apply(fns, "sin", [xt])
            apply(fns, "sum", [y]).backward()

        error = raised(run)
        modes = [bool(tt.is_grad_enabled()), bool(tt.is_inference_mode_enabled())]
        before = len(outer_calls)
        x2 = tt.tensor(np.asarray(x, np.float64), requires_grad=True)
        again = raised(lambda: apply(fns, "sum", [apply(fns, "sin", [x2])]).backward())
    return {"error": error, "modes": modes, "outer_calls": outer_calls[before:],
            "again": again, "x_grad": grad(x2)}
