"""Activations (task 2.6), numerically stable for large inputs.

At the kinks PyTorch's rules hold: relu'(0) = 0, leaky_relu'(0) = negative_slope and
hardtanh passes no gradient at its bounds (unlike clamp). relu, sigmoid, tanh and softmax
save their result and compute the gradient from it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..autograd.autocast_state import call_without_autocast
from ..autograd.function import BackwardNode, Function
from ..tensor import Tensor
from .conversion import to_dtype

_SQRT1_2 = math.sqrt(0.5)
_TANH_BETA = math.sqrt(2.0 / math.pi)  # the tanh approximation's sqrt(2 / pi)
_TANH_KAPPA = 0.044715
_PDF_ALPHA = 1.0 / math.sqrt(2.0 * math.pi)  # the normal density's 1 / sqrt(2 pi)
_erf = np.frompyfunc(math.erf, 1, 1)  # NumPy has no erf; math.erf is exact to float64


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, elementwise, in ``x``'s dtype."""
    return np.asarray(_erf(x), dtype=x.dtype)


class Relu(Function):
    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor) -> np.ndarray:
        raise NotImplementedError("task 2.6: Activations, softmax and log_softmax")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        # HINT: relu'(0) is 0; mask with np.where (a 0 * inf product would be NaN)
        raise NotImplementedError("task 2.6: Activations, softmax and log_softmax")


class LeakyRelu(Function):
    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, negative_slope: float) -> np.ndarray:
        raise NotImplementedError("task 2.6: Activations, softmax and log_softmax")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        # HINT: at 0 the slope is negative_slope
        raise NotImplementedError("task 2.6: Activations, softmax and log_softmax")


class Sigmoid(Function):
    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor) -> np.ndarray:
        # HINT: 1 / (1 + exp(-x)) overflows for x << 0: use e = exp(-|x|) on both sides
        raise NotImplementedError("task 2.6: Activations, softmax and log_softmax")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        raise NotImplementedError("task 2.6: Activations, softmax and log_softmax")


class Tanh(Function):
    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor) -> np.ndarray:
        raise NotImplementedError("task 2.6: Activations, softmax and log_softmax")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        raise NotImplementedError("task 2.6: Activations, softmax and log_softmax")


class Gelu(Function):
    """``x * Phi(x)`` (Phi the normal CDF), or its tanh approximation."""

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, approximate: str) -> np.ndarray:
        raise NotImplementedError("task 2.6: Activations, softmax and log_softmax")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        raise NotImplementedError("task 2.6: Activations, softmax and log_softmax")


class Hardtanh(Function):
    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, min_val: float, max_val: float) -> np.ndarray:
        raise NotImplementedError("task 2.6: Activations, softmax and log_softmax")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        # HINT: no gradient at the bounds themselves (PyTorch's choice; clamp differs)
        raise NotImplementedError("task 2.6: Activations, softmax and log_softmax")


class Softmax(Function):
    """``exp(x) / sum(exp(x))`` along ``axis`` (a 1-tuple, or () for a 0-d input)."""

    autocast_policy = "fp32"

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, axis: tuple[int, ...]) -> np.ndarray:
        # HINT: subtract the maximum first: exp(1e4) overflows, exp(x - max) <= 1 cannot
        raise NotImplementedError("task 2.6: Activations, softmax and log_softmax")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        raise NotImplementedError("task 2.6: Activations, softmax and log_softmax")


class LogSoftmax(Function):
    """``x - logsumexp(x)`` along ``axis``, without overflow."""

    autocast_policy = "fp32"

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, axis: tuple[int, ...]) -> np.ndarray:
        raise NotImplementedError("task 2.6: Activations, softmax and log_softmax")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        raise NotImplementedError("task 2.6: Activations, softmax and log_softmax")


def _softmax_axis(dim: int, ndim: int) -> tuple[int, ...]:
    bound = max(ndim, 1)
    if not -bound <= dim < bound:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-bound}, {bound - 1}], "
            f"but got {dim})"
        )
    return (dim % ndim,) if ndim else ()


def relu(input: Tensor) -> Tensor:
    """``max(input, 0)``."""
    return Relu.apply(input)


def leaky_relu(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """``input`` where positive, else ``negative_slope * input``."""
    return LeakyRelu.apply(input, negative_slope)


def sigmoid(input: Tensor) -> Tensor:
    """``1 / (1 + exp(-input))``, stable for large inputs of either sign."""
    return Sigmoid.apply(input)


def tanh(input: Tensor) -> Tensor:
    """Elementwise hyperbolic tangent."""
    return Tanh.apply(input)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit; ``approximate="tanh"`` for the tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate}")
    return Gelu.apply(input, approximate)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """``input`` clamped to ``[min_val, max_val]``; no gradient at the bounds."""
    return Hardtanh.apply(input, min_val, max_val)


def softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """Softmax along ``dim``, stable for large inputs. With ``dtype`` the input is cast to
    it first (and autocast leaves the call alone)."""
    return _with_dtype(Softmax, input, _softmax_axis(dim, input.ndim), dtype)


def log_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """Log of softmax along ``dim``, stable for large inputs; ``dtype`` as for softmax."""
    return _with_dtype(LogSoftmax, input, _softmax_axis(dim, input.ndim), dtype)


def _with_dtype(function: type[Function], input: Tensor, axis: tuple[int, ...],
                dtype: Any) -> Tensor:
    if dtype is None:
        return function.apply(input, axis)
    return call_without_autocast(function.apply, to_dtype(input, dtype), axis)
