"""Graph programs (see ``graders.probes.programs``) run in PyTorch."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

_OPS = {
    "add": torch.add,
    "mul": torch.mul,
    "sin": torch.sin,
    "exp": torch.exp,
    "square": lambda t: t * t,
    "sum": torch.sum,
}


def build(program: dict[str, Any], leaves: list[torch.Tensor] | None = None) -> list[torch.Tensor]:
    """Every value of the program, leaves first (new leaves unless given)."""
    if leaves is None:
        leaves = [torch.tensor(np.asarray(v), requires_grad=bool(rg))
                  for v, rg in program["leaves"]]
    values = list(leaves)
    for op, *args in program["ops"]:
        if op == "scale":
            values.append(values[args[0]] * float(args[1]))
        else:
            values.append(_OPS[op](*(values[a] for a in args)))
    return values


def graph(program: dict[str, Any]) -> list[dict[str, Any]]:
    """requires_grad / is_leaf / has_grad_fn of every value, as torch sets them."""
    return [
        {"requires_grad": v.requires_grad, "is_leaf": v.is_leaf,
         "has_grad_fn": v.grad_fn is not None}
        for v in build(program)
    ]


def leaf_grads(program: dict[str, Any], calls: int = 1) -> list[np.ndarray | None]:
    """Leaf gradients after ``calls`` backward passes, each on a fresh forward."""
    values = build(program)
    leaves = values[: len(program["leaves"])]
    for k in range(calls):
        if k:
            values = build(program, leaves)
        values[-1].backward()
    return [None if v.grad is None else v.grad.numpy() for v in leaves]
