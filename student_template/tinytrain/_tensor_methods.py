"""Binds the operators to Tensor methods and Python operators (``x + y``, ``x.sum()``)."""

from __future__ import annotations

from typing import Any

from . import dtypes, ops
from .ops import inplace
from .tensor import Tensor


def _reversed(fn: Any) -> Any:
    def method(self: Tensor, other: Any) -> Tensor:
        return fn(other, self)

    return method


def _cast_method(dtype: dtypes.DType) -> Any:
    def method(self: Tensor) -> Tensor:
        return ops.to_dtype(self, dtype)

    return method


def _to(self: Tensor, dtype: Any) -> Tensor:
    """``tensor.to(dtype)``: a cast (the only device is the CPU here)."""
    if isinstance(dtype, str):  # a device name
        return self
    return ops.to_dtype(self, dtype)


_METHODS: dict[str, Any] = {
    "__add__": ops.add,
    "__radd__": _reversed(ops.add),
    "__sub__": ops.sub,
    "__rsub__": _reversed(ops.sub),
    "__mul__": ops.mul,
    "__rmul__": _reversed(ops.mul),
    "__neg__": ops.neg,
    "__pow__": ops.pow,
    "__matmul__": ops.matmul,
    "__rmatmul__": _reversed(ops.matmul),
    "add": ops.add,
    "sub": ops.sub,
    "mul": ops.mul,
    "neg": ops.neg,
    "pow": ops.pow,
    "exp": ops.exp,
    "sum": ops.sum,
    "matmul": ops.matmul,
    "to": _to,
    "float": _cast_method(dtypes.float32),
    "double": _cast_method(dtypes.float64),
    "half": _cast_method(dtypes.float16),
    "long": _cast_method(dtypes.int64),
    # ----- in-place ops (assignment 3): they return the tensor itself --------------------
    "add_": inplace.add_,
    "sub_": inplace.sub_,
    "mul_": inplace.mul_,
    "div_": inplace.div_,
    "zero_": inplace.zero_,
    "fill_": inplace.fill_,
    "copy_": inplace.copy_,
    "clamp_": inplace.clamp_,
    "relu_": inplace.relu_,
    "__iadd__": inplace.add_,
    "__isub__": inplace.sub_,
    "__imul__": inplace.mul_,
    "__itruediv__": inplace.div_,
    "__setitem__": inplace.setitem,
}

for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)
