"""Helpers shared by the operators: operand promotion and gradient reduction."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..tensor import Tensor


def promote(a: Any, b: Any) -> tuple[Tensor, Tensor]:
    """Both operands of a binary op as Tensors of PyTorch's result dtype.

    Python scalars become zero-dim tensors; a tensor of another dtype goes through a
    (differentiable) cast.
    """
    if isinstance(a, Tensor) and isinstance(b, Tensor) and a.data.dtype == b.data.dtype:
        return a, b
    dtype = dtypes.result_type(a, b)
    return _as_dtype(a, dtype), _as_dtype(b, dtype)


def _as_dtype(x: Any, dtype: np.dtype) -> Tensor:
    if not isinstance(x, Tensor):
        return Tensor(np.asarray(x, dtype=dtype))
    if x.data.dtype == dtype:
        return x
    from .conversion import to_dtype

    return to_dtype(x, dtype)


def sum_to_shape(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Reduce a broadcast gradient back to ``shape`` (the inverse of broadcasting)."""
    # BEGIN SOLUTION 2.1
    # HINT: broadcasting prepends dims and stretches size-1 dims; sum over both kinds.
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    if extra:
        grad = grad.sum(axis=tuple(range(extra)))
    ones = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if ones:
        grad = grad.sum(axis=ones, keepdims=True)
    return grad
    # END SOLUTION
