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
        # BEGIN SOLUTION 2.7
        diff = input.data - target.data
        ctx.save_for_backward(diff)
        ctx.reduction = reduction
        squared = diff * diff
        if reduction == "none":
            return squared
        if reduction == "sum":
            return squared.sum()
        with np.errstate(invalid="ignore", divide="ignore"):  # the mean of nothing is NaN
            return squared.sum() / squared.size
        # END SOLUTION

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # BEGIN SOLUTION 2.7
        (diff,) = ctx.saved_tensors
        grad_input = 2 * diff.data * grad
        if ctx.reduction == "mean":
            grad_input = grad_input / diff.data.size
        return grad_input, -grad_input
        # END SOLUTION


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
        # BEGIN SOLUTION 2.7
        # HINT: move the class dim last; loss_i = (1 - eps) * nll_i + eps * mean_c(-logp_ic),
        # HINT: 0 for ignored targets; "mean" divides by the number of targets not ignored
        class_dim = 1 if input.ndim > 1 else 0
        logits = np.moveaxis(input.data, class_dim, -1)
        shifted = logits - logits.max(axis=-1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
        valid = target.data != ignore_index
        picked = np.where(valid, target.data, 0)[..., None]
        nll = -np.take_along_axis(log_probs, picked, axis=-1)[..., 0]
        losses = (1 - label_smoothing) * nll - label_smoothing * log_probs.mean(axis=-1)
        losses = np.where(valid, losses, 0)
        count = np.count_nonzero(valid)
        ctx.save_for_backward(log_probs)
        ctx.picked, ctx.valid, ctx.count = picked, valid, count
        ctx.class_dim, ctx.reduction, ctx.label_smoothing = class_dim, reduction, label_smoothing
        if reduction == "none":
            return losses
        total = losses.sum()
        if reduction == "sum":
            return total
        with np.errstate(invalid="ignore", divide="ignore"):
            return total / losses.dtype.type(count)
        # END SOLUTION

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray, None]:
        # BEGIN SOLUTION 2.7
        # HINT: d loss_i / d logits_i = softmax_i - (1 - eps) * onehot(target_i) - eps / C
        (log_probs,) = ctx.saved_tensors
        eps = ctx.label_smoothing
        grad_logits = np.exp(log_probs.data) - eps / log_probs.shape[-1]
        rows = np.take_along_axis(grad_logits, ctx.picked, axis=-1) - (1 - eps)
        np.put_along_axis(grad_logits, ctx.picked, rows, axis=-1)
        if ctx.reduction == "mean":
            with np.errstate(invalid="ignore", divide="ignore"):
                grad = grad / grad.dtype.type(ctx.count)
        scale = np.where(ctx.valid, grad, 0)[..., None]  # grad is per target for "none"
        return np.moveaxis(grad_logits * scale, -1, ctx.class_dim), None
        # END SOLUTION


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
