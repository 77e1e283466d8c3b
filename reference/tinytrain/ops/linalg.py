"""Matrix products (task 2.4)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..autograd.function import BackwardNode, Function
from ..tensor import Tensor
from ._helpers import promote, sum_to_shape


class Matmul(Function):
    """``a @ b`` with NumPy/PyTorch semantics: 1-D operands, batches, broadcast batch dims.

    float16/bfloat16 operands are multiplied in float32 (``Function.apply``'s opmath):
    products accumulate in float32 and the result is rounded once, as on tensor cores."""

    autocast_policy = "lower_precision"

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, b: Tensor) -> np.ndarray:
        # BEGIN SOLUTION 2.4
        ctx.save_for_backward(a, b)
        return np.matmul(a.data, b.data)
        # END SOLUTION

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        # BEGIN SOLUTION 2.4
        # HINT: treat a 1-D operand as a matrix (a row for a, a column for b), as forward did;
        # HINT: transpose only the last two dims, and sum over broadcast batch dims
        a, b = ctx.saved_tensors
        a_data, b_data = a.data, b.data
        a2 = a_data[None, :] if a_data.ndim == 1 else a_data
        b2 = b_data[:, None] if b_data.ndim == 1 else b_data
        g = grad
        if b_data.ndim == 1:
            g = g[..., None]
        if a_data.ndim == 1:
            g = np.expand_dims(g, -2)
        grad_a = grad_b = None
        if ctx.needs_input_grad[0]:
            ga = np.matmul(g, np.swapaxes(b2, -1, -2))
            grad_a = sum_to_shape(ga, a2.shape).reshape(a_data.shape)
        if ctx.needs_input_grad[1]:
            gb = np.matmul(np.swapaxes(a2, -1, -2), g)
            grad_b = sum_to_shape(gb, b2.shape).reshape(b_data.shape)
        return grad_a, grad_b
        # END SOLUTION


class Linear(Function):
    """``x @ weight.T + bias`` for ``x`` of shape (*, in), weight (out, in), bias (out,)."""

    autocast_policy = "lower_precision"

    @staticmethod
    def forward(ctx: BackwardNode, x: Tensor, weight: Tensor, bias: Tensor | None) -> np.ndarray:
        # BEGIN SOLUTION 2.4
        ctx.save_for_backward(x, weight)
        out = np.matmul(_rows(x.data), weight.data.T)
        if bias is not None:
            out += bias.data
        return out.reshape(*x.shape[:-1], weight.shape[0])
        # END SOLUTION

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        # BEGIN SOLUTION 2.4
        # HINT: flatten the batch dims to rows: the weight and bias gradients sum over them
        x, weight = ctx.saved_tensors
        needs = ctx.needs_input_grad
        rows = _rows(grad)
        grad_x = np.matmul(rows, weight.data).reshape(x.shape) if needs[0] else None
        grad_w = np.matmul(rows.T, _rows(x.data)) if needs[1] else None
        grad_b = rows.sum(axis=0) if needs[2] else None
        return grad_x, grad_w, grad_b
        # END SOLUTION


def _rows(a: np.ndarray) -> np.ndarray:
    """``a`` (*, n) as a matrix (rows, n): one matrix product then replaces NumPy's loop of
    small ones over the batch dims (twice as fast for a GPT's activations)."""
    return a.reshape(math.prod(a.shape[:-1]), a.shape[-1])


def matmul(input: Any, other: Any) -> Tensor:
    """Matrix product with broadcasting over batch dims."""
    if input.ndim == 0 or other.ndim == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D")
    return Matmul.apply(*promote(input, other))


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias`` (``torch.nn.functional.linear``)."""
    if weight.ndim != 2:
        raise ValueError("linear: tinytrain supports a 2-D weight only")
    return Linear.apply(input, weight, bias)
