"""In-place operators: ``add_``, ``mul_``, ``zero_``, ``copy_``, ``clamp_``, ``relu_``,
``x += y`` ... and ``x[key] = value``.

Each is a Function with ``is_inplace = True``: forward writes into its first argument's
array and returns it, and ``Function.apply`` returns the same Tensor with its version
bumped and its history rebased (``autograd.inplace``). What they save mirrors PyTorch
(same tensors, same order), so saved-tensor hooks fire as often as they do in torch: the
other operand when the target needs a gradient, a copy of the target's old value when the
other operand needs one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..autograd.function import BackwardNode, Function
from ..tensor import Tensor
from ._helpers import sum_to_shape

# PyTorch's scalar type names, for its casting error
_TORCH_NAMES = {
    "float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
    "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
    "bool": "Bool",
}


def _operand(target: Tensor, other: Any) -> np.ndarray:
    """``other``'s values for a write into ``target``, after PyTorch's checks: the result
    type must be castable to the target's dtype, and ``other`` must broadcast to its shape."""
    result = dtypes.result_type(target, other)
    if dtypes._category(result) > dtypes._category(target.data.dtype):
        raise RuntimeError(
            f"result type {_TORCH_NAMES.get(result.name, result.name)} can't be cast to the "
            f"desired output type {_TORCH_NAMES.get(target.data.dtype.name)}"
        )
    values = other.data if isinstance(other, Tensor) else np.asarray(other, dtype=result)
    _check_broadcast(target.shape, values.shape)
    _check_overlap(target.data, values)
    return values


def _check_overlap(target: np.ndarray, source: np.ndarray) -> None:
    """PyTorch refuses to read a tensor that partly overlaps the one it writes: the result
    would depend on the order elements are written. Sharing memory fully (``x.mul_(x)``)
    is fine; like PyTorch, overlaps it cannot decide cheaply (arrays with gaps) pass."""
    if target.size == 0 or source.size == 0 or not (_dense(target) and _dense(source)):
        return
    a, b = _byte_range(target), _byte_range(source)
    same_layout = target.strides == source.strides or (target.shape == source.shape and all(
        sa == sb for sa, sb, n in zip(target.strides, source.strides, target.shape) if n > 1))
    full = a == b and same_layout
    if not full and a[0] < b[1] and b[0] < a[1]:
        raise RuntimeError(
            "unsupported operation: some elements of the input tensor and the written-to "
            "tensor refer to a single memory location. Please clone() the tensor before "
            "performing the operation."
        )


def _dense(array: np.ndarray) -> bool:
    """No gaps, no overlap, no negative strides: a permutation of a contiguous layout."""
    expected = array.itemsize
    for stride, n in sorted((s, n) for s, n in zip(array.strides, array.shape) if n > 1):
        if stride != expected:
            return False
        expected *= n
    return True


def _byte_range(array: np.ndarray) -> tuple[int, int]:
    start = array.__array_interface__["data"][0]
    return start, start + array.nbytes


def _check_broadcast(shape: tuple[int, ...], other: tuple[int, ...]) -> None:
    try:
        broadcast = np.broadcast_shapes(shape, other)
    except ValueError:
        broadcast = None
    if broadcast != shape:
        got = list(broadcast) if broadcast is not None else list(other)
        raise RuntimeError(
            f"output with shape {list(shape)} doesn't match the broadcast shape {got}"
        )


def _write(target: Tensor, values: np.ndarray) -> np.ndarray:
    np.copyto(target.data, values, casting="unsafe")
    return target.data


class AddInplace(Function):
    """``target += alpha * other``."""

    is_inplace = True

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, other: Any, alpha: float = 1) -> np.ndarray:
        b = _operand(a, other)
        ctx.alpha, ctx.other_shape = alpha, b.shape
        return _write(a, a.data + (b if alpha == 1 else alpha * b))

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        grad_other = sum_to_shape(grad * ctx.alpha, ctx.other_shape)
        return grad, grad_other if ctx.needs_input_grad[1] else None


class MulInplace(Function):
    """``target *= other``."""

    is_inplace = True
    saved_names = ("other", "self")

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, other: Any) -> np.ndarray:
        b = _operand(a, other)
        ctx.other_shape = b.shape
        ctx.scalar = None if isinstance(other, Tensor) else b
        ctx.save_for_backward(
            other if ctx.scalar is None and ctx.needs_input_grad[0] else None,
            a.data.copy() if ctx.needs_input_grad[1] else None,
        )
        return _write(a, a.data * b)

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        other, old_self = ctx.saved_tensors
        grad_self = None
        if ctx.needs_input_grad[0]:
            grad_self = grad * (ctx.scalar if ctx.scalar is not None else other.data)
        grad_other = None
        if ctx.needs_input_grad[1]:
            grad_other = sum_to_shape(grad * old_self.data, ctx.other_shape)
        return grad_self, grad_other


class DivInplace(Function):
    """``target /= other`` (true division)."""

    is_inplace = True
    saved_names = ("other", "self")

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, other: Any) -> np.ndarray:
        b = _operand(a, other)
        if a.data.dtype.kind != "f":
            raise RuntimeError(
                "result type Float can't be cast to the desired output type "
                f"{_TORCH_NAMES.get(a.data.dtype.name)}"
            )
        ctx.other_shape = b.shape
        ctx.scalar = None if isinstance(other, Tensor) else b
        ctx.save_for_backward(
            other if ctx.scalar is None and any(ctx.needs_input_grad[:2]) else None,
            a.data.copy() if ctx.needs_input_grad[1] else None,
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            return _write(a, a.data / b)

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        other, old_self = ctx.saved_tensors
        b = ctx.scalar if ctx.scalar is not None else other.data
        with np.errstate(divide="ignore", invalid="ignore"):
            grad_self = grad / b if ctx.needs_input_grad[0] else None
            grad_other = None
            if ctx.needs_input_grad[1]:  # torch's formula: -grad * ((self / other) / other)
                grad_other = sum_to_shape(-grad * ((old_self.data / b) / b), ctx.other_shape)
        return grad_self, grad_other


class FillInplace(Function):
    """``target.fill_(value)``: a number, or a 0-dim tensor (which then gets a gradient)."""

    is_inplace = True

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, value: Any) -> np.ndarray:
        if isinstance(value, Tensor) and value.ndim != 0:
            raise RuntimeError(
                "fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value.ndim} dimensions."
            )
        return _write(a, value.data if isinstance(value, Tensor) else value)

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros_like(grad), np.asarray(grad.sum())


class CopyInplace(Function):
    """``target.copy_(src)``: ``src`` broadcast to the target's shape, cast to its dtype.
    ``x[key] = src`` broadcasts ``src`` before copying, as PyTorch's indexing does: that
    decides which overlaps between ``src`` and the target are refused."""

    is_inplace = True

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, src: Any, expand_first: bool = False) -> np.ndarray:
        values = src.data if isinstance(src, Tensor) else np.asarray(src)
        _check_broadcast(a.shape, values.shape)
        _check_overlap(a.data, np.broadcast_to(values, a.shape) if expand_first else values)
        ctx.src_shape = values.shape
        return _write(a, values)

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        return np.zeros_like(grad), sum_to_shape(grad, ctx.src_shape), None


class ClampInplace(Function):
    """``target.clamp_(min, max)`` with number bounds; the gradient passes where
    ``min <= x <= max``, the bounds included (PyTorch's clamp)."""

    is_inplace = True
    saved_names = ("self",)

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, min: Any = None, max: Any = None) -> np.ndarray:
        if min is None and max is None:
            raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
        if isinstance(min, Tensor) or isinstance(max, Tensor):
            raise TypeError("tinytrain's clamp_ takes number bounds")
        ctx.bounds = (min, max)
        ctx.save_for_backward(a.data.copy() if ctx.needs_input_grad[0] else None)
        out = a.data
        if min is not None:
            out = np.maximum(out, min)
        if max is not None:
            out = np.minimum(out, max)
        return _write(a, out)

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        (old_self,) = ctx.saved_tensors
        lo, hi = ctx.bounds
        keep = np.ones(grad.shape, bool)
        if lo is not None:
            keep &= old_self.data >= lo
        if hi is not None:
            keep &= old_self.data <= hi
        return np.where(keep, grad, 0).astype(grad.dtype)


class ReluInplace(Function):
    """``target.relu_()``; saves its result, like PyTorch (gradient 0 at 0)."""

    is_inplace = True

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor) -> np.ndarray:
        np.maximum(a.data, 0, out=a.data)
        ctx.save_for_backward(a.data)
        return a.data

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        (result,) = ctx.saved_tensors
        return np.where(result.data > 0, grad, 0).astype(grad.dtype)


class ZeroInplace(Function):
    """``target.zero_()``."""

    is_inplace = True

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor) -> np.ndarray:
        a.data[...] = 0
        return a.data

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        return np.zeros_like(grad)


class IndexPutInplace(Function):
    """``target[key] = value`` for advanced keys (integer arrays, lists, boolean masks)."""

    is_inplace = True

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, key: Any, value: Any) -> np.ndarray:
        values = value.data if isinstance(value, Tensor) else np.asarray(value)
        ctx.key, ctx.value_shape = key, values.shape
        a.data[key] = values
        return a.data

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        grad_self = grad.copy()
        grad_self[ctx.key] = 0
        grad_value = sum_to_shape(grad[ctx.key], ctx.value_shape) if ctx.needs_input_grad[2] \
            else None
        return grad_self, None, grad_value


class _BasicIndex(Function):
    """``target[key]`` for a basic key (ints, slices, None, Ellipsis): a view, the place
    ``__setitem__`` writes into."""

    is_view = True

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, key: tuple[Any, ...]) -> np.ndarray:
        ctx.key, ctx.shape = key, a.shape
        return a.data[key]

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        out = np.zeros(ctx.shape, grad.dtype)
        out[ctx.key] = grad
        return out


def _basic_key(key: Any) -> tuple[Any, ...] | None:
    """``key`` as a tuple that NumPy indexes as a view (with Ellipsis, so indexing every
    dimension gives a 0-dim view, not a scalar), or None for an advanced key."""
    parts = key if isinstance(key, tuple) else (key,)
    for part in parts:
        if part is None or part is Ellipsis or isinstance(part, slice):
            continue
        if isinstance(part, (int, np.integer)) and not isinstance(part, bool):
            continue
        return None
    return parts if any(p is Ellipsis for p in parts) else (*parts, Ellipsis)


def _selects_everything(key: tuple[Any, ...], shape: tuple[int, ...]) -> bool:
    """True when a basic key is only full slices and Ellipsis: PyTorch then writes into the
    tensor itself, not into a view of it (so a leaf gets the leaf error, not the view one)."""
    if any(part is None or (not isinstance(part, slice) and part is not Ellipsis) for part in key):
        return False
    at = key.index(Ellipsis)
    dims = [*range(at), *range(len(shape) - (len(key) - at - 1), len(shape))]
    parts = [p for p in key if p is not Ellipsis]
    return all(p.indices(shape[d]) == (0, shape[d], 1) for p, d in zip(parts, dims))


def _advanced_key(key: Any) -> Any:
    parts = key if isinstance(key, tuple) else (key,)
    parts = tuple(p.data if isinstance(p, Tensor) else p for p in parts)
    return parts if isinstance(key, tuple) else parts[0]


# ----- the public functions (also Tensor methods, see _tensor_methods) ---------------------
def add_(input: Tensor, other: Any, *, alpha: float = 1) -> Tensor:
    """``input += alpha * other`` in place; returns ``input``."""
    return AddInplace.apply(input, other, alpha)


def sub_(input: Tensor, other: Any, *, alpha: float = 1) -> Tensor:
    """``input -= alpha * other`` in place; returns ``input``."""
    return AddInplace.apply(input, other, -alpha)


def mul_(input: Tensor, other: Any) -> Tensor:
    """``input *= other`` in place; returns ``input``."""
    return MulInplace.apply(input, other)


def div_(input: Tensor, other: Any) -> Tensor:
    """``input /= other`` in place; returns ``input``."""
    return DivInplace.apply(input, other)


def zero_(input: Tensor) -> Tensor:
    """Fill ``input`` with zeros in place; returns ``input``."""
    return ZeroInplace.apply(input)


def fill_(input: Tensor, value: Any) -> Tensor:
    """Fill ``input`` with ``value`` (a number or a 0-dim tensor) in place."""
    return FillInplace.apply(input, value)


def copy_(input: Tensor, src: Any) -> Tensor:
    """Copy ``src`` (broadcast, cast) into ``input``; returns ``input``."""
    return CopyInplace.apply(input, src)


def clamp_(input: Tensor, min: float | None = None, max: float | None = None) -> Tensor:
    """Clamp ``input`` into ``[min, max]`` in place; returns ``input``."""
    return ClampInplace.apply(input, min, max)


def relu_(input: Tensor) -> Tensor:
    """``max(input, 0)`` in place; returns ``input``."""
    return ReluInplace.apply(input)


def setitem(input: Tensor, key: Any, value: Any) -> None:
    """``input[key] = value``. A basic key (ints, slices, None, ...) writes through a view
    of ``input`` (``copy_``/``fill_`` into it, as PyTorch does); an advanced key (integer
    arrays, boolean masks) is an index_put."""
    basic = _basic_key(key)
    if basic is None:
        IndexPutInplace.apply(input, _advanced_key(key), value)
        return
    view = input if _selects_everything(basic, input.shape) else _BasicIndex.apply(input, basic)
    if isinstance(value, (Tensor, np.ndarray, list, tuple)):
        CopyInplace.apply(view, value, True)
    else:
        FillInplace.apply(view, value)
