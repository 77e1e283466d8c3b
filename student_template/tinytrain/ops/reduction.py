"""Reductions (task 2.3).

The backward of a reduction broadcasts the gradient back over the reduced dims (put them
back first when ``keepdim=False``). Ties follow PyTorch: ``max()``, ``amax`` and friends
split the gradient evenly among tied elements; ``max(dim)`` sends all of it to the index
it returned, the first maximal one.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ..autograd.autocast_state import call_without_autocast
from ..autograd.function import BackwardNode, Function
from ..tensor import Tensor
from .arithmetic import maximum, minimum
from .conversion import to_dtype


def _dims(dim: int | tuple[int, ...] | list[int] | None, ndim: int) -> tuple[int, ...]:
    """The reduced axes, non-negative and sorted; None or () mean every axis. A 0-d
    tensor accepts dim 0 or -1 and has no axis to reduce."""
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if not dims:
        return tuple(range(ndim))
    bound = ndim or 1
    for d in dims:
        if not -bound <= d < bound:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-bound}, {bound - 1}], "
                f"but got {d})"
            )
    return () if ndim == 0 else tuple(sorted(d % ndim for d in dims))


def _restore_dims(grad: np.ndarray, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
    """Put the reduced dims back (as size 1) so ``grad`` broadcasts against the input."""
    return grad if keepdim else np.expand_dims(grad, dims)


class Sum(Function):
    autocast_policy = "fp32"

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
        raise NotImplementedError("task 2.3: Reductions: sum, mean, var, max/min, amax/amin, logsumexp")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        # HINT: every input element contributed once: broadcast the gradient back
        raise NotImplementedError("task 2.3: Reductions: sum, mean, var, max/min, amax/amin, logsumexp")


class Mean(Function):
    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
        raise NotImplementedError("task 2.3: Reductions: sum, mean, var, max/min, amax/amin, logsumexp")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        raise NotImplementedError("task 2.3: Reductions: sum, mean, var, max/min, amax/amin, logsumexp")


class Var(Function):
    """Variance with ``correction`` (1: the unbiased estimate, 0: the biased one)."""

    @staticmethod
    def forward(
        ctx: BackwardNode, a: Tensor, dims: tuple[int, ...], correction: float, keepdim: bool
    ) -> np.ndarray:
        raise NotImplementedError("task 2.3: Reductions: sum, mean, var, max/min, amax/amin, logsumexp")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        # HINT: d var / d x_i = 2 (x_i - mean) / (N - correction)
        raise NotImplementedError("task 2.3: Reductions: sum, mean, var, max/min, amax/amin, logsumexp")


class Amax(Function):
    """The largest value over ``dims``; ties share the gradient evenly (also ``max()``)."""

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
        raise NotImplementedError("task 2.3: Reductions: sum, mean, var, max/min, amax/amin, logsumexp")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        # HINT: count the elements equal to the result in each reduced slice
        raise NotImplementedError("task 2.3: Reductions: sum, mean, var, max/min, amax/amin, logsumexp")


class Amin(Amax):
    """The smallest value over ``dims``; backward is Amax's (ties share evenly)."""

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
        raise NotImplementedError("task 2.3: Reductions: sum, mean, var, max/min, amax/amin, logsumexp")


class MaxDim(Function):
    """``max(input, dim)``: values and the index of the first maximum along ``dim``."""

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, dim: int, keepdim: bool) -> tuple[np.ndarray, ...]:
        # HINT: np.argmax returns the first maximal index, as PyTorch does
        raise NotImplementedError("task 2.3: Reductions: sum, mean, var, max/min, amax/amin, logsumexp")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray, grad_indices: np.ndarray) -> np.ndarray:
        # HINT: all of the gradient goes to the returned index, none to other tied elements
        raise NotImplementedError("task 2.3: Reductions: sum, mean, var, max/min, amax/amin, logsumexp")


class MinDim(MaxDim):
    """``min(input, dim)``; backward is MaxDim's."""

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, dim: int, keepdim: bool) -> tuple[np.ndarray, ...]:
        raise NotImplementedError("task 2.3: Reductions: sum, mean, var, max/min, amax/amin, logsumexp")


def _take_along(
    ctx: BackwardNode, a: Tensor, indices: np.ndarray, dim: int, keepdim: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The values at ``indices`` (keepdims form) and the indices, as max/min(dim) return them."""
    raise NotImplementedError("task 2.3: Reductions: sum, mean, var, max/min, amax/amin, logsumexp")


class Logsumexp(Function):
    """``log(sum(exp(a)))`` over ``dims``, computed without overflow."""

    autocast_policy = "fp32"

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
        # HINT: shift by the maximum so exp cannot overflow (and skip an infinite maximum)
        raise NotImplementedError("task 2.3: Reductions: sum, mean, var, max/min, amax/amin, logsumexp")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        raise NotImplementedError("task 2.3: Reductions: sum, mean, var, max/min, amax/amin, logsumexp")


class Argmax(Function):
    """Index of the first maximum (flat when ``dim`` is None); not differentiable."""

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, dim: int | None, keepdim: bool) -> np.ndarray:
        raise NotImplementedError("task 2.3: Reductions: sum, mean, var, max/min, amax/amin, logsumexp")


class Argmin(Function):
    """Index of the first minimum (flat when ``dim`` is None); not differentiable."""

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, dim: int | None, keepdim: bool) -> np.ndarray:
        raise NotImplementedError("task 2.3: Reductions: sum, mean, var, max/min, amax/amin, logsumexp")


class ValuesIndices(NamedTuple):
    """What ``max(dim)`` / ``min(dim)`` return (PyTorch's ``torch.return_types.max``)."""

    values: Tensor
    indices: Tensor


def sum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Sum over ``dim`` (an int or a tuple; every dim when None). With ``dtype`` the input
    is cast to it first (and autocast leaves the call alone)."""
    dims = _dims(dim, input.ndim)
    if dtype is None:
        return Sum.apply(input, dims, keepdim)
    return call_without_autocast(Sum.apply, to_dtype(input, dtype), dims, keepdim)


def mean(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Mean over ``dim`` (an int or a tuple; every dim when None)."""
    return Mean.apply(input, _dims(dim, input.ndim), keepdim)


def var(
    input: Tensor,
    dim: Any = None,
    *,
    correction: float | None = None,
    keepdim: bool = False,
    unbiased: bool | None = None,
) -> Tensor:
    """Variance over ``dim``, dividing by ``N - correction`` (default 1: unbiased)."""
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return Var.apply(input, _dims(dim, input.ndim), correction, keepdim)


def _single_dim(dim: int, ndim: int) -> int:
    if ndim == 0:
        raise ValueError("tinytrain does not support max/min/argmax along a dim of a 0-d tensor")
    return _dims(dim, ndim)[0]


def max(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """``max(input)``: the largest element. ``max(input, dim)``: (values, indices) along
    ``dim``. ``max(input, other)``: the elementwise ``maximum``."""
    if isinstance(dim, Tensor):
        return maximum(input, dim)
    if dim is None:
        return Amax.apply(input, _dims(None, input.ndim), False)
    return ValuesIndices(*MaxDim.apply(input, _single_dim(dim, input.ndim), keepdim))


def min(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """``min(input)``, ``min(input, dim)`` or ``min(input, other)``, as ``max``."""
    if isinstance(dim, Tensor):
        return minimum(input, dim)
    if dim is None:
        return Amin.apply(input, _dims(None, input.ndim), False)
    return ValuesIndices(*MinDim.apply(input, _single_dim(dim, input.ndim), keepdim))


def amax(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    """The maximum over ``dim`` (every dim by default); ties share the gradient."""
    return Amax.apply(input, _dims(dim, input.ndim), keepdim)


def amin(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    """The minimum over ``dim`` (every dim by default); ties share the gradient."""
    return Amin.apply(input, _dims(dim, input.ndim), keepdim)


def logsumexp(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(input), dim))``, stable for large inputs."""
    return Logsumexp.apply(input, _dims(dim, input.ndim), keepdim)


def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the first maximum, over all elements (flattened) or along ``dim``."""
    return Argmax.apply(input, None if dim is None else _single_dim(dim, input.ndim), keepdim)


def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the first minimum, over all elements (flattened) or along ``dim``."""
    return Argmin.apply(input, None if dim is None else _single_dim(dim, input.ndim), keepdim)
