"""Probes that run small graph programs (built from the probe Functions) in tinytrain.

A program is ``{"leaves": [[values, requires_grad], ...], "ops": [[op, arg, ...], ...]}``:
value ``i`` is leaf ``i`` for ``i < len(leaves)``, else the result of op ``i - len(leaves)``;
an op's args are value indices, except ``scale``'s second arg, a number. The grader runs
the same program in torch (``graders.oracle.programs``).
"""

from __future__ import annotations

import warnings
from typing import Any

from . import probe
from ._functions import apply, functions
from ._observe import array, grad


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
        else:
            operands = [values[a] for a in args]
        values.append(apply(fns, op, operands, label=f"v{len(values)}"))
    return values


def _edge(node: Any, nodes: dict[int, int], leaves: dict[int, int]) -> list[Any]:
    """Describe a next_functions entry: ["none"], ["leaf", i], ["value", i] or ["other", name]."""
    if node is None:
        return ["none"]
    variable = getattr(node, "variable", None)
    if variable is not None and id(variable) in leaves:
        return ["leaf", leaves[id(variable)]]
    if id(node) in nodes:
        return ["value", nodes[id(node)]]
    return ["other", type(node).__name__]


@probe
def graph(tt: Any, program: dict[str, Any]) -> dict[str, Any]:
    """The graph attributes of every value: requires_grad, is_leaf, grad_fn and edges."""
    values = build(tt, program)
    leaves = {id(v): i for i, v in enumerate(values[: len(program["leaves"])])}
    nodes = {id(v.grad_fn): i for i, v in enumerate(values) if v.grad_fn is not None}
    out = []
    for v in values:
        node = v.grad_fn
        edges = None
        if node is not None:
            edges = [_edge(n, nodes, leaves) for n, _ in node.next_functions]
        out.append({
            "requires_grad": bool(v.requires_grad),
            "is_leaf": bool(v.is_leaf),
            "has_grad_fn": node is not None,
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
) -> dict[str, Any]:
    """Run ``output.backward()`` ``calls`` times (re-running the forward first when
    ``rebuild``); report leaf grads, non-leaf ``.grad`` values and the backward call log."""
    fns = functions(tt)
    fns.calls.clear()
    values = build(tt, program)
    n_leaves = len(program["leaves"])
    leaves = values[:n_leaves]
    for k in range(calls):
        if rebuild and k:
            values = build(tt, program, leaves)
        values[-1].backward(retain_graph=retain_graph)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        non_leaf_grads = [v.grad is not None for v in values[n_leaves:]]
    return {
        "grads": [grad(v) for v in leaves],
        "non_leaf_has_grad": non_leaf_grads,
        "calls": list(fns.calls),
        "output": array(values[-1]),
    }
