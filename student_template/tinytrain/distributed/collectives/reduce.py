"""What each collective computes from the contributions of the ranks, in one fixed order.

Both backends gather every rank's contribution and call these, so a result does not depend
on which rank arrived first nor on the backend: a sum is ``((x0 + x1) + x2) + x3`` in group
rank order, bit for bit the same on threads and under MPI.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

REDUCE_OPS = ("sum", "avg", "max", "min", "product")


def reduce(contributions: Sequence[np.ndarray], op: str) -> np.ndarray:
    """Fold ``contributions`` (group rank order) with ``op``, left to right."""
    result = np.array(contributions[0], copy=True)
    for other in contributions[1:]:
        if op in ("sum", "avg"):
            np.add(result, other, out=result)
        elif op == "max":
            np.maximum(result, other, out=result)
        elif op == "min":
            np.minimum(result, other, out=result)
        elif op == "product":
            np.multiply(result, other, out=result)
        else:
            raise ValueError(f"unknown reduce op {op!r}")
    if op == "avg":
        if result.dtype.kind in "iub":
            raise ValueError("ReduceOp.AVG needs a floating point tensor")
        result = (result / result.dtype.type(len(contributions))).astype(result.dtype)
    return result


def compute(kind: str, contributions: Sequence[np.ndarray | None], me: int,
            meta: dict) -> np.ndarray | list[np.ndarray] | None:
    """The result of collective ``kind`` for group rank ``me``, given every group rank's
    contribution (what each passed in) and the call's ``meta`` (op, src)."""
    if kind == "all_reduce":
        return reduce(contributions, meta["op"])
    if kind == "all_gather":
        return [np.array(c, copy=True) for c in contributions]
    if kind == "reduce_scatter":  # each contribution is the w chunks, stacked on a new axis 0
        return reduce([c[me] for c in contributions], meta["op"])
    if kind == "broadcast":
        return np.array(contributions[meta["src"]], copy=True)
    if kind == "barrier":
        return None
    raise ValueError(f"unknown collective {kind!r}")
