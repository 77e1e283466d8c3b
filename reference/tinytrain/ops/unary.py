"""Elementwise math of one tensor."""

from __future__ import annotations

import numpy as np

from ..autograd.function import BackwardNode, Function
from ..tensor import Tensor


class Exp(Function):
    """``exp(a)``; saves its result (``_saved_result``), since d/da exp(a) = exp(a)."""

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor) -> np.ndarray:
        result = np.exp(a.data)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        (result,) = ctx.saved_tensors
        return grad * result.data


def exp(input: Tensor) -> Tensor:
    """Elementwise ``e ** input``."""
    return Exp.apply(input)
