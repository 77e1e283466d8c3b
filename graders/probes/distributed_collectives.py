"""A probe that runs one collective of the collective table
(``graders.oracle.distributed_collectives``) on every rank: on ranks as threads, or, from
a script under ``mpiexec``, on this process's MPI rank (``call_on_rank``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import probe
from .distributed_common import run_framework_world


def call_on_rank(tt: Any, call: str, rank: int, world: int, inputs: list[np.ndarray],
                 kwargs: dict[str, Any], async_op: bool) -> Any:
    """Call ``call`` (a spelling from the table) on this rank's input; its output."""
    dist = tt.distributed
    x = inputs[rank]
    name = call.rsplit(".", 1)[-1]
    if name == "all_reduce":
        out = tt.tensor(x)
        work = dist.all_reduce(out, op=kwargs["op"], async_op=async_op)
    elif name == "all_gather_into_tensor":
        out = tt.zeros(world * x.size, dtype=tt.tensor(x).dtype)
        work = dist.all_gather_into_tensor(out, tt.tensor(x), async_op=async_op)
    elif name == "all_gather":
        outs = [tt.zeros(x.shape, dtype=tt.tensor(x).dtype) for _ in range(world)]
        work = dist.all_gather(outs, tt.tensor(x), async_op=async_op)
        out = None
    elif name == "reduce_scatter_tensor":
        out = tt.zeros((x.shape[0] // world, *x.shape[1:]), dtype=tt.tensor(x).dtype)
        work = dist.reduce_scatter_tensor(out, tt.tensor(x), op=kwargs["op"], async_op=async_op)
    elif name == "reduce_scatter":
        chunks = [tt.tensor(c) for c in np.split(x, world)]
        out = tt.zeros(chunks[0].shape, dtype=chunks[0].dtype)
        work = dist.reduce_scatter(out, chunks, op=kwargs["op"], async_op=async_op)
    elif name == "broadcast":
        out = tt.tensor(x)
        work = dist.broadcast(out, src=kwargs["src"], async_op=async_op)
    elif name == "barrier":
        out = None
        work = dist.barrier(async_op=async_op)
    else:
        raise ValueError(f"unknown collective call {call!r}")
    if async_op:
        work.wait()
    if name == "all_gather":
        return np.concatenate([np.ravel(o.data) for o in outs])
    return None if out is None else np.array(out.data, copy=True)


@probe
def run(tt: Any, call: str, world: int, inputs: list[np.ndarray], kwargs: dict[str, Any],
        async_op: bool) -> dict[str, Any]:
    """Every rank's output of ``call`` and the traces."""
    results, trace = run_framework_world(tt, world, lambda rank: call_on_rank(
        tt, call, rank, world, inputs, kwargs, async_op))
    return {"outputs": results, "trace": trace}
