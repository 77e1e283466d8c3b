"""Graph programs (see ``graders.strategies.programs``) run in PyTorch.

The ops tinytrain's probes define as their own Functions without a torch operator
(two outputs, integer outputs, a backward that returns None) are ``torch.autograd.Function``
subclasses here with the same forward and backward, so torch's own Function machinery
decides their graph attributes and which gradients flow where."""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import torch

from ..strategies.programs import operands, outputs


class _SinCos(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        ctx.save_for_backward(a)
        return torch.sin(a), torch.cos(a)

    @staticmethod
    def backward(ctx: Any, g_sin: torch.Tensor, g_cos: torch.Tensor) -> torch.Tensor:
        (a,) = ctx.saved_tensors
        return g_sin * torch.cos(a) - g_cos * torch.sin(a)


class _ReluMask(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mask = a > 0
        ctx.save_for_backward(mask)
        return torch.where(mask, a, torch.zeros_like(a)), mask.to(torch.int64)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor, grad_mask: torch.Tensor) -> torch.Tensor:
        (mask,) = ctx.saved_tensors
        return grad * mask


class _Positive(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, a: torch.Tensor) -> torch.Tensor:
        return (a > 0).to(torch.int64)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> None:
        return None


class _Zero(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, a: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(a)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> None:
        return None


_OPS = {
    "add": torch.add,
    "mul": torch.mul,
    "sin": torch.sin,
    "exp": torch.exp,
    "square": lambda t: t * t,
    "sum": torch.sum,
    "sincos": _SinCos.apply,
    "relu_mask": _ReluMask.apply,
    "positive": _Positive.apply,
    "zero": _Zero.apply,
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
            continue
        result = _OPS[op](*(values[a] for a in operands(op, args)))
        values.extend(result if len(outputs(op)) > 1 else [result])
    return values


def _mode(mode: str | None) -> contextlib.ExitStack:
    """torch's grad-mode contexts for a mode name of ``graders.probes.programs.MODES``."""
    stack = contextlib.ExitStack()
    if mode in ("no_grad", "enable_grad"):
        stack.enter_context(torch.no_grad())
    if mode in ("inference_mode", "inference_mode+enable_grad"):
        stack.enter_context(torch.inference_mode())
    if mode in ("enable_grad", "inference_mode+enable_grad"):
        stack.enter_context(torch.enable_grad())
    return stack


def graph(program: dict[str, Any], mode: str | None = None) -> list[dict[str, Any]]:
    """requires_grad / is_leaf / has_grad_fn of every value, as torch sets them (with
    ``mode``: the leaves made first, the ops run in that grad mode)."""
    leaves = [torch.tensor(np.asarray(v), requires_grad=bool(rg)) for v, rg in program["leaves"]]
    with _mode(mode):
        values = build(program, leaves)
    return [
        {"requires_grad": v.requires_grad, "is_leaf": v.is_leaf,
         "has_grad_fn": v.grad_fn is not None}
        for v in values
    ]


def leaf_grads(program: dict[str, Any], calls: int = 1, roots: list[int] | None = None,
               root_grads: list[np.ndarray] | None = None,
               hooks: list[list[Any]] | None = None) -> list[np.ndarray | None]:
    """Leaf gradients after ``calls`` backward passes, each on a fresh forward: of the
    output, or of ``roots`` (value indices) with ``root_grads`` in one
    ``torch.autograd.backward`` call. ``hooks`` ([value, k], ...): a hook returning
    ``grad * k`` on each of those values."""
    values = build(program)
    n_leaves = len(program["leaves"])
    leaves = values[:n_leaves]
    for k in range(calls):
        if k:
            values = build(program, leaves)
        for v, factor in hooks or []:
            if k == 0 or v >= n_leaves:
                values[v].register_hook(
                    lambda g, factor=factor: None if g is None else g * factor)
        if roots is None:
            values[-1].backward()
        else:
            torch.autograd.backward([values[r] for r in roots],
                                    [torch.tensor(g) for g in root_grads or []])
    return [None if v.grad is None else v.grad.numpy() for v in leaves]
