"""Matrix products."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.function import BackwardNode, Function
from ..tensor import Tensor
from ._helpers import promote, sum_to_shape


class Matmul(Function):
    """``a @ b`` with NumPy/PyTorch semantics: 1-D operands, batches, broadcast batch dims."""

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, b: Tensor) -> np.ndarray:
        ctx.save_for_backward(a, b)
        return np.asarray(np.matmul(a.data, b.data))

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        a, b = ctx.saved_tensors
        a_data, b_data = a.data, b.data
        # promote 1-D operands to matrices, as the forward did implicitly
        a2 = a_data[None, :] if a_data.ndim == 1 else a_data
        b2 = b_data[:, None] if b_data.ndim == 1 else b_data
        g = grad
        if a_data.ndim == 1:
            g = np.expand_dims(g, -2)
        if b_data.ndim == 1:
            g = np.expand_dims(g, -1)
        grad_a = grad_b = None
        if ctx.needs_input_grad[0]:
            ga = np.matmul(g, np.swapaxes(b2, -1, -2))
            ga = sum_to_shape(ga, a2.shape)
            grad_a = ga.reshape(a_data.shape)
        if ctx.needs_input_grad[1]:
            gb = np.matmul(np.swapaxes(a2, -1, -2), g)
            gb = sum_to_shape(gb, b2.shape)
            grad_b = gb.reshape(b_data.shape)
        return grad_a, grad_b


def matmul(input: Any, other: Any) -> Tensor:
    """Matrix product with broadcasting over batch dims."""
    if input.ndim == 0 or other.ndim == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D")
    return Matmul.apply(*promote(input, other))
