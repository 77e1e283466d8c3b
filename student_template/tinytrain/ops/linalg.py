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
        raise NotImplementedError("task 2.4: matmul and linear")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        # HINT: treat a 1-D operand as a matrix (a row for a, a column for b), as forward did;
        # HINT: transpose only the last two dims, and sum over broadcast batch dims
        raise NotImplementedError("task 2.4: matmul and linear")


class Linear(Function):
    """``x @ weight.T + bias`` for ``x`` of shape (*, in), weight (out, in), bias (out,)."""

    autocast_policy = "lower_precision"

    @staticmethod
    def forward(ctx: BackwardNode, x: Tensor, weight: Tensor, bias: Tensor | None) -> np.ndarray:
        raise NotImplementedError("task 2.4: matmul and linear")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        # HINT: flatten the batch dims to rows: the weight and bias gradients sum over them
        raise NotImplementedError("task 2.4: matmul and linear")


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
