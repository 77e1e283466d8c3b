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


def _to(self: Tensor, *args: Any, dtype: Any = None, device: Any = None,
        **kwargs: Any) -> Tensor:
    """``tensor.to(dtype)``, ``.to(device, dtype)``, ``.to(other)`` (other's dtype and
    device) or ``.to(dtype=..., device=...)``: a differentiable cast and/or move ("cpu",
    "cuda": assignment 6's device)."""
    for arg in args:
        if isinstance(arg, Tensor):
            dtype, device = arg.dtype, arg.device
        elif isinstance(arg, str):
            device = arg
        else:
            dtype = arg
    out = self if dtype is None else ops.to_dtype(self, dtype)
    if device is not None and str(device) != out.device:
        from .cuda.device import to_device

        out = to_device(out, device)
    return out


def _cuda(self: Tensor, device: Any = None) -> Tensor:
    """A copy on the cuda device (the tensor itself when it is there)."""
    return _to(self, "cuda")


def _cpu(self: Tensor) -> Tensor:
    """A copy in host memory (the tensor itself when it is there)."""
    return _to(self, "cpu")


def _where(self: Tensor, condition: Tensor, other: Any) -> Tensor:
    """``self.where(condition, other)``: ``self`` where ``condition``, else ``other``."""
    return ops.where(condition, self, other)


_METHODS: dict[str, Any] = {
    "__add__": ops.add,
    "__radd__": _reversed(ops.add),
    "__sub__": ops.sub,
    "__rsub__": _reversed(ops.sub),
    "__mul__": ops.mul,
    "__rmul__": _reversed(ops.mul),
    "__truediv__": ops.div,
    "__rtruediv__": ops.arithmetic.rdiv,
    "__neg__": ops.neg,
    "__pow__": ops.pow,
    "__rpow__": _reversed(ops.pow),
    "__matmul__": ops.matmul,
    "__rmatmul__": _reversed(ops.matmul),
    "__abs__": ops.abs,
    "__getitem__": ops.getitem,
    "__eq__": ops.eq,
    "__ne__": ops.ne,
    "__gt__": ops.gt,
    "__ge__": ops.ge,
    "__lt__": ops.lt,
    "__le__": ops.le,
    "add": ops.add,
    "sub": ops.sub,
    "mul": ops.mul,
    "div": ops.div,
    "neg": ops.neg,
    "pow": ops.pow,
    "maximum": ops.maximum,
    "minimum": ops.minimum,
    "where": _where,
    "exp": ops.exp,
    "log": ops.log,
    "sqrt": ops.sqrt,
    "rsqrt": ops.rsqrt,
    "abs": ops.abs,
    "sign": ops.sign,
    "clamp": ops.clamp,
    "reciprocal": ops.reciprocal,
    "sin": ops.sin,
    "cos": ops.cos,
    "sum": ops.sum,
    "mean": ops.mean,
    "var": ops.var,
    "max": ops.max,
    "min": ops.min,
    "amax": ops.amax,
    "amin": ops.amin,
    "logsumexp": ops.logsumexp,
    "argmax": ops.argmax,
    "argmin": ops.argmin,
    "matmul": ops.matmul,
    "reshape": ops.reshape,
    "view": ops.view,
    "flatten": ops.flatten,
    "squeeze": ops.squeeze,
    "unsqueeze": ops.unsqueeze,
    "permute": ops.permute,
    "transpose": ops.transpose,
    "expand": ops.expand,
    "contiguous": ops.contiguous,
    "relu": ops.relu,
    "sigmoid": ops.sigmoid,
    "tanh": ops.tanh,
    "softmax": ops.softmax,
    "log_softmax": ops.log_softmax,
    "eq": ops.eq,
    "ne": ops.ne,
    "gt": ops.gt,
    "ge": ops.ge,
    "lt": ops.lt,
    "le": ops.le,
    "to": _to,
    "cuda": _cuda,
    "cpu": _cpu,
    "float": _cast_method(dtypes.float32),
    "double": _cast_method(dtypes.float64),
    "half": _cast_method(dtypes.float16),
    "bfloat16": _cast_method(dtypes.bfloat16),
    "long": _cast_method(dtypes.int64),
    # properties: all dims reversed, and the last two swapped (batched matrices)
    "T": property(lambda self: ops.permute(self, tuple(range(self.ndim))[::-1])),
    "mT": property(lambda self: ops.transpose(self, -2, -1)),
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
