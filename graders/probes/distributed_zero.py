"""Probes for task 7.2: ZeroRedundancyOptimizer (stages 1 and 2) over the submission's
AdamW, on the probes' runtime (ranks as threads, or as forked processes with
``spec["processes"]``), each with its own part of every batch."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import probe
from ._observe import array
from .distributed_common import mark, mlp, run_world, values
from .gpt import _at


def _optimizers(obj: Any, tt: Any, seen: set[int] | None = None) -> list[Any]:
    """Every optimizer reachable from ``obj``'s attributes (itself included), so that
    state kept anywhere is counted."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    found = [obj] if isinstance(obj, tt.optim.Optimizer) else []
    for value in vars(obj).values() if hasattr(obj, "__dict__") else ():
        items = value if isinstance(value, (list, tuple)) else [value]
        for item in items:
            if isinstance(item, tt.optim.Optimizer):
                found += _optimizers(item, tt, seen)
    return found


def _state_bytes(tt: Any, opt: Any) -> int:
    total = 0
    for optimizer in _optimizers(opt, tt):
        for state in optimizer.state.values():
            for value in state.values():
                if isinstance(value, tt.Tensor) and value.numel() > 1:
                    total += value.data.nbytes
    return total


@probe
def train(tt: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """``spec``: world, stage, widths, weights (the same on every rank), options (lr,
    betas, weight_decay), batches[step][rank] = (x, y). Weights decay, biases do not
    (two groups). Per rank and step: the bytes of gradients held after backward
    (parameters' and shards'), the optimizer state's bytes (every optimizer reachable from
    the ZeRO object), the parameters after the step, each parameter's shard state and the
    dtype of each shard (``opt.shard(p)``). The weights' dtype is the model's. Optionally
    ``groups`` (lists of ranks, made with new_group on every rank in this order): each
    rank's ZeRO runs over the group it is in (``process_group=``); ``layout``
    "column-major": the 2-D parameters are stored column-major and every gradient is
    passed on column-major (a post-accumulate-grad hook registered before ZeRO's)."""
    dist = tt.distributed
    names = list(spec["weights"])
    options = spec["options"]

    def column_major_grad(p: Any) -> None:
        p.grad = tt.Tensor(np.asfortranarray(p.grad.data))

    def rank_main(rank: int) -> dict[str, Any]:
        process_group = None
        if spec.get("groups") is not None:
            made = [dist.new_group(list(g)) for g in spec["groups"]]
            process_group = next(m for m, g in zip(made, spec["groups"], strict=True)
                                 if rank in g)
        model = mlp(tt, spec["widths"], spec["weights"])
        params = [_at(model, n) for n in names]
        if spec.get("layout") == "column-major":
            for p in params:
                p.data = np.asfortranarray(p.data)
                p.register_post_accumulate_grad_hook(column_major_grad)
        groups = [{"params": [p for n, p in zip(names, params) if n.endswith("weight")],
                   "weight_decay": options["weight_decay"]},
                  {"params": [p for n, p in zip(names, params) if n.endswith("bias")],
                   "weight_decay": 0.0}]
        opt = dist.optim.ZeroRedundancyOptimizer(
            groups, tt.optim.AdamW, process_group=process_group, stage=spec["stage"],
            lr=options["lr"],
            betas=tuple(options["betas"]))
        out: dict[str, list[Any]] = {"losses": [], "grad_bytes": [], "state_bytes": [],
                                     "params": [], "state": [], "shard_dtypes": []}
        for step, per_rank in enumerate(spec["batches"]):
            x, y = per_rank[rank]
            opt.zero_grad()
            loss = tt.nn.functional.mse_loss(model(tt.tensor(x)), tt.tensor(y))
            mark("backward", step=step)
            loss.backward()
            mark("step", step=step)
            shards = [s for g in opt.optim.param_groups for s in g["params"]]
            held = [t._grad for t in [*params, *shards] if t._grad is not None]
            out["grad_bytes"].append(sum(g.data.nbytes for g in held))
            opt.step()
            mark("stepped", step=step)
            out["losses"].append(float(loss.item()))
            out["state_bytes"].append(_state_bytes(tt, opt))
            out["params"].append(values(model, names))
            ordered = [p for g in opt.param_groups for p in g["params"]]
            by_param = dict(zip([id(p) for p in ordered], shards))
            states = {}
            for name, p in zip(names, params):
                state = opt.optim.state.get(by_param[id(p)], {})
                states[name] = {k: array(v) for k, v in state.items() if isinstance(v, tt.Tensor)}
            out["state"].append(states)
            out["shard_dtypes"].append(
                {name: str(opt.shard(p).data.dtype) for name, p in zip(names, params)})
        out["losses"] = np.array(out["losses"])
        return out

    results, trace = run_world(tt, spec["world"], rank_main, processes=spec.get("processes", False))
    for result, events in zip(results, trace, strict=True):
        result["trace"] = events
    return {"ranks": results}
