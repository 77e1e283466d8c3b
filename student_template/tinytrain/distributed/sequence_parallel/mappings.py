"""Megatron-LM's communication operators for sequence parallelism (task 7.4), along the
sequence dim (dim 1 of (batch, time, features)), across the ranks of ``group``:

- ``scatter_to_sequence_parallel_region``: this rank's chunk of the sequence forward,
  all-gather backward.
- ``gather_from_sequence_parallel_region``: all-gather forward, reduce-scatter (sum) of
  the gradient backward (in place of "f" before a column-parallel layer).
- ``reduce_scatter_to_sequence_parallel_region``: reduce-scatter (sum) forward,
  all-gather backward (in place of "g" after a row-parallel layer).

Each all-reduce of plain tensor parallelism becomes an all-gather plus a reduce-scatter,
which move the same bytes; in between (LayerNorm, dropout, the residual stream), each
rank keeps 1/world of the activations.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...autograd.function import BackwardNode
from ...tensor import Tensor
from ..collectives.arrays import CollectiveFunction, all_gather, chunk, reduce_scatter

SEQUENCE_DIM = 1  # (batch, time, features)


class _ScatterToSequenceRegion(CollectiveFunction):
    @staticmethod
    def forward(ctx: BackwardNode, x: Tensor, group: Any) -> np.ndarray:
        ctx.group = group
        raise NotImplementedError("task 7.4: Sequence parallelism: all-gather and reduce-scatter along the sequence, LayerNorm regions")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray, None]:
        raise NotImplementedError("task 7.4: Sequence parallelism: all-gather and reduce-scatter along the sequence, LayerNorm regions")


class _GatherFromSequenceRegion(CollectiveFunction):
    @staticmethod
    def forward(ctx: BackwardNode, x: Tensor, group: Any) -> np.ndarray:
        ctx.group = group
        raise NotImplementedError("task 7.4: Sequence parallelism: all-gather and reduce-scatter along the sequence, LayerNorm regions")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray, None]:
        # HINT: each rank's gradient is a partial sum (its part of the weights): add them
        # HINT: up and keep this rank's part of the sequence, in one collective
        raise NotImplementedError("task 7.4: Sequence parallelism: all-gather and reduce-scatter along the sequence, LayerNorm regions")


class _ReduceScatterToSequenceRegion(CollectiveFunction):
    @staticmethod
    def forward(ctx: BackwardNode, x: Tensor, group: Any) -> np.ndarray:
        ctx.group = group
        raise NotImplementedError("task 7.4: Sequence parallelism: all-gather and reduce-scatter along the sequence, LayerNorm regions")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray, None]:
        raise NotImplementedError("task 7.4: Sequence parallelism: all-gather and reduce-scatter along the sequence, LayerNorm regions")


def scatter_to_sequence_parallel_region(x: Tensor, group: Any = None) -> Tensor:
    """This rank's chunk of the sequence (dim 1) forward; all-gather backward."""
    return _ScatterToSequenceRegion.apply(x, group)


def gather_from_sequence_parallel_region(x: Tensor, group: Any = None) -> Tensor:
    """All-gather along the sequence (dim 1) forward; reduce-scatter (sum) backward."""
    return _GatherFromSequenceRegion.apply(x, group)


def reduce_scatter_to_sequence_parallel_region(x: Tensor, group: Any = None) -> Tensor:
    """Reduce-scatter (sum) along the sequence (dim 1) forward; all-gather backward."""
    return _ReduceScatterToSequenceRegion.apply(x, group)
