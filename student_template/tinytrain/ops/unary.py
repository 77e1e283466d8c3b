"""Elementwise math of one tensor (task 2.2).

Where a function is not differentiable, PyTorch picks a value (autograd notes): abs and
sign use 0 at 0, clamp lets the gradient through at its bounds, sqrt and log give inf at 0.
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import BackwardNode, Function
from ..tensor import Tensor


class Exp(Function):
    """``exp(a)``; saves its result (``_saved_result``), since d/da exp(a) = exp(a)."""

    autocast_policy = "fp32"

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor) -> np.ndarray:
        raise NotImplementedError("task 2.2: Unary math")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        raise NotImplementedError("task 2.2: Unary math")


class Log(Function):
    autocast_policy = "fp32"

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor) -> np.ndarray:
        raise NotImplementedError("task 2.2: Unary math")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        raise NotImplementedError("task 2.2: Unary math")


class Sqrt(Function):
    """``sqrt(a)``; saves its result. At 0 the gradient is inf (0 * inf = NaN for a zero
    incoming gradient, as in PyTorch)."""

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor) -> np.ndarray:
        raise NotImplementedError("task 2.2: Unary math")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        raise NotImplementedError("task 2.2: Unary math")


class Rsqrt(Function):
    """``1 / sqrt(a)``; saves its result: d/da = -0.5 * result^3."""

    autocast_policy = "fp32"

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor) -> np.ndarray:
        raise NotImplementedError("task 2.2: Unary math")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        raise NotImplementedError("task 2.2: Unary math")


class Abs(Function):
    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor) -> np.ndarray:
        raise NotImplementedError("task 2.2: Unary math")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        # HINT: abs'(0) is 0 (the minimum-norm subgradient)
        raise NotImplementedError("task 2.2: Unary math")


class Sign(Function):
    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor) -> np.ndarray:
        raise NotImplementedError("task 2.2: Unary math")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        raise NotImplementedError("task 2.2: Unary math")


class Clamp(Function):
    """``min(max(a, min), max)``; either bound may be None."""

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, min: float | None, max: float | None) -> np.ndarray:
        raise NotImplementedError("task 2.2: Unary math")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        # HINT: at a value equal to a bound the gradient passes (PyTorch uses >= and <=)
        raise NotImplementedError("task 2.2: Unary math")


class Reciprocal(Function):
    """``1 / a``; saves its result: d/da = -result^2."""

    autocast_policy = "fp32"

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor) -> np.ndarray:
        raise NotImplementedError("task 2.2: Unary math")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        raise NotImplementedError("task 2.2: Unary math")


class Sin(Function):
    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor) -> np.ndarray:
        raise NotImplementedError("task 2.2: Unary math")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        raise NotImplementedError("task 2.2: Unary math")


class Cos(Function):
    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor) -> np.ndarray:
        raise NotImplementedError("task 2.2: Unary math")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        raise NotImplementedError("task 2.2: Unary math")


def exp(input: Tensor) -> Tensor:
    """Elementwise ``e ** input``."""
    return Exp.apply(input)


def log(input: Tensor) -> Tensor:
    """Elementwise natural logarithm."""
    return Log.apply(input)


def sqrt(input: Tensor) -> Tensor:
    """Elementwise square root."""
    return Sqrt.apply(input)


def rsqrt(input: Tensor) -> Tensor:
    """Elementwise ``1 / sqrt(input)``."""
    return Rsqrt.apply(input)


def abs(input: Tensor) -> Tensor:
    """Elementwise absolute value."""
    return Abs.apply(input)


def sign(input: Tensor) -> Tensor:
    """-1, 0 or 1 by the sign of each element (gradient 0 everywhere)."""
    return Sign.apply(input)


def clamp(input: Tensor, min: float | None = None, max: float | None = None) -> Tensor:
    """Limit ``input`` to ``[min, max]`` (Python number bounds; either may be None)."""
    if min is None and max is None:
        raise RuntimeError("clamp: At least one of 'min' or 'max' must not be None")
    return Clamp.apply(input, min, max)


def reciprocal(input: Tensor) -> Tensor:
    """Elementwise ``1 / input``."""
    return Reciprocal.apply(input)


def sin(input: Tensor) -> Tensor:
    """Elementwise sine."""
    return Sin.apply(input)


def cos(input: Tensor) -> Tensor:
    """Elementwise cosine."""
    return Cos.apply(input)
