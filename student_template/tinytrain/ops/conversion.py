"""Casting between dtypes (differentiable): ``.half()``, ``.bfloat16()``, ``.float()``,
``.double()``, ``.to(dtype)`` (task 4.1)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..autograd.function import BackwardNode, Function
from ..tensor import Tensor


class ToDtype(Function):
    """``a`` converted to ``dtype``, rounding to the nearest representable value (ties to
    even; beyond float16's range, inf). The gradient flows back in ``a``'s dtype."""

    opmath = False  # a cast is the one op that must see its input's own dtype

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, dtype: np.dtype) -> np.ndarray:
        ctx.input_dtype = a.data.dtype
        with np.errstate(over="ignore"):  # float32 beyond float16's range becomes inf
            return a.data.astype(dtype)

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray, None]:
        # HINT: x.half() in float32 code: the gradient arrives in float16 and must leave in
        # HINT: float32 (what forward's input was), one gradient per forward argument
        raise NotImplementedError("task 4.1: Low precision: bfloat16, casts, promotion, float32 opmath")


def to_dtype(a: Tensor, dtype: Any) -> Tensor:
    """``a`` cast to ``dtype``; gradients flow back in ``a``'s dtype."""
    np_dtype = dtypes.to_numpy_dtype(dtype)
    if a.data.dtype == np_dtype:
        return a
    return ToDtype.apply(a, np_dtype)
