"""Entries for the layer operators of assignment 5: embedding (task 5.8), layer_norm
(task 5.9) and dropout (task 5.10)."""

from __future__ import annotations

import numpy as np
import torch.nn.functional as F  # noqa: N812 - the usual name

from ..strategies.layers import spread_rows
from ..strategies.ops import Draw, Sample, layouts_for
from .spec import ErrorCase, OpInfo

_F = "tt.nn.functional"


def _embedding_sample(d: Draw, dtype: np.dtype) -> Sample:
    """A table (num, dim) and integer indices of any shape (0-d and empty included; half
    the time a non-contiguous matrix), repeated on purpose (their gradients must add up);
    int64 or int32; sometimes a padding_idx (maybe negative)."""
    num, dim = d.integer(1, 5), d.integer(1, 4)
    # half the time a matrix of indices in a drawn non-contiguous layout (the layout axis
    # on the index argument: the gradient rows pair with the indices in logical order)
    matrix = d.flag()
    shape = (d.integer(2, 4), d.integer(2, 4)) if matrix else d.shape(0, 2, max_side=5,
                                                                       empty=True)
    indices = d.rng.integers(0, num, shape).astype(d.pick([np.int64, np.int32]))
    layout = d.pick(layouts_for(shape)[1:]) if matrix else None
    kwargs = {"padding_idx": d.integer(-num, num - 1)} if d.flag() else {}
    return Sample((d.tensor(indices, grad=False, layout=layout),
                   d.tensor(d.uniform((num, dim), dtype))), kwargs)


def _embedding_out_of_range(d: Draw, dtype: np.dtype) -> Sample:
    num = d.integer(1, 4)
    indices = d.rng.integers(0, num, (d.integer(1, 4),))
    indices[d.integer(0, len(indices) - 1)] = d.pick([-1, num, num + 3])
    weight = d.uniform((num, d.integer(1, 3)), dtype)
    return Sample((d.tensor(indices, grad=False), d.tensor(weight)))


def _layer_norm_sample(d: Draw, dtype: np.dtype) -> Sample:
    """An input (*batch, *normalized) with 1 or 2 normalised dims, an optional weight and
    bias (around 1 and 0), sometimes another eps."""
    normalized = d.shape(1, 2, max_side=5)
    batch = d.shape(0, 2, max_side=3, empty=True)
    x = d.uniform((*batch, *normalized), np.float64, -2.0, 2.0) * d.pick([1.0, 5.0])
    x = spread_rows(x, int(np.prod(normalized)))
    weight = d.tensor(d.uniform(normalized, dtype, 0.5, 1.5)) if d.flag() else None
    bias = d.tensor(d.uniform(normalized, dtype, -0.5, 0.5)) if d.flag() else None
    kwargs = {"eps": d.pick([1e-5, 1e-3, 0.1])} if d.flag() else {}
    return Sample((d.tensor(x.astype(dtype)), list(normalized), weight, bias), kwargs)


def _dropout_sample(d: Draw, dtype: np.dtype) -> Sample:
    """p=1 in training mode: deterministic (every element dropped, no gradient passes).
    Dropout with 0 < p < 1 is random; test_dropout.py checks it statistically."""
    x = d.uniform(d.shape(0, 3, empty=True), dtype)
    return Sample((d.tensor(x),), {"p": 1.0, "training": True})


LAYERS = [
    # the padding row gets no gradient by definition, not the derivative: no finite
    # differences there (near_kink keeps gradcheck away)
    OpInfo("embedding", "5.8", F.embedding, (f"{_F}.embedding",), _embedding_sample,
           autocast="none", near_kink=lambda sample: "padding_idx" in sample.kwargs,
           errors=(ErrorCase("index_out_of_range", _embedding_out_of_range, "IndexError",
                             ("index out of range",)),)),
    # float32: the input gradient multiplies rounding errors by 1 / std, up to
    # 1 / sqrt(eps) = 316 when a row's variance is 0 (a single normalised element), where
    # torch itself returns ~1.5e-5 of noise for an exact 0 (other rows are kept from being
    # nearly constant, see spread_rows); float64 keeps the defaults
    OpInfo("layer_norm", "5.9", F.layer_norm, (f"{_F}.layer_norm",), _layer_norm_sample,
           autocast="fp32", tolerances={"float32": (1e-5, 1e-4)},
           exempt={"mixed_dtypes": "torch's CPU layer_norm raises for a weight or bias of "
                                   "another dtype than the input (\"mixed dtype (CPU)\")"}),
    OpInfo("dropout", "5.10", F.dropout, (f"{_F}.dropout",), _dropout_sample,
           autocast="none"),
]
