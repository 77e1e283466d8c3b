"""Elementwise arithmetic with broadcasting (task 2.1).

A binary op broadcasts its operands as NumPy does, so its backward must sum each
gradient back to its operand's shape (``sum_to_shape``): the engine checks shapes and
does not reduce for you.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..autograd.function import BackwardNode, Function
from ..tensor import Tensor
from ._helpers import apply_binary, promote, sum_to_shape
from .conversion import to_dtype


class Add(Function):
    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, b: Tensor) -> np.ndarray:
        # HINT: backward needs only the two input shapes
        raise NotImplementedError("task 2.1: Elementwise arithmetic with broadcasting")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError("task 2.1: Elementwise arithmetic with broadcasting")


class Sub(Function):
    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, b: Tensor) -> np.ndarray:
        raise NotImplementedError("task 2.1: Elementwise arithmetic with broadcasting")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError("task 2.1: Elementwise arithmetic with broadcasting")


class Mul(Function):
    saved_names = ("self", "other")  # grad_fn._saved_self / _saved_other, as in PyTorch

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, b: Tensor) -> np.ndarray:
        # HINT: like PyTorch, save only what backward will read: b for a's gradient, a for b's
        raise NotImplementedError("task 2.1: Elementwise arithmetic with broadcasting")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        # HINT: skip the gradients nobody needs (ctx.needs_input_grad) and return None there
        raise NotImplementedError("task 2.1: Elementwise arithmetic with broadcasting")


class Div(Function):
    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, b: Tensor) -> np.ndarray:
        raise NotImplementedError("task 2.1: Elementwise arithmetic with broadcasting")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        raise NotImplementedError("task 2.1: Elementwise arithmetic with broadcasting")


class Neg(Function):
    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor) -> np.ndarray:
        raise NotImplementedError("task 2.1: Elementwise arithmetic with broadcasting")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        raise NotImplementedError("task 2.1: Elementwise arithmetic with broadcasting")


class Pow(Function):
    """``a ** b`` for two tensors; saves ``a``, ``b`` and the result."""

    autocast_policy = "fp32"

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, b: Tensor) -> np.ndarray:
        raise NotImplementedError("task 2.1: Elementwise arithmetic with broadcasting")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        # HINT: d/da = b * a^(b-1), but 0 where b == 0 (even at a == 0);
        # HINT: d/db = a^b * log(a), but 0 where a == 0 and b >= 0 (PyTorch's choices)
        raise NotImplementedError("task 2.1: Elementwise arithmetic with broadcasting")


class PowScalar(Function):
    """``a ** exponent`` for a Python number ``exponent``; saves ``a`` (``_saved_self``)."""

    autocast_policy = "fp32"

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, exponent: float) -> np.ndarray:
        raise NotImplementedError("task 2.1: Elementwise arithmetic with broadcasting")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        # HINT: at a == 0 the gradient is p * 0^(p-1): 0 for p = 0 (not 0 * inf), inf for p = 0.5
        raise NotImplementedError("task 2.1: Elementwise arithmetic with broadcasting")


class Maximum(Function):
    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, b: Tensor) -> np.ndarray:
        raise NotImplementedError("task 2.1: Elementwise arithmetic with broadcasting")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # HINT: where a == b, each input gets half of the gradient
        raise NotImplementedError("task 2.1: Elementwise arithmetic with broadcasting")


class Minimum(Function):
    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, b: Tensor) -> np.ndarray:
        raise NotImplementedError("task 2.1: Elementwise arithmetic with broadcasting")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError("task 2.1: Elementwise arithmetic with broadcasting")


def _select_backward(
    grad: np.ndarray, a: Tensor, b: Tensor, a_wins: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Gradients of maximum/minimum: to the winner, split in half on ties."""
    raise NotImplementedError("task 2.1: Elementwise arithmetic with broadcasting")


class Where(Function):
    """``where(condition, a, b)``; ``condition`` is a bool tensor (not differentiable)."""

    @staticmethod
    def forward(ctx: BackwardNode, condition: Tensor, a: Tensor, b: Tensor) -> np.ndarray:
        raise NotImplementedError("task 2.1: Elementwise arithmetic with broadcasting")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[None, np.ndarray, np.ndarray]:
        # HINT: the branch not selected gets exactly 0, even where grad is inf or NaN
        raise NotImplementedError("task 2.1: Elementwise arithmetic with broadcasting")


def add(input: Any, other: Any) -> Tensor:
    """``input + other`` with broadcasting."""
    return apply_binary(Add, input, other)


def sub(input: Any, other: Any) -> Tensor:
    """``input - other`` with broadcasting."""
    return apply_binary(Sub, input, other)


def mul(input: Any, other: Any) -> Tensor:
    """``input * other`` with broadcasting."""
    return apply_binary(Mul, input, other)


class RDiv(Div):
    """``number / tensor``. PyTorch computes it as ``tensor.reciprocal() * number``, so
    under autocast it runs in float32 (reciprocal's category); the values are Div's."""

    autocast_policy = "fp32"


def div(input: Any, other: Any) -> Tensor:
    """``input / other`` (true division) with broadcasting."""
    if not dtypes.is_floating_point(dtypes.result_type(input, other)):
        default = dtypes.get_default_dtype()  # integers divide into the default float dtype
        a, b = promote(input, other)
        return Div.apply(to_dtype(a, default), to_dtype(b, default))
    return apply_binary(Div, input, other)


def rdiv(input: Tensor, number: Any) -> Tensor:
    """``number / input`` for a Python number (``Tensor.__rtruediv__``)."""
    if not dtypes.is_floating_point(dtypes.result_type(number, input)):
        return div(number, input)
    return apply_binary(RDiv, number, input)


def neg(input: Tensor) -> Tensor:
    """``-input``."""
    return Neg.apply(input)


def pow(input: Any, exponent: Any) -> Tensor:
    """``input ** exponent``: a tensor raised to a Python number or to a tensor
    (broadcast), or a Python number raised to a tensor."""
    if isinstance(exponent, Tensor) or not isinstance(input, Tensor):
        return apply_binary(Pow, input, exponent)
    return PowScalar.apply(input, exponent)


def maximum(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise maximum with broadcasting; ties split the gradient evenly."""
    return Maximum.apply(*promote(input, other))


def minimum(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise minimum with broadcasting; ties split the gradient evenly."""
    return Minimum.apply(*promote(input, other))


def where(condition: Tensor, input: Any, other: Any) -> Tensor:
    """``input`` where ``condition`` holds, else ``other`` (all three broadcast)."""
    a, b = promote(input, other)
    return Where.apply(condition, a, b)
