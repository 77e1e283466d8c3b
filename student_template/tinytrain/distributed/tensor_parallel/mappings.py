"""Megatron-LM's communication operators for tensor parallelism (task 7.3): autograd
Functions whose forward and backward are conjugate collectives, across the ranks of
``group``, along the last dim:
- ``copy_to_tensor_model_parallel_region`` ("f"): identity forward, all-reduce (sum) of
  the gradient backward. Enters a region where each rank works on its own part of the
  weights with the whole (replicated) input.
- ``reduce_from_tensor_model_parallel_region`` ("g"): all-reduce (sum) forward, identity
  backward. Leaves the region: the ranks' partial results add up.
- ``scatter_to_tensor_model_parallel_region``: this rank's chunk of the last dim
  forward, all-gather of the gradient backward.
- ``gather_from_tensor_model_parallel_region``: all-gather along the last dim forward,
  this rank's chunk of the gradient backward.

"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...autograd.function import BackwardNode
from ...tensor import Tensor
from ..collectives.arrays import CollectiveFunction, all_gather, all_reduce, chunk


# ----- tensor parallelism (task 7.3) ------------------------------------------------------
class _CopyToRegion(CollectiveFunction):
    @staticmethod
    def forward(ctx: BackwardNode, x: Tensor, group: Any) -> np.ndarray:
        ctx.group = group
        raise NotImplementedError("task 7.3: Tensor parallelism: conjugate operators, column/row-parallel Linear, heads split, vocabulary-parallel embedding and cross entropy")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray, None]:
        raise NotImplementedError("task 7.3: Tensor parallelism: conjugate operators, column/row-parallel Linear, heads split, vocabulary-parallel embedding and cross entropy")


class _ReduceFromRegion(CollectiveFunction):
    @staticmethod
    def forward(ctx: BackwardNode, x: Tensor, group: Any) -> np.ndarray:
        raise NotImplementedError("task 7.3: Tensor parallelism: conjugate operators, column/row-parallel Linear, heads split, vocabulary-parallel embedding and cross entropy")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray, None]:
        raise NotImplementedError("task 7.3: Tensor parallelism: conjugate operators, column/row-parallel Linear, heads split, vocabulary-parallel embedding and cross entropy")


class _ScatterToRegion(CollectiveFunction):
    @staticmethod
    def forward(ctx: BackwardNode, x: Tensor, group: Any) -> np.ndarray:
        ctx.group = group
        raise NotImplementedError("task 7.3: Tensor parallelism: conjugate operators, column/row-parallel Linear, heads split, vocabulary-parallel embedding and cross entropy")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray, None]:
        raise NotImplementedError("task 7.3: Tensor parallelism: conjugate operators, column/row-parallel Linear, heads split, vocabulary-parallel embedding and cross entropy")


class _GatherFromRegion(CollectiveFunction):
    @staticmethod
    def forward(ctx: BackwardNode, x: Tensor, group: Any) -> np.ndarray:
        ctx.group = group
        raise NotImplementedError("task 7.3: Tensor parallelism: conjugate operators, column/row-parallel Linear, heads split, vocabulary-parallel embedding and cross entropy")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray, None]:
        raise NotImplementedError("task 7.3: Tensor parallelism: conjugate operators, column/row-parallel Linear, heads split, vocabulary-parallel embedding and cross entropy")


def copy_to_tensor_model_parallel_region(x: Tensor, group: Any = None) -> Tensor:
    """Identity forward; the gradient is all-reduced (summed) over ``group`` backward."""
    return _CopyToRegion.apply(x, group)


def reduce_from_tensor_model_parallel_region(x: Tensor, group: Any = None) -> Tensor:
    """All-reduce (sum) over ``group`` forward; identity backward."""
    return _ReduceFromRegion.apply(x, group)


def scatter_to_tensor_model_parallel_region(x: Tensor, group: Any = None) -> Tensor:
    """This rank's chunk of the last dim forward; all-gather of the gradient backward."""
    return _ScatterToRegion.apply(x, group)


def gather_from_tensor_model_parallel_region(x: Tensor, group: Any = None) -> Tensor:
    """All-gather along the last dim forward; this rank's chunk of the gradient backward."""
    return _GatherFromRegion.apply(x, group)
