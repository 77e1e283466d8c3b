"""Sending activations between pipeline stages (given code): the receiver does not know
their shape, so a small header (dtype, number of dims, dims) goes first, with tag 1; the
values follow with tag 0. Gradients travel back with tag 0 only: the receiver knows their
shape (that of what it sent)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import dtypes
from ...tensor import Tensor
from ..collectives import api as dist

MAX_DIMS = 7
_DTYPES = [d.np for d in dtypes.ALL_DTYPES]
HEADER_TAG, DATA_TAG = 1, 0


def send_activation(x: Tensor, dst: int, group: Any = None) -> None:
    """Send ``x`` (its values, without history) to global rank ``dst``."""
    if x.ndim > MAX_DIMS:
        raise ValueError(f"activations of more than {MAX_DIMS} dims cannot be sent")
    header = np.zeros(2 + MAX_DIMS, np.int64)
    header[0], header[1] = _DTYPES.index(x.data.dtype), x.ndim
    header[2:2 + x.ndim] = x.shape
    dist.send(Tensor(header), dst, group=group, tag=HEADER_TAG)
    dist.send(Tensor(np.ascontiguousarray(x.data)), dst, group=group, tag=DATA_TAG)


def recv_activation(src: int, group: Any = None) -> Tensor:
    """The next activation sent by global rank ``src`` (a new tensor, no history)."""
    header = Tensor(np.zeros(2 + MAX_DIMS, np.int64))
    dist.recv(header, src, group=group, tag=HEADER_TAG)
    dtype, ndim = _DTYPES[int(header.data[0])], int(header.data[1])
    out = Tensor(np.zeros(tuple(int(d) for d in header.data[2:2 + ndim]), dtype))
    dist.recv(out, src, group=group, tag=DATA_TAG)
    return out


def send_gradient(g: np.ndarray, dst: int, group: Any = None) -> None:
    dist.send(Tensor(np.ascontiguousarray(g)), dst, group=group, tag=DATA_TAG)


def recv_gradient(like: Tensor, src: int, group: Any = None) -> Tensor:
    """The gradient for ``like`` (same shape and dtype) sent back by global rank ``src``."""
    out = Tensor(np.zeros(like.shape, like.data.dtype))
    dist.recv(out, src, group=group, tag=DATA_TAG)
    return out
