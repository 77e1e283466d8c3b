"""Loss modules (task 5.11): each wraps its operator in ``tt.nn.functional``."""

from __future__ import annotations

from ..tensor import Tensor
from . import functional as F  # noqa: N812 - PyTorch's usual name
from .module import Module

_REDUCTIONS = ("mean", "sum", "none")


class _Loss(Module):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        if reduction not in _REDUCTIONS:
            raise ValueError(f"{reduction} is not a valid value for reduction")
        self.reduction = reduction


class MSELoss(_Loss):
    """Mean squared error between ``input`` and ``target`` (same shape); ``reduction``
    "mean" (the default), "sum" or "none"."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        raise NotImplementedError("task 5.11: Activation and loss modules")


class CrossEntropyLoss(_Loss):
    """Cross entropy between logits (classes along dim 1, or dim 0 unbatched) and class
    indices; targets equal to ``ignore_index`` count for nothing (and "mean" divides by
    the number of the others); ``label_smoothing`` mixes the one-hot target with the
    uniform distribution. Class weights are not supported (``weight`` must be None)."""

    def __init__(self, weight: Tensor | None = None, ignore_index: int = -100,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(reduction)
        if weight is not None:
            raise ValueError("tinytrain: CrossEntropyLoss does not support class weights")
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError("label_smoothing must be between 0.0 and 1.0. "
                             f"Got: {label_smoothing}")
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        raise NotImplementedError("task 5.11: Activation and loss modules")
