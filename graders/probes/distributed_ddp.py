"""Probes for task 7.1: DistributedDataParallel, on the probes' runtime (ranks as threads,
or as forked processes with ``spec["processes"]``).

Each rank builds the probes' MLP with its own weights (only rank 0's are the model's:
DDP must broadcast them), wraps it in the submission's DistributedDataParallel and
trains with the probes' SGD. Marks in the trace: "grad_ready" (a probe hook on each
parameter, registered before DDP's so it runs first: the gradient is final), "step" and
"backward".
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import probe
from .distributed_common import grads, mark, mlp, run_world, sgd, values
from .gpt import _at


@probe
def bucket_assignment(tt: Any, sizes: list[int], cap: int) -> list[list[int]]:
    """``compute_bucket_assignment(sizes, cap)``."""
    got = tt.distributed.data_parallel.compute_bucket_assignment(list(sizes), int(cap))
    return [[int(i) for i in bucket] for bucket in got]


@probe
def train(tt: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """``spec``: world, widths, weights (one dict per rank), bucket_cap_mb, lr, and
    batches[step][micro][rank] = (x, y); optionally groups (lists of ranks, made with
    new_group on every rank: each rank's DDP gets its own group as process_group),
    buffers (name -> one array per rank, registered on the model, or on a child for a
    dotted name, before DDP: "buffers" in the result, after wrapping) and
    processes (ranks as forked processes, see ``_world``). Each
    step runs its micro-batches (all but the last inside ``no_sync()``), loss =
    mse_loss(ddp(x), y), then the probes' SGD. Per rank: the parameters after wrapping,
    each loss, the gradients before each update, the parameters after it, and the trace."""
    dist = tt.distributed
    names = list(spec["weights"][0])

    def rank_main(rank: int) -> dict[str, Any]:
        model = mlp(tt, spec["widths"], spec["weights"][rank])
        buffers = spec.get("buffers") or {}
        for name, per_rank in buffers.items():  # "stat" on the model, "0.stat" on a child
            owner, _, leaf = name.rpartition(".")
            (_at(model, owner) if owner else model).register_buffer(
                leaf, tt.tensor(np.array(per_rank[rank])))
        params = [_at(model, name) for name in names]
        for name, p in zip(names, params, strict=True):  # before DDP's: they run first
            p.register_post_accumulate_grad_hook(
                lambda _p, name=name: mark("grad_ready", name=name))
        group = None
        if spec.get("groups") is not None:
            made = [dist.new_group(list(g)) for g in spec["groups"]]
            group = next(m for m, g in zip(made, spec["groups"], strict=True) if rank in g)
        ddp = dist.DistributedDataParallel(model, bucket_cap_mb=spec["bucket_cap_mb"],
                                           process_group=group)
        initial = values(model, names)
        initial_buffers = {name: np.array(_at(model, name).data) for name in buffers}
        losses, step_grads, step_params = [], [], []
        for step, micro_batches in enumerate(spec["batches"]):
            mark("step", step=step)
            for m, per_rank in enumerate(micro_batches):
                x, y = per_rank[rank]
                last = m == len(micro_batches) - 1
                mark("backward", step=step, micro=m, sync=last)
                if last:
                    loss = tt.nn.functional.mse_loss(ddp(tt.tensor(x)), tt.tensor(y))
                    loss.backward()
                else:
                    with ddp.no_sync():
                        loss = tt.nn.functional.mse_loss(ddp(tt.tensor(x)), tt.tensor(y))
                        loss.backward()
                losses.append(float(loss.item()))
            step_grads.append(grads(model, names))
            sgd(params, spec["lr"])
            step_params.append(values(model, names))
        out = {"initial": initial, "losses": np.array(losses), "grads": step_grads,
               "params": step_params}
        if buffers:
            out["buffers"] = initial_buffers
        return out

    results, trace = run_world(tt, spec["world"], rank_main, processes=spec.get("processes", False))
    for result, events in zip(results, trace, strict=True):
        result["trace"] = events
    return {"ranks": results}
