"""Casting between dtypes (differentiable)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..autograd.function import BackwardNode, Function
from ..tensor import Tensor


class ToDtype(Function):
    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, dtype: np.dtype) -> np.ndarray:
        ctx.input_dtype = a.data.dtype
        return a.data.astype(dtype)

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        return grad.astype(ctx.input_dtype)


def to_dtype(a: Tensor, dtype: Any) -> Tensor:
    """``a`` cast to ``dtype``; gradients flow back in ``a``'s dtype."""
    np_dtype = dtypes.to_numpy_dtype(dtype)
    if a.data.dtype == np_dtype:
        return a
    return ToDtype.apply(a, np_dtype)
