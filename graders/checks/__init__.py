"""Comparisons that turn a mismatch into feedback a student can act on."""

from .compare import (
    TOLERANCES,
    assert_close,
    assert_conforms,
    assert_equal,
    assert_raises_like,
    running_example,
    tolerance,
)

__all__ = [
    "TOLERANCES",
    "assert_close",
    "assert_conforms",
    "assert_equal",
    "assert_raises_like",
    "running_example",
    "tolerance",
]
