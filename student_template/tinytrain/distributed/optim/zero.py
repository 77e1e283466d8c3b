"""ZeRO (task 7.2): the optimizer state, and at stage 2 the gradients, sharded over the
data-parallel ranks (Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training
Trillion Parameter Models"; PyTorch's ``ZeroRedundancyOptimizer`` is stage 1).

Every rank holds all parameters and computes gradients on its own part of the batch, as
in data parallelism. Each parameter is flattened, padded with zeros to a multiple of the
world size and cut into ``world`` equal chunks (``shard_bounds``); rank r owns chunk r.
``self.optim`` is an ordinary optimizer (``optimizer_class``) over this rank's chunks
only (one tensor per parameter, in the same groups and order as ``param_groups``), so
its state (Adam's two moments) is 1/world of the whole. A step:

1. reduce-scatter each gradient (the average over ranks): rank r receives the average of
   its own chunk, as the chunk's ``.grad``;
2. ``self.optim.step()`` updates this rank's chunks;
3. all-gather the updated chunks into every rank's parameters.

A reduce-scatter and an all-gather move the bytes of one all-reduce, so ZeRO-1 costs
what data parallelism costs. At stage 2 the reduce-scatter of a gradient runs from its
hook as soon as backward has produced it, and the full gradient is dropped at once
(``param.grad`` is None after backward): each rank keeps 1/world of the gradients too.
(Stage 2 takes one backward per step: no gradient accumulation.)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ...nn.parameter import Parameter
from ...optim.optimizer import Optimizer
from ...tensor import Tensor
from ..collectives import api as dist


def shard_bounds(numel: int, world: int, rank: int) -> tuple[int, int, int]:
    """(start, stop, chunk) of rank ``rank``'s part of a flattened parameter of ``numel``
    elements padded to ``world * chunk`` with chunk = ceil(numel / world): elements
    [start, stop) of the flat parameter, the rest of the chunk padding."""
    chunk = max(1, math.ceil(numel / world))
    start = min(rank * chunk, numel)
    return start, min(start + chunk, numel), chunk


class ZeroRedundancyOptimizer(Optimizer):
    """Wrap ``optimizer_class`` (``tt.optim.AdamW`` ...) so that each rank of
    ``process_group`` keeps the state of its shard only (``stage`` 1), and at ``stage`` 2
    only its shard of the gradients as well. ``defaults`` go to ``optimizer_class``.
    ``param_groups`` lists the whole parameters (an LR scheduler changes them there);
    ``optim`` is the local optimizer over this rank's shards."""

    def __init__(self, params: Iterable[Any], optimizer_class: Callable[..., Optimizer],
                 process_group: Any = None, stage: int = 1, **defaults: Any) -> None:
        if stage not in (1, 2):
            raise ValueError(f"ZeRO stage must be 1 or 2, got {stage}")
        super().__init__(params, defaults)
        self.process_group = process_group
        self.stage = stage
        self.world = dist.get_world_size(process_group)
        self.rank = dist.get_rank(process_group)
        self._shards: dict[int, Parameter] = {}
        local_groups = []
        for group in self.param_groups:
            shards = [self._make_shard(p) for p in group["params"]]
            local_groups.append({**{k: v for k, v in group.items() if k != "params"},
                                 "params": shards})
        self.optim = optimizer_class(local_groups, **defaults)
        if stage == 2:
            for group in self.param_groups:
                for p in group["params"]:
                    p.register_post_accumulate_grad_hook(self._on_grad_ready)

    def shard(self, param: Tensor) -> Parameter:
        """This rank's chunk of ``param`` (what ``self.optim`` updates)."""
        return self._shards[id(param)]

    # ----- the homework -----------------------------------------------------------------
    def _make_shard(self, param: Tensor) -> Parameter:
        """A new Parameter of ``chunk`` elements: this rank's part of ``param``, flattened,
        padded with zeros; remember it in ``self._shards``."""
        raise NotImplementedError("task 7.2: ZeRO stages 1 and 2: sharded optimizer state and gradients, reduce-scatter and all-gather")

    def _reduce_scatter_grad(self, param: Tensor) -> None:
        """Average ``param.grad`` over the ranks, keeping this rank's chunk of the average
        as the shard's ``.grad``."""
        # HINT: dist.reduce_scatter_tensor(output, input, op=dist.ReduceOp.AVG, group=...)
        # HINT: takes an input of world * chunk elements (pad the flat gradient)
        raise NotImplementedError("task 7.2: ZeRO stages 1 and 2: sharded optimizer state and gradients, reduce-scatter and all-gather")

    def _on_grad_ready(self, param: Tensor) -> None:
        """Stage 2: reduce-scatter the gradient as soon as it is final, then drop it."""
        raise NotImplementedError("task 7.2: ZeRO stages 1 and 2: sharded optimizer state and gradients, reduce-scatter and all-gather")

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One optimizer step on this rank's shards, then every rank gets all parameters."""
        loss = closure() if closure is not None else None
        self._sync_hyperparameters()
        params = [p for group in self.param_groups for p in group["params"]]
        # HINT: stage 1: reduce-scatter every gradient here; stage 2 did it during backward.
        # HINT: after self.optim.step(), dist.all_gather_into_tensor(output, chunk, group=...)
        raise NotImplementedError("task 7.2: ZeRO stages 1 and 2: sharded optimizer state and gradients, reduce-scatter and all-gather")
        return loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        super().zero_grad(set_to_none)
        self.optim.zero_grad(set_to_none)

    def _sync_hyperparameters(self) -> None:
        """Copy lr, weight decay ... from ``param_groups`` to the local optimizer's groups."""
        for group, local in zip(self.param_groups, self.optim.param_groups, strict=True):
            for key, value in group.items():
                if key != "params":
                    local[key] = value
