"""Pipeline schedules (task 7.5), after ``torch.distributed.pipelining``'s ScheduleGPipe
and Schedule1F1B: ``step`` cuts the batch into micro-batches and runs the stage's
forward and backward of each in the schedule's order (``order()``).

- GPipe (Huang et al. 2019): every forward, then every backward. Simple, but a stage
  keeps the activations of all micro-batches until the backwards start.
- 1F1B (PipeDream-Flush, Narayanan et al. 2021; Megatron-LM): stage i first runs
  ``min(num_stages - i - 1, n)`` forwards (warm-up), then alternates one forward and one
  backward, then runs the remaining backwards. It does the same work in the same time
  (the same bubble) but holds at most ``num_stages - i`` micro-batches' activations.

Losses: the last stage computes ``loss_fn(output, target)`` per micro-batch and runs
backward on it divided by the number of micro-batches, so the gradients are those of the
mean over micro-batches (the full batch's loss for a mean loss); ``losses`` receives
each micro-batch's loss.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...tensor import Tensor
from .stage import PipelineStage


def _split(x: Any, n: int) -> list[Any]:
    if x is None:
        return [None] * n
    if x.shape[0] % n:
        raise ValueError(f"a batch of {x.shape[0]} does not split into {n} micro-batches")
    return [Tensor(np.array(part, copy=True)) for part in np.split(x.data, n)]


class PipelineSchedule:
    """Runs ``stage`` over ``n_microbatches`` micro-batches in the order of ``order()``."""

    def __init__(self, stage: PipelineStage, n_microbatches: int,
                 loss_fn: Callable[[Tensor, Any], Tensor] | None = None) -> None:
        self.stage = stage
        self.n_microbatches = n_microbatches
        self.loss_fn = loss_fn

    def order(self) -> list[tuple[str, int]]:
        """The actions of this stage: ("F", micro-batch) and ("B", micro-batch)."""
        raise NotImplementedError

    def step(self, inputs: Tensor | None = None, target: Tensor | None = None,
             losses: list[Any] | None = None) -> Tensor | None:
        """One pipelined forward and backward of the batch: the first stage gives
        ``inputs``, the last ``target`` (and ``losses``, a list that receives each
        micro-batch's loss). Returns the last stage's losses stacked, else None."""
        n = self.n_microbatches
        chunks, targets = _split(inputs, n), _split(target, n)
        done = []
        for action, chunk in self.order():
            if action == "F":
                out = self.stage.forward_one(chunk, chunks[chunk], targets[chunk], self.loss_fn)
                if self.stage.is_last:
                    done.append(out)
            else:
                self.stage.backward_one(chunk, loss_scale=1.0 / n)
        if not self.stage.is_last:
            return None
        if losses is not None:
            losses.extend(done)
        return Tensor(np.array([float(x.item()) for x in done]))


class ScheduleGPipe(PipelineSchedule):
    """All forwards, then all backwards."""

    def order(self) -> list[tuple[str, int]]:
        # BEGIN SOLUTION 7.5
        n = self.n_microbatches
        return [("F", i) for i in range(n)] + [("B", i) for i in range(n)]
        # END SOLUTION


class Schedule1F1B(PipelineSchedule):
    """Warm-up forwards, one forward one backward, then the last backwards."""

    def order(self) -> list[tuple[str, int]]:
        # BEGIN SOLUTION 7.5
        n, stage = self.n_microbatches, self.stage
        warmup = min(stage.num_stages - stage.stage_index - 1, n)
        actions = [("F", i) for i in range(warmup)]
        for i in range(n - warmup):
            actions += [("F", warmup + i), ("B", i)]
        actions += [("B", i) for i in range(n - warmup, n)]
        return actions
        # END SOLUTION
