"""Losses (task 2.7)."""

from __future__ import annotations

import numpy as np

from ..autograd.function import BackwardNode, Function
from ..tensor import Tensor

_REDUCTIONS = ("mean", "sum", "none")


class MseLoss(Function):
    """Mean (or sum, or each) of ``(input - target) ** 2``; both inputs differentiable."""

    autocast_policy = "fp32"

    @staticmethod
    def forward(ctx: BackwardNode, input: Tensor, target: Tensor, reduction: str) -> np.ndarray:
        raise NotImplementedError("task 2.7: Losses: mse_loss and cross_entropy")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError("task 2.7: Losses: mse_loss and cross_entropy")


class CrossEntropy(Function):
    """Cross entropy of logits (classes along dim 1, or dim 0 unbatched) and class indices,
    with ``ignore_index`` and ``label_smoothing``. Computed from a stable log-softmax."""

    autocast_policy = "fp32"

    @staticmethod
    def forward(
        ctx: BackwardNode,
        input: Tensor,
        target: Tensor,
        ignore_index: int,
        reduction: str,
        label_smoothing: float,
    ) -> np.ndarray:
        # HINT: move the class dim last; loss_i = (1 - eps) * nll_i + eps * mean_c(-logp_ic),
        # HINT: 0 for ignored targets; "mean" divides by the number of targets not ignored
        raise NotImplementedError("task 2.7: Losses: mse_loss and cross_entropy")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray, None]:
        # HINT: d loss_i / d logits_i = softmax_i - (1 - eps) * onehot(target_i) - eps / C
        raise NotImplementedError("task 2.7: Losses: mse_loss and cross_entropy")


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean squared error (``reduction`` "mean", "sum" or "none"); same shapes only."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if input.shape != target.shape:
        raise ValueError(
            f"mse_loss: target size {list(target.shape)} differs from input size "
            f"{list(input.shape)} (tinytrain does not broadcast here)"
        )
    return MseLoss.apply(input, target, reduction)


def cross_entropy(
    input: Tensor,
    target: Tensor,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross entropy between logits ``input`` of shape (C,), (N, C) or (N, C, d1, ...) and
    class indices ``target`` of shape (), (N,) or (N, d1, ...)."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if target.dtype.is_floating_point:
        raise TypeError("cross_entropy: tinytrain supports class-index (integer) targets only")
    expected = input.shape[:1] + input.shape[2:] if input.ndim > 1 else ()
    if target.shape != expected:
        raise ValueError(
            f"Expected target size {list(expected)}, got {list(target.shape)}"
        )
    classes = input.shape[1] if input.ndim > 1 else input.shape[0]
    bad = (target.data != ignore_index) & ((target.data < 0) | (target.data >= classes))
    if bad.any():
        raise IndexError(f"Target {int(target.data[bad].flat[0])} is out of bounds.")
    return CrossEntropy.apply(input, target, ignore_index, reduction, label_smoothing)
