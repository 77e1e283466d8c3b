"""Reductions."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.function import BackwardNode, Function
from ..tensor import Tensor


def _dims(dim: int | tuple[int, ...] | None, ndim: int) -> tuple[int, ...]:
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return tuple(sorted(d % max(ndim, 1) for d in dims))


class Sum(Function):
    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, dim: Any = None, keepdim: bool = False) -> np.ndarray:
        ctx.dims = _dims(dim, a.ndim)
        ctx.keepdim = keepdim
        ctx.shape = a.shape
        return np.asarray(a.data.sum(axis=ctx.dims, keepdims=keepdim))

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        if not ctx.keepdim and ctx.shape:
            grad = np.expand_dims(grad, ctx.dims)
        return np.broadcast_to(grad, ctx.shape).copy()


def sum(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Sum over ``dim`` (all elements when None)."""
    return Sum.apply(input, dim, keepdim)
