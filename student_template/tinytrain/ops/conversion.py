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
    even; beyond float16's range, inf). Like PyTorch, float64 goes to float16/bfloat16
    through float32 (so it can round twice). The gradient flows back in ``a``'s dtype."""

    opmath = False  # a cast is the one op that must see its input's own dtype

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, dtype: np.dtype) -> np.ndarray:
        ctx.input_dtype = a.data.dtype
        return cast_array(a.data, dtype)

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray, None]:
        # HINT: x.half() in float32 code: the gradient arrives in float16 and must leave in
        # HINT: float32 (what forward's input was), one gradient per forward argument;
        # HINT: cast_array converts as forward does
        raise NotImplementedError("task 4.1: Low precision: bfloat16, casts, promotion, float32 opmath")


def cast_array(array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``array`` converted to ``dtype`` as PyTorch converts: float64 goes to float16 or
    bfloat16 through float32; beyond float16's range the result is inf (no warning)."""
    with np.errstate(over="ignore"):
        if array.dtype == np.float64 and dtype in dtypes.LOW_PRECISION:
            array = array.astype(np.float32)
        return array.astype(dtype)


def to_dtype(a: Tensor, dtype: Any) -> Tensor:
    """``a`` cast to ``dtype``; gradients flow back in ``a``'s dtype."""
    np_dtype = dtypes.to_numpy_dtype(dtype)
    if a.data.dtype == np_dtype:
        return a
    return ToDtype.apply(a, np_dtype)
