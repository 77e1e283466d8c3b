"""Collectives on NumPy arrays along a dim, for the autograd Functions of tensor and
sequence parallelism (given code)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...autograd.function import Function
from ...tensor import Tensor
from . import api as dist


def all_reduce(x: np.ndarray, group: Any) -> np.ndarray:
    out = Tensor(np.array(x, copy=True))
    dist.all_reduce(out, group=group)
    return out.data


def all_gather(x: np.ndarray, dim: int, group: Any) -> np.ndarray:
    """The ranks' ``x`` concatenated along ``dim`` (in group rank order)."""
    world = dist.get_world_size(group)
    moved = np.ascontiguousarray(np.moveaxis(x, dim, 0))
    out = Tensor(np.empty((world * moved.shape[0], *moved.shape[1:]), dtype=x.dtype))
    dist.all_gather_into_tensor(out, Tensor(moved), group=group)
    return np.ascontiguousarray(np.moveaxis(out.data, 0, dim))


def reduce_scatter(x: np.ndarray, dim: int, group: Any) -> np.ndarray:
    """The sum over ranks of ``x``, this rank's chunk along ``dim``."""
    world = dist.get_world_size(group)
    moved = np.ascontiguousarray(np.moveaxis(x, dim, 0))
    if moved.shape[0] % world:
        raise ValueError(f"dim {dim} of size {moved.shape[0]} does not split into {world} chunks")
    out = Tensor(np.empty((moved.shape[0] // world, *moved.shape[1:]), dtype=x.dtype))
    dist.reduce_scatter_tensor(out, Tensor(moved), group=group)
    return np.ascontiguousarray(np.moveaxis(out.data, 0, dim))


def chunk(x: np.ndarray, dim: int, group: Any) -> np.ndarray:
    """This rank's chunk of ``x`` along ``dim`` (a copy)."""
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    if x.shape[dim] % world:
        raise ValueError(f"dim {dim} of size {x.shape[dim]} does not split into {world} chunks")
    return np.array(np.split(x, world, axis=dim)[rank], copy=True)


class CollectiveFunction(Function):
    """Base of the operators: no autocast, no float32 opmath (they move data, exactly)."""

    opmath = False
