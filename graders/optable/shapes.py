"""Entries for shape ops (task 2.5): views, indexing, cat and stack."""

from __future__ import annotations

import numpy as np
import torch

from ..strategies.ops import Draw, Index, Sample
from .spec import ErrorCase, OpInfo


def _values(d: Draw, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    return d.uniform(shape, dtype)


def _regrouped(d: Draw, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Another shape with the same number of elements (maybe with a -1)."""
    factors = []
    for size in shape:
        if size == 4 and d.flag():
            factors += [2, 2]
        elif size != 1:
            factors.append(size)
    factors = [factors[i] for i in d.rng.permutation(len(factors))]
    groups: list[int] = []
    for f in factors:
        if groups and d.flag():
            groups[-1] *= f
        else:
            groups.append(f)
    while len(groups) < 4 and d.integer(0, 2) == 0:
        groups.insert(d.integer(0, len(groups)), 1)
    if groups and 0 not in groups and d.flag():
        groups[d.integer(0, len(groups) - 1)] = -1
    return tuple(groups)


def _reshape_sample(d: Draw, dtype: np.dtype) -> Sample:
    shape = d.shape(0, 3, empty=True)
    return Sample((d.tensor(_values(d, shape, dtype)), _regrouped(d, shape)))


def _view_sample(d: Draw, dtype: np.dtype) -> Sample:
    """Contiguous inputs take any regrouping; strided ones only size-1 dims added or
    removed, which a view can always do."""
    shape = d.shape(0, 3, empty=True)
    x = d.tensor(_values(d, shape, dtype))
    if x.layout == "contiguous":
        return Sample((x, _regrouped(d, shape)))
    target = [s for s in shape if s != 1 or d.flag()]
    target.insert(d.integer(0, len(target)), 1)
    return Sample((x, tuple(target)))


def _view_noncontiguous(d: Draw, dtype: np.dtype) -> Sample:
    shape = (d.integer(2, 4), d.integer(2, 4))
    return Sample((d.tensor(_values(d, shape, dtype), layout="transposed"), (-1,)))


def _flatten_sample(d: Draw, dtype: np.dtype) -> Sample:
    shape = d.shape(0, 4, max_side=3, empty=True)
    x = d.tensor(_values(d, shape, dtype))
    if not shape or d.integer(0, 3) == 0:
        return Sample((x,))
    n = len(shape)
    start = d.integer(0, n - 1)
    end = d.integer(start, n - 1)
    return Sample((x,), {"start_dim": start - n if d.flag() else start,
                         "end_dim": end - n if d.flag() else end})


def _transpose_sample(d: Draw, dtype: np.dtype) -> Sample:
    shape = d.shape(0, 4, max_side=3, empty=True)
    bound = max(len(shape), 1)
    return Sample((d.tensor(_values(d, shape, dtype)),
                   d.integer(-bound, bound - 1), d.integer(-bound, bound - 1)))


def _permute_sample(d: Draw, dtype: np.dtype) -> Sample:
    shape = d.shape(0, 4, max_side=3, empty=True)
    n = len(shape)
    dims = tuple(int(i) - n if d.flag() else int(i) for i in d.rng.permutation(n))
    return Sample((d.tensor(_values(d, shape, dtype)), dims))


def _matrix_sample(d: Draw, dtype: np.dtype) -> Sample:
    return Sample((d.tensor(_values(d, d.shape(2, 2, empty=True), dtype)),))


def _expand_sample(d: Draw, dtype: np.dtype) -> Sample:
    shape = tuple(1 if d.flag() else s for s in d.shape(0, 3))
    sizes = [d.integer(1, 3) if s == 1 and d.flag() else (-1 if d.flag() else s) for s in shape]
    sizes = [d.integer(1, 3) for _ in range(d.integer(0, 2))] + sizes
    return Sample((d.tensor(_values(d, shape, dtype)), tuple(sizes)))


def _squeeze_sample(d: Draw, dtype: np.dtype) -> Sample:
    shape = tuple(1 if d.flag() else s for s in d.shape(0, 4, max_side=3, empty=True))
    x = d.tensor(_values(d, shape, dtype))
    bound = max(len(shape), 1)
    kind = d.pick(["none", "int", "tuple"])
    if kind == "none":
        return Sample((x,))
    if kind == "int" or not shape:
        return Sample((x, d.integer(-bound, bound - 1)))
    dims = tuple(i for i in range(len(shape)) if d.flag()) or (0,)
    return Sample((x, dims))


def _unsqueeze_sample(d: Draw, dtype: np.dtype) -> Sample:
    shape = d.shape(0, 3, empty=True)
    n = len(shape)
    return Sample((d.tensor(_values(d, shape, dtype)), d.integer(-n - 1, n)))


def _index_items(d: Draw, shape: tuple[int, ...]) -> tuple[object, ...]:
    """Ints, slices (steps >= 1, bounds past the ends too) and Nones for some leading
    dims, or, after an Ellipsis, for some trailing dims."""
    trailing = len(shape) > 0 and d.integer(0, 3) == 0
    count = d.integer(0, len(shape))
    dims = shape[len(shape) - count:] if trailing else shape[:count]
    items: list[object] = [Ellipsis] if trailing else []
    for size in dims:
        if d.integer(0, 4) == 0:
            items.append(None)
        if size and d.integer(0, 2) == 0:
            items.append(d.integer(-size, size - 1))
        else:
            start = d.pick([None, d.integer(-size - 1, size + 1)])
            stop = d.pick([None, d.integer(-size - 1, size + 1)])
            items.append(slice(start, stop, d.pick([None, 1, 2, 3])))
    if d.integer(0, 4) == 0:
        items.append(None)
    return tuple(items)


def _getitem_sample(d: Draw, dtype: np.dtype) -> Sample:
    shape = d.shape(0, 3, empty=True)
    return Sample((d.tensor(_values(d, shape, dtype)), Index(_index_items(d, shape))))


def _cat_sample(d: Draw, dtype: np.dtype) -> Sample:
    shape = list(d.shape(1, 3))
    dim = d.integer(-len(shape), len(shape) - 1)
    tensors = []
    for _ in range(d.integer(1, 3)):
        shape[dim] = d.integer(0, 3)
        tensors.append(d.tensor(_values(d, tuple(shape), dtype)))
    return Sample((tensors,), {"dim": dim} if d.flag() or dim else {})


def _stack_sample(d: Draw, dtype: np.dtype) -> Sample:
    shape = d.shape(0, 3, empty=True)
    n = len(shape)
    tensors = [d.tensor(_values(d, shape, dtype)) for _ in range(d.integer(1, 3))]
    dim = d.integer(-n - 1, n)
    return Sample((tensors,), {"dim": dim} if d.flag() or dim else {})


SHAPES = [
    OpInfo("reshape", "2.5", torch.reshape, ("tt.reshape", "Tensor.reshape"), _reshape_sample,
           autocast="none", view=True),
    OpInfo("view", "2.5", lambda x, shape: x.view(shape), ("Tensor.view",), _view_sample,
           autocast="none", view=True,
           errors=(ErrorCase("noncontiguous", _view_noncontiguous, "RuntimeError",
                             ("view size is not compatible",)),)),
    OpInfo("flatten", "2.5", torch.flatten, ("tt.flatten", "Tensor.flatten"), _flatten_sample,
           autocast="none", view=True),
    OpInfo("transpose", "2.5", torch.transpose, ("tt.transpose", "Tensor.transpose"),
           _transpose_sample, autocast="none", view=True),
    OpInfo("permute", "2.5", torch.permute, ("tt.permute", "Tensor.permute"), _permute_sample,
           autocast="none", view=True),
    OpInfo("T", "2.5", lambda x: x.T, ("Tensor.T",), _matrix_sample, autocast="none",
           view=True),
    OpInfo("expand", "2.5", lambda x, sizes: x.expand(sizes), ("Tensor.expand",),
           _expand_sample, autocast="none", view=True),
    OpInfo("squeeze", "2.5", torch.squeeze, ("tt.squeeze", "Tensor.squeeze"), _squeeze_sample,
           autocast="none", view=True),
    OpInfo("unsqueeze", "2.5", torch.unsqueeze, ("tt.unsqueeze", "Tensor.unsqueeze"),
           _unsqueeze_sample, autocast="none", view=True),
    OpInfo("getitem", "2.5", lambda x, index: x[index], ("operator.getitem",),
           _getitem_sample, autocast="none", view=True),
    # cat and stack: no CUDA autocast kernel in torch 2.13; they promote their inputs natively
    OpInfo("cat", "2.5", torch.cat, ("tt.cat",), _cat_sample, autocast="none"),
    OpInfo("stack", "2.5", torch.stack, ("tt.stack",), _stack_sample, autocast="none"),
]
