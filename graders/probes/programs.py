"""Probes that run small graph programs (built from the probe Functions) in tinytrain.

A program is ``{"leaves": [[values, requires_grad], ...], "ops": [[op, arg, ...], ...]}``:
values are numbered leaves first, then each op's outputs (two for ``sincos`` and
``relu_mask``, one otherwise); an op's args are value indices, except ``scale``'s second
arg, a number. The grader runs the same program in torch (``graders.oracle.programs``).

``graph`` observes the graph the submission's own recording (task 1.1) builds;
``backward`` grades the engine (task 1.2) on a graph recorded by the probes' own copy of
1.1's ``record`` (``_functions.own_recording``).
"""

from __future__ import annotations

import contextlib
import importlib
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from . import probe
from ._functions import add_hook, apply, functions, own_hooks, own_recording, run_backward
from ._observe import array, grad

_UNARY = ("sin", "square", "exp", "sum", "sincos", "relu_mask", "positive", "zero")


def build(tt: Any, program: dict[str, Any], leaves: list[Any] | None = None) -> list[Any]:
    """Run a program forward (on the given leaf tensors, or new ones); returns every
    value, leaves first."""
    fns = functions(tt)
    if leaves is None:
        leaves = [tt.tensor(v, requires_grad=bool(rg)) for v, rg in program["leaves"]]
    values = list(leaves)
    for op, *args in program["ops"]:
        if op == "scale":
            operands = [values[args[0]], float(args[1])]
        elif op in _UNARY:
            operands = [values[args[0]]]
        else:
            operands = [values[a] for a in args]
        out = apply(fns, op, operands, label=f"v{len(values)}")
        values.extend(out if isinstance(out, tuple) else [out])
    return values


def _edge(edge: Any, nodes: dict[int, int], leaves: dict[int, int]) -> list[Any]:
    """Describe a next_functions entry ``(node, output_nr)``: ["none", None, nr],
    ["leaf", i, nr], ["value", i, nr] (i: the first value the node produced) or
    ["other", name, nr]."""
    node, nr = edge
    nr = int(nr)
    if node is None:
        return ["none", None, nr]
    variable = getattr(node, "variable", None)
    if variable is not None and id(variable) in leaves:
        return ["leaf", leaves[id(variable)], nr]
    if id(node) in nodes:
        return ["value", nodes[id(node)], nr]
    return ["other", type(node).__name__, nr]


# grad-mode flags (is_grad_enabled, is_inference_mode_enabled) a program may run under
MODES = {
    "no_grad": (False, False),
    "enable_grad": (True, False),
    "inference_mode": (False, True),
    "inference_mode+enable_grad": (True, True),
}


@contextlib.contextmanager
def _flags(tt: Any, mode: str | None) -> Iterator[None]:
    """Set the grad-mode flags of ``mode`` directly in the framework's (given) thread-local
    state, not through the context managers of task 1.3, which are graded on their own."""
    if mode is None:
        yield
        return
    state = importlib.import_module(f"{tt.__name__}.autograd.grad_mode")._state
    before = (state.grad_enabled, state.inference)
    state.grad_enabled, state.inference = MODES[mode]
    try:
        yield
    finally:
        state.grad_enabled, state.inference = before


@probe
def graph(tt: Any, program: dict[str, Any], mode: str | None = None) -> dict[str, Any]:
    """The graph attributes of every value: requires_grad, is_leaf, grad_fn and edges
    (next_functions with their output numbers). The leaves are made first; with ``mode``
    the ops run with those grad-mode flags set."""
    leaves = [tt.tensor(v, requires_grad=bool(rg)) for v, rg in program["leaves"]]
    with _flags(tt, mode):
        values = build(tt, program, leaves)
    leaves = {id(v): i for i, v in enumerate(values[: len(program["leaves"])])}
    nodes: dict[int, int] = {}
    for i, v in enumerate(values):
        if v.grad_fn is not None:
            nodes.setdefault(id(v.grad_fn), i)
    out = []
    for v in values:
        node = v.grad_fn
        edges = None
        if node is not None:
            edges = [_edge(e, nodes, leaves) for e in node.next_functions]
        out.append({
            "requires_grad": bool(v.requires_grad),
            "is_leaf": bool(v.is_leaf),
            "has_grad_fn": node is not None,
            "same_node_as": nodes.get(id(node)) if node is not None else None,
            "edges": edges,
        })
    return {"values": out}


@probe
def backward(
    tt: Any,
    program: dict[str, Any],
    calls: int = 1,
    retain_graph: bool = False,
    rebuild: bool = False,
    roots: list[int] | None = None,
    root_grads: list[np.ndarray] | None = None,
    hooks: list[list[Any]] | None = None,
) -> dict[str, Any]:
    """Run ``calls`` backward passes (re-running the forward first when ``rebuild``): of
    the output, or ``tt.autograd.backward`` of the values ``roots`` with ``root_grads``.
    Reports leaf grads, non-leaf ``.grad`` presence, the backward call log, whether the
    gradient tensors given to backward still hold their values, and which leaves' .grad
    share memory with another leaf's .grad or with a given gradient.

    ``hooks`` ([value, k], ...) puts a tensor hook returning ``grad * k`` on those values
    (registered and run by the probes' own copy of task 1.4's hooks: the engine only has to
    call each node's ``_run_tensor_hooks``)."""
    fns = functions(tt)
    fns.calls.clear()
    given = [tt.tensor(np.array(g, copy=True)) for g in root_grads or []]
    with own_recording(tt), own_hooks(tt) if hooks else contextlib.nullcontext():
        values = build(tt, program)
        n_leaves = len(program["leaves"])
        leaves = values[:n_leaves]
        for k in range(calls):
            if rebuild and k:
                values = build(tt, program, leaves)
            for v, factor in hooks or []:
                if k == 0 or v >= n_leaves:  # a leaf keeps its hooks across forwards
                    add_hook(values[v], _scaling(tt, float(factor)))
            if roots is None:
                values[-1].backward(retain_graph=retain_graph)
            else:
                tt.autograd.backward([values[r] for r in roots], given,
                                     retain_graph=retain_graph)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        non_leaf_grads = [v.grad is not None for v in values[n_leaves:]]
    grads = [grad(v) for v in leaves]
    owned = [_grad_array(v) for v in leaves]
    return {
        "grads": grads,
        "non_leaf_has_grad": non_leaf_grads,
        "calls": list(fns.calls),
        "output": array(values[-1]),
        "given_unchanged": [bool(np.array_equal(t.data, g, equal_nan=True))
                            for t, g in zip(given, root_grads or [], strict=True)],
        "shares_memory": [
            any(o is not None and p is not None and np.shares_memory(o, p)
                for j, p in enumerate(owned + [t.data for t in given]) if j != i)
            for i, o in enumerate(owned)
        ],
    }


def _scaling(tt: Any, factor: float) -> Any:
    return lambda g: tt.tensor(np.asarray(g.data) * factor)


def _grad_array(tensor: Any) -> np.ndarray | None:
    """The array behind a leaf's .grad (not a copy), or None."""
    g = tensor._grad if hasattr(tensor, "_grad") else tensor.grad
    return None if g is None else getattr(g, "data", None)


@probe
def backward_of_recorded(tt: Any, program: dict[str, Any]) -> dict[str, Any]:
    """The program recorded by the submission's own ``record`` (task 1.1), then backward
    of its output with the probes' copy of task 1.2's engine (``_functions.run_backward``):
    the leaves' gradients, so the graph 1.1 builds is graded on carrying gradients."""

    values = build(tt, program)
    run_backward(tt, [(values[-1], None)])
    return {"grads": [grad(v) for v in values[: len(program["leaves"])]]}


@probe
def record_results(tt: Any, values: Any = None) -> dict[str, Any]:
    """What ``record`` returns ("True when it recorded") for a call with an input that
    requires grad under each grad mode (set through the flags), and for one whose inputs
    do not; and ``ctx.needs_input_grad`` of a recorded call with a number argument.
    ``values``: x's two, y's two and the last call's one (the grader's; 1, 2, 3, 4, 1 by
    default)."""
    values = [1.0, 2.0, 3.0, 4.0, 1.0] if values is None else [float(v) for v in values]
    function_module = importlib.import_module(f"{tt.__name__}.autograd.function")
    fns = functions(tt)
    results = {}
    for mode in (None, *sorted(MODES)):
        ctx = fns.mul._backward_cls()
        x = tt.tensor(np.array(values[:2]), requires_grad=True)
        y = tt.tensor(np.array(values[2:4]))
        out = tt.tensor(np.array(values[:2]) * np.array(values[2:4]))
        with _flags(tt, mode):
            results[mode or "default"] = function_module.record(ctx, (x, y), (out,))
    ctx = fns.mul._backward_cls()
    ones = np.full(2, values[4])
    plain = function_module.record(ctx, (tt.tensor(ones), tt.tensor(ones)),
                                   (tt.tensor(ones * ones),))
    scaled = apply(fns, "scale", [tt.tensor(ones, requires_grad=True), 3.0])
    needs = scaled.grad_fn.needs_input_grad if scaled.grad_fn is not None else None
    return {"results": {k: [type(v).__name__, bool(v)] for k, v in results.items()},
            "no_input_requires_grad": [type(plain).__name__, bool(plain)],
            "needs_input_grad": None if needs is None else list(needs)}
