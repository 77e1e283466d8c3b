"""Shape ops (task 2.5): views and copies that move elements around.

A view's forward returns a NumPy view of its input (no copy) and its Function says so
with ``is_view = True``, so the output shares storage and version counter with its base,
as in PyTorch. reshape/flatten are views when the strides allow it and copies otherwise.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from ..autograd.function import BackwardNode, Function
from ..tensor import Tensor
from ._helpers import _as_dtype, sum_to_shape


class View(Function):
    """The same elements in another shape, sharing storage."""

    is_view = True

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, shape: tuple[int, ...]) -> np.ndarray:
        # BEGIN SOLUTION 2.5
        # HINT: np.reshape(..., copy=False) raises ValueError when only a copy would do;
        # HINT: PyTorch raises RuntimeError("view size is not compatible with input tensor's
        # HINT: size and stride ... Use .reshape(...) instead.") there
        ctx.shape = a.shape
        try:
            return np.reshape(a.data, shape, copy=False)
        except ValueError:
            raise RuntimeError(
                "view size is not compatible with input tensor's size and stride (at least one "
                "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
            ) from None
        # END SOLUTION

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        # BEGIN SOLUTION 2.5
        return grad.reshape(ctx.shape)
        # END SOLUTION


class Reshape(View):
    """A reshape that has to copy (the strides do not allow a view); backward is View's."""

    is_view = False

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, shape: tuple[int, ...]) -> np.ndarray:
        # BEGIN SOLUTION 2.5
        ctx.shape = a.shape
        return np.reshape(a.data, shape, copy=True)
        # END SOLUTION


class Permute(Function):
    """The dims in a new order (``transpose`` swaps two), sharing storage."""

    is_view = True

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, dims: tuple[int, ...]) -> np.ndarray:
        # BEGIN SOLUTION 2.5
        ctx.dims = dims
        return np.transpose(a.data, dims)
        # END SOLUTION

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        # BEGIN SOLUTION 2.5
        # HINT: undo the permutation with its inverse (np.argsort)
        return np.transpose(grad, np.argsort(ctx.dims))
        # END SOLUTION


class Expand(Function):
    """Size-1 dims repeated (and new leading dims) without copying: stride 0."""

    is_view = True

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, shape: tuple[int, ...]) -> np.ndarray:
        # BEGIN SOLUTION 2.5
        ctx.shape = a.shape
        return np.broadcast_to(a.data, shape)
        # END SOLUTION

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        # BEGIN SOLUTION 2.5
        # HINT: every repeated element sent its gradient to the one it repeats: sum them
        return sum_to_shape(grad, ctx.shape)
        # END SOLUTION


class GetItem(Function):
    """Basic indexing (ints, slices, None, Ellipsis): always a view."""

    is_view = True

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, index: tuple[Any, ...]) -> np.ndarray:
        # BEGIN SOLUTION 2.5
        ctx.shape, ctx.index = a.shape, index
        return a.data[index]
        # END SOLUTION

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        # BEGIN SOLUTION 2.5
        # HINT: zeros everywhere except the selected elements
        grad_in = np.zeros(ctx.shape, dtype=grad.dtype)
        grad_in[ctx.index] = grad
        return grad_in
        # END SOLUTION


class Cat(Function):
    """Tensors joined along an existing dim (a copy)."""

    opmath = False  # moves elements: no arithmetic to widen

    @staticmethod
    def forward(ctx: BackwardNode, dim: int, *tensors: Tensor) -> np.ndarray:
        # BEGIN SOLUTION 2.5
        ctx.dim = dim
        ctx.sizes = [t.shape[dim] for t in tensors]
        return np.concatenate([t.data for t in tensors], axis=dim)
        # END SOLUTION

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        # BEGIN SOLUTION 2.5
        # HINT: one gradient per forward argument: None for dim, then one per tensor
        offsets = np.cumsum(ctx.sizes)[:-1]
        return (None, *np.split(grad, offsets, axis=ctx.dim))
        # END SOLUTION


class Stack(Function):
    """Tensors of one shape joined along a new dim (a copy)."""

    opmath = False  # moves elements: no arithmetic to widen

    @staticmethod
    def forward(ctx: BackwardNode, dim: int, *tensors: Tensor) -> np.ndarray:
        # BEGIN SOLUTION 2.5
        ctx.dim = dim
        return np.stack([t.data for t in tensors], axis=dim)
        # END SOLUTION

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        # BEGIN SOLUTION 2.5
        return (None, *np.moveaxis(grad, ctx.dim, 0))
        # END SOLUTION


class Contiguous(Function):
    """A C-contiguous copy (gradient passes unchanged)."""

    opmath = False  # moves elements: no arithmetic to widen

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor) -> np.ndarray:
        return np.ascontiguousarray(a.data)

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        return grad


# ----- the public functions: argument handling, then one Function call ----------------
def _size_args(size: tuple[Any, ...]) -> tuple[int, ...]:
    """``f(2, 3)`` and ``f((2, 3))`` both mean the shape (2, 3)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return tuple(size)


def _dim(dim: int, ndim: int) -> int:
    """``dim`` wrapped into ``[0, ndim)``, with PyTorch's error when out of range."""
    if not -ndim <= dim < ndim:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], "
            f"but got {dim})"
        )
    return dim % ndim


def _infer_shape(shape: tuple[int, ...], numel: int) -> tuple[int, ...]:
    """Resolve a -1 in ``shape`` and check it holds ``numel`` elements."""
    invalid = RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = math.prod(d for d in shape if d != -1)
    if -1 in shape:
        if known == 0 or numel % known:
            raise invalid
        return tuple(numel // known if d == -1 else d for d in shape)
    if known != numel:
        raise invalid
    return shape


def _viewable(array: np.ndarray, shape: tuple[int, ...]) -> bool:
    if array.flags.c_contiguous:
        return True
    try:
        np.reshape(array, shape, copy=False)
    except ValueError:
        return False
    return True


def reshape(input: Tensor, *shape: Any) -> Tensor:
    """The elements in ``shape`` (one dim may be -1): a view when possible, else a copy."""
    shape = _infer_shape(_size_args(shape), input.data.size)
    if _viewable(input.data, shape):
        return View.apply(input, shape)
    return Reshape.apply(input, shape)


def view(input: Tensor, *shape: Any) -> Tensor:
    """A view in ``shape``; raises RuntimeError when the strides do not allow one."""
    return View.apply(input, _infer_shape(_size_args(shape), input.data.size))


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Dims ``start_dim..end_dim`` merged into one (a 0-d tensor becomes 1-D)."""
    if input.ndim == 0:
        return reshape(input, (1,))
    start, end = _dim(start_dim, input.ndim), _dim(end_dim, input.ndim)
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = input.shape
    return reshape(input, (*shape[:start], math.prod(shape[start : end + 1]), *shape[end + 1 :]))


def squeeze(input: Tensor, dim: Any = None) -> Tensor:
    """Size-1 dims removed (all of them, or those of ``dim`` that have size 1)."""
    shape = input.shape
    if dim is None:
        dims = {i for i, n in enumerate(shape) if n == 1}
    else:
        bound = max(input.ndim, 1)
        dims = {_dim(d, bound) for d in ((dim,) if isinstance(dim, int) else dim)}
        dims = {d for d in dims if d < input.ndim and shape[d] == 1}
    return View.apply(input, tuple(n for i, n in enumerate(shape) if i not in dims))


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """A size-1 dim inserted at ``dim`` (in ``[-ndim-1, ndim]``)."""
    dim = _dim(dim, input.ndim + 1)
    shape = input.shape
    return View.apply(input, (*shape[:dim], 1, *shape[dim:]))


def permute(input: Tensor, *dims: Any) -> Tensor:
    """The dims in the order ``dims`` (a view)."""
    dims = _size_args(dims)
    if len(dims) != input.ndim:
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the "
            f"length of the desired ordering of dimensions i.e. input.dim() = {input.ndim} is "
            f"not equal to len(dims) = {len(dims)}"
        )
    dims = tuple(_dim(d, max(input.ndim, 1)) for d in dims)
    if sorted(dims) != list(range(input.ndim)):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return Permute.apply(input, dims)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """``dim0`` and ``dim1`` swapped (a view)."""
    if input.ndim == 0:  # dims 0 and -1 are accepted and swap nothing
        _dim(dim0, 1)
        _dim(dim1, 1)
        return Permute.apply(input, ())
    dims = list(range(input.ndim))
    d0, d1 = _dim(dim0, input.ndim), _dim(dim1, input.ndim)
    dims[d0], dims[d1] = d1, d0
    return Permute.apply(input, tuple(dims))


def expand(input: Tensor, *sizes: Any) -> Tensor:
    """Size-1 dims repeated to ``sizes`` (-1 keeps a dim; new dims go in front): a view."""
    sizes = _size_args(sizes)
    extra = len(sizes) - input.ndim
    if extra < 0:
        raise RuntimeError(
            f"expand(torch.FloatTensor{{{list(input.shape)}}}, size={list(sizes)}): the number "
            "of sizes provided must be greater or equal to the number of dimensions in the tensor"
        )
    shape = []
    for i, size in enumerate(sizes):
        if size == -1:
            if i < extra:
                raise RuntimeError("expand: -1 is not allowed in a leading, non-existing dimension")
            size = input.shape[i - extra]
        elif i >= extra and input.shape[i - extra] not in (1, size):
            raise RuntimeError(
                f"The expanded size of the tensor ({size}) must match the existing size "
                f"({input.shape[i - extra]}) at non-singleton dimension {i}.  "
                f"Target sizes: {list(sizes)}.  Tensor sizes: {list(input.shape)}"
            )
        shape.append(size)
    return Expand.apply(input, tuple(shape))


def contiguous(input: Tensor) -> Tensor:
    """``input`` itself when C-contiguous, else a contiguous copy."""
    if input.data.flags.c_contiguous:
        return input
    return Contiguous.apply(input)


def _basic_index(index: Any) -> tuple[Any, ...]:
    """``index`` as a tuple NumPy turns into a view (never a scalar), or TypeError."""
    items = index if isinstance(index, tuple) else (index,)
    for item in items:
        if isinstance(item, slice):
            if item.step is not None and item.step <= 0:
                raise ValueError("step must be greater than zero")
        elif not (item is None or item is Ellipsis or isinstance(item, (int, np.integer))) or (
            isinstance(item, bool)
        ):
            raise TypeError(
                "tinytrain supports basic indexing only (ints, slices, None and ...), got "
                f"{type(item).__name__}"
            )
    if not any(item is Ellipsis for item in items):
        items = (*items, Ellipsis)  # keeps the result an array view even for all-int indices
    return items


def getitem(input: Tensor, index: Any) -> Tensor:
    """``input[index]`` for basic indexing: a view."""
    return GetItem.apply(input, _basic_index(index))


def _joined(tensors: Any, name: str) -> tuple[Tensor, ...]:
    tensors = tuple(tensors)
    if not tensors:
        raise RuntimeError(f"{name}(): expected a non-empty list of Tensors")
    dtype = dtypes.result_type(*tensors)
    return tuple(_as_dtype(t, dtype) for t in tensors)


def cat(tensors: Any, dim: int = 0) -> Tensor:
    """The tensors joined along ``dim`` (all other sizes must match)."""
    tensors = _joined(tensors, "cat")
    for i, t in enumerate(tensors):
        if t.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    return Cat.apply(_dim(dim, tensors[0].ndim), *tensors)


def stack(tensors: Any, dim: int = 0) -> Tensor:
    """The tensors (all of one shape) joined along a new dim ``dim``."""
    tensors = _joined(tensors, "stack")
    shape = tensors[0].shape
    for i, t in enumerate(tensors):
        if t.shape != shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(shape)} at entry 0 "
                f"and {list(t.shape)} at entry {i}"
            )
    return Stack.apply(_dim(dim, len(shape) + 1), *tensors)
