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
        # BEGIN SOLUTION 2.6
        result = np.maximum(a.data, 0)
        ctx.save_for_backward(result)
        return result
        # END SOLUTION

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        # BEGIN SOLUTION 2.6
        # HINT: relu'(0) is 0; mask with np.where (a 0 * inf product would be NaN)
        (result,) = ctx.saved_tensors
        return np.where(result.data <= 0, 0, grad)
        # END SOLUTION


class LeakyRelu(Function):
    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, negative_slope: float) -> np.ndarray:
        # BEGIN SOLUTION 2.6
        ctx.save_for_backward(a)
        ctx.negative_slope = negative_slope
        return np.where(a.data > 0, a.data, a.data * negative_slope)
        # END SOLUTION

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        # BEGIN SOLUTION 2.6
        # HINT: at 0 the slope is negative_slope
        (a,) = ctx.saved_tensors
        return np.where(a.data > 0, grad, grad * ctx.negative_slope)
        # END SOLUTION


class Sigmoid(Function):
    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor) -> np.ndarray:
        # BEGIN SOLUTION 2.6
        # HINT: 1 / (1 + exp(-x)) overflows for x << 0: use e = exp(-|x|) on both sides
        e = np.exp(-np.abs(a.data))
        result = np.where(a.data >= 0, 1 / (1 + e), e / (1 + e))
        ctx.save_for_backward(result)
        return result
        # END SOLUTION

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        # BEGIN SOLUTION 2.6
        (result,) = ctx.saved_tensors
        y = result.data
        return grad * (1 - y) * y
        # END SOLUTION


class Tanh(Function):
    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor) -> np.ndarray:
        # BEGIN SOLUTION 2.6
        result = np.tanh(a.data)
        ctx.save_for_backward(result)
        return result
        # END SOLUTION

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        # BEGIN SOLUTION 2.6
        (result,) = ctx.saved_tensors
        y = result.data
        return grad * (1 - y * y)
        # END SOLUTION


class Gelu(Function):
    """``x * Phi(x)`` (Phi the normal CDF), or its tanh approximation."""

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, approximate: str) -> np.ndarray:
        # BEGIN SOLUTION 2.6
        ctx.save_for_backward(a)
        ctx.approximate = approximate
        x = a.data
        if approximate == "tanh":
            inner = _TANH_BETA * (x + _TANH_KAPPA * (x * x * x))
            return 0.5 * x * (1 + np.tanh(inner))
        return x * 0.5 * (1 + erf(x * _SQRT1_2))
        # END SOLUTION

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        # BEGIN SOLUTION 2.6
        (a,) = ctx.saved_tensors
        x = a.data
        if ctx.approximate == "tanh":
            t = np.tanh(_TANH_BETA * (x + _TANH_KAPPA * (x * x * x)))
            d_inner = _TANH_BETA * (1 + 3 * _TANH_KAPPA * (x * x))
            return grad * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * d_inner)
        cdf = 0.5 * (1 + erf(x * _SQRT1_2))
        pdf = _PDF_ALPHA * np.exp(x * x * -0.5)
        return grad * (cdf + x * pdf)
        # END SOLUTION


class Hardtanh(Function):
    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, min_val: float, max_val: float) -> np.ndarray:
        # BEGIN SOLUTION 2.6
        ctx.save_for_backward(a)
        ctx.bounds = (min_val, max_val)
        return np.minimum(np.maximum(a.data, min_val), max_val)
        # END SOLUTION

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        # BEGIN SOLUTION 2.6
        # HINT: no gradient at the bounds themselves (PyTorch's choice; clamp differs)
        (a,) = ctx.saved_tensors
        low, high = ctx.bounds
        return np.where((a.data > low) & (a.data < high), grad, 0)
        # END SOLUTION


class Softmax(Function):
    """``exp(x) / sum(exp(x))`` along ``axis`` (a 1-tuple, or () for a 0-d input)."""

    autocast_policy = "fp32"

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, axis: tuple[int, ...]) -> np.ndarray:
        # BEGIN SOLUTION 2.6
        # HINT: subtract the maximum first: exp(1e4) overflows, exp(x - max) <= 1 cannot
        shifted = a.data - a.data.max(axis=axis, keepdims=True, initial=-np.inf)
        e = np.exp(shifted)
        result = e / e.sum(axis=axis, keepdims=True)
        ctx.save_for_backward(result)
        ctx.axis = axis
        return result
        # END SOLUTION

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        # BEGIN SOLUTION 2.6
        (result,) = ctx.saved_tensors
        y = result.data
        return y * (grad - (grad * y).sum(axis=ctx.axis, keepdims=True))
        # END SOLUTION


class LogSoftmax(Function):
    """``x - logsumexp(x)`` along ``axis``, without overflow."""

    autocast_policy = "fp32"

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, axis: tuple[int, ...]) -> np.ndarray:
        # BEGIN SOLUTION 2.6
        shifted = a.data - a.data.max(axis=axis, keepdims=True, initial=-np.inf)
        result = shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
        ctx.save_for_backward(result)
        ctx.axis = axis
        return result
        # END SOLUTION

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        # BEGIN SOLUTION 2.6
        (result,) = ctx.saved_tensors
        return grad - np.exp(result.data) * grad.sum(axis=ctx.axis, keepdims=True)
        # END SOLUTION


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
