"""Entries for matmul and linear (task 2.4)."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812 - the usual name

from ..strategies.ops import Draw, Sample
from .spec import OpInfo


def _matmul_sample(d: Draw, dtype: np.dtype) -> Sample:
    """1-D and 2-D operands, batches, and batch dims that broadcast (k may be 0)."""
    n, m = d.integer(1, 4), d.integer(1, 4)
    k = d.integer(0, 4) if d.integer(0, 7) == 0 else d.integer(1, 4)
    kind = d.pick(["vv", "mv", "vm", "mm", "batched"])
    if kind == "batched":
        batch_a, batch_b = d.broadcastable(2, max_dims=2, max_side=3)
        if not batch_a and not batch_b:
            batch_a = (2,)
        sa, sb = (*batch_a, n, k), (*batch_b, k, m)
        if d.integer(0, 3) == 0:  # a vector on one side of a batched product
            sa, sb = ((k,), sb) if d.flag() else (sa, (k,))
    else:
        sa = (k,) if kind[0] == "v" else (n, k)
        sb = (k,) if kind[1] == "v" else (k, m)
    return Sample((d.tensor(d.uniform(sa, dtype)), d.tensor(d.uniform(sb, dtype))))


def _linear_sample(d: Draw, dtype: np.dtype) -> Sample:
    n_in, n_out = d.integer(1, 4), d.integer(1, 4)
    batch = d.shape(0, 2, max_side=3)
    x = d.tensor(d.uniform((*batch, n_in), dtype))
    weight = d.tensor(d.uniform((n_out, n_in), dtype))
    if d.integer(0, 3) == 0:
        return Sample((x, weight))
    return Sample((x, weight, d.tensor(d.uniform((n_out,), dtype))))


_SAME_DTYPE = {"mixed_dtypes": "torch's matmul and linear raise for operands of different "
                               "dtypes (no type promotion): nothing to promote"}


LINALG = [
    OpInfo("matmul", "2.4", torch.matmul, ("tt.matmul", "Tensor.matmul", "operator.matmul"),
           _matmul_sample, autocast="lower_precision", exempt=_SAME_DTYPE),
    OpInfo("linear", "2.4", F.linear, ("tt.nn.functional.linear",), _linear_sample,
           autocast="lower_precision", exempt=_SAME_DTYPE),
]
