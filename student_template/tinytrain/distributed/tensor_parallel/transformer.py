"""The GPT's attention and MLP with tensor parallelism (task 7.3), after Megatron-LM:
each rank computes ``n_head / world`` heads and ``4 C / world`` hidden features, and
each block ends in one all-reduce in forward ("g" in its row-parallel projection) and
one in backward ("f" before its column-parallel projection).

Built from the full (single-process) modules of ``tt.models.gpt``. Rank r's part of the
attention's ``c_attn`` (whose rows are the queries, keys and values, C each) is the rows
of its heads in each of the three, in that order: queries rows [r*c, (r+1)*c), keys
C + the same, values 2C + the same, c = C / world.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...models.gpt import MLP, CausalSelfAttention
from ...nn import functional as F  # noqa: N812 - PyTorch's usual name
from ...nn.layers import Dropout, Linear
from ...nn.module import Module
from ...ops import where
from ...tensor import Tensor
from ..collectives import api as dist
from .layers import ColumnParallelLinear, RowParallelLinear


def qkv_rows(n_embd: int, world: int, rank: int) -> np.ndarray:
    """The rows of ``c_attn`` that rank ``rank`` holds: its heads' queries, keys, values."""
    part = n_embd // world
    own = np.arange(rank * part, (rank + 1) * part)
    return np.concatenate([own, n_embd + own, 2 * n_embd + own])


class ParallelCausalSelfAttention(Module):
    """``attention`` (a ``CausalSelfAttention``) with its heads split over ``group``."""

    def __init__(self, attention: CausalSelfAttention, group: Any = None,
                 sequence_parallel: bool = False) -> None:
        super().__init__()
        world, _rank = dist.get_world_size(group), dist.get_rank(group)
        if attention.n_head % world:
            raise ValueError(f"n_head ({attention.n_head}) must be divisible by the "
                             f"tensor-parallel size {world}")
        self.group = group
        self.n_embd = attention.n_embd
        self.n_head_per_partition = attention.n_head // world
        self.head_size = attention.n_embd // attention.n_head
        # HINT: put this rank's rows of c_attn (qkv_rows) first in a copy, in world blocks
        # HINT: so that ColumnParallelLinear's contiguous split hands each rank its own
        raise NotImplementedError("task 7.3: Tensor parallelism: conjugate operators, column/row-parallel Linear, heads split, vocabulary-parallel embedding and cross entropy")
        self.attn_dropout = Dropout(attention.attn_dropout.p)
        self.resid_dropout = Dropout(attention.resid_dropout.p)

    def forward(self, x: Tensor) -> Tensor:
        raise NotImplementedError("task 7.3: Tensor parallelism: conjugate operators, column/row-parallel Linear, heads split, vocabulary-parallel embedding and cross entropy")


class ParallelMLP(Module):
    """``mlp`` (the GPT's MLP) with its hidden features split over ``group``:
    column-parallel ``c_fc``, GELU, row-parallel ``c_proj``."""

    def __init__(self, mlp: MLP, group: Any = None, sequence_parallel: bool = False) -> None:
        super().__init__()
        raise NotImplementedError("task 7.3: Tensor parallelism: conjugate operators, column/row-parallel Linear, heads split, vocabulary-parallel embedding and cross entropy")
        self.gelu = mlp.gelu
        self.dropout = Dropout(mlp.dropout.p)

    def forward(self, x: Tensor) -> Tensor:
        raise NotImplementedError("task 7.3: Tensor parallelism: conjugate operators, column/row-parallel Linear, heads split, vocabulary-parallel embedding and cross entropy")
