"""Helpers shared by the operators: operand promotion and gradient reduction."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..autograd.autocast_state import state as _autocast
from ..autograd.dispatch import dispatch
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


def apply_binary(function: Any, input: Any, other: Any) -> Tensor:
    """``function.apply`` on ``input`` and ``other`` promoted to PyTorch's result dtype.

    When that result is float16 or bfloat16 and one operand is a scalar of more precision
    (a Python number, or a zero-dim tensor of a wider type), PyTorch does not round the
    scalar to the result dtype first: it computes in float32 with the scalar's own value
    and rounds the result once ("opmath"). ``x16 * 65536.0`` with ``x16 = 0.001`` is
    65.56, not ``0.001 * inf``.

    Under autocast the op's own casts come first (``2.0 / x16`` runs in float32 there),
    as PyTorch's autocast wraps the op before its type promotion.
    """
    if _autocast.enabled:
        input, other = dispatch.autocast_inputs(function, (input, other))
    if isinstance(input, Tensor) and isinstance(other, Tensor) and (
            input.data.dtype == other.data.dtype):
        return function.apply(input, other)
    dtype = dtypes.result_type(input, other)
    if dtype in dtypes.LOW_PRECISION and (_wider_scalar(input, dtype) or
                                          _wider_scalar(other, dtype)):
        # BEGIN SOLUTION 4.1
        # HINT: compute in float32 (casts are differentiable: _as_dtype), round at the end
        wide = function.apply(_as_dtype(input, np.dtype(np.float32)),
                              _as_dtype(other, np.dtype(np.float32)))
        return _as_dtype(wide, dtype)
        # END SOLUTION
    return function.apply(_as_dtype(input, dtype), _as_dtype(other, dtype))


def _wider_scalar(x: Any, dtype: np.dtype) -> bool:
    """A Python number, or a zero-dim tensor that is not already of ``dtype``."""
    if not isinstance(x, Tensor):
        return True
    return x.data.ndim == 0 and x.data.dtype != dtype


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
