"""The gradients of parameters used inside sequence-parallel regions (task 7.4)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...tensor import Tensor
from ..collectives import api as dist


def allreduce_sequence_parallel_grads(params: Iterable[Tensor], group: Any = None) -> None:
    """Sum the gradients of ``params`` over ``group``, in place.

    LayerNorm's weight and bias (and a row-parallel layer's bias) are the same on every
    tensor-parallel rank, but under sequence parallelism each rank applies them to its own
    part of the sequence only, so each rank's gradient covers its part: their sum is the
    gradient of the whole sequence. Call it after backward, before the optimizer step."""
    raise NotImplementedError("task 7.4: Sequence parallelism: all-gather and reduce-scatter along the sequence, LayerNorm regions")
