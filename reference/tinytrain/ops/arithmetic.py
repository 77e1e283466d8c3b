"""Elementwise arithmetic with broadcasting."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.function import BackwardNode, Function
from ..tensor import Tensor
from ._helpers import promote, sum_to_shape


class Add(Function):
    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, b: Tensor) -> np.ndarray:
        ctx.shapes = (a.shape, b.shape)
        return a.data + b.data

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a_shape, b_shape = ctx.shapes
        return sum_to_shape(grad, a_shape), sum_to_shape(grad, b_shape)


class Sub(Function):
    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, b: Tensor) -> np.ndarray:
        ctx.shapes = (a.shape, b.shape)
        return a.data - b.data

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a_shape, b_shape = ctx.shapes
        return sum_to_shape(grad, a_shape), sum_to_shape(-grad, b_shape)


class Mul(Function):
    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, b: Tensor) -> np.ndarray:
        ctx.save_for_backward(a, b)
        return a.data * b.data

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        a, b = ctx.saved_tensors
        grad_a = sum_to_shape(grad * b.data, a.shape) if ctx.needs_input_grad[0] else None
        grad_b = sum_to_shape(grad * a.data, b.shape) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


class Neg(Function):
    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor) -> np.ndarray:
        return -a.data

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        return -grad


class PowScalar(Function):
    """``a ** exponent`` for a Python number ``exponent``; saves ``a`` (``_saved_self``)."""

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, exponent: float) -> np.ndarray:
        ctx.save_for_backward(a)
        ctx.exponent = exponent
        return np.power(a.data, a.data.dtype.type(exponent))

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        (a,) = ctx.saved_tensors
        p = ctx.exponent
        if p == 0:
            return np.zeros_like(grad)
        with np.errstate(divide="ignore", invalid="ignore"):
            return grad * p * np.power(a.data, a.data.dtype.type(p - 1))


def add(input: Any, other: Any) -> Tensor:
    """``input + other`` with broadcasting."""
    return Add.apply(*promote(input, other))


def sub(input: Any, other: Any) -> Tensor:
    """``input - other`` with broadcasting."""
    return Sub.apply(*promote(input, other))


def mul(input: Any, other: Any) -> Tensor:
    """``input * other`` with broadcasting."""
    return Mul.apply(*promote(input, other))


def neg(input: Tensor) -> Tensor:
    """``-input``."""
    return Neg.apply(input)


def pow(input: Tensor, exponent: float) -> Tensor:
    """``input ** exponent`` for a Python number exponent."""
    if isinstance(exponent, Tensor):
        raise NotImplementedError("pow with a tensor exponent is added in assignment 2")
    return PowScalar.apply(input, exponent)
