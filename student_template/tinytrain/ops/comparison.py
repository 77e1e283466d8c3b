"""Comparisons: elementwise, broadcasting, bool results, not differentiable (no Function)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor


def _compare(ufunc: np.ufunc, input: Any, other: Any) -> Tensor:
    a = input.data if isinstance(input, Tensor) else input
    b = other.data if isinstance(other, Tensor) else other
    return Tensor(np.asarray(ufunc(a, b)))


def eq(input: Any, other: Any) -> Tensor:
    """``input == other`` elementwise."""
    return _compare(np.equal, input, other)


def ne(input: Any, other: Any) -> Tensor:
    """``input != other`` elementwise."""
    return _compare(np.not_equal, input, other)


def gt(input: Any, other: Any) -> Tensor:
    """``input > other`` elementwise."""
    return _compare(np.greater, input, other)


def ge(input: Any, other: Any) -> Tensor:
    """``input >= other`` elementwise."""
    return _compare(np.greater_equal, input, other)


def lt(input: Any, other: Any) -> Tensor:
    """``input < other`` elementwise."""
    return _compare(np.less, input, other)


def le(input: Any, other: Any) -> Tensor:
    """``input <= other`` elementwise."""
    return _compare(np.less_equal, input, other)
