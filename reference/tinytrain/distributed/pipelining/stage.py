"""A pipeline stage (task 7.5), after ``torch.distributed.pipelining.PipelineStage``: one
rank's consecutive layers of the model, and the work of one micro-batch through them.

Stage i runs on the i-th rank of ``group``. ``forward_one`` takes a micro-batch (the
first stage gets it from the schedule, the others receive the previous stage's
activations), runs the layers, and sends the output on (the last stage computes the
loss instead); it keeps what backward needs. ``backward_one`` runs backward for a
micro-batch (the last stage from its loss, scaled by 1 / number of micro-batches so the
gradients are those of the mean loss; the others from the gradient the next stage sends
back) and sends the input's gradient to the previous stage; then it lets go of that
micro-batch's activations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...nn.module import Module
from ...tensor import Tensor
from ..collectives import api as dist
from .p2p import recv_activation, recv_gradient, send_activation, send_gradient


class PipelineStage:
    """``submodule`` as stage ``stage_index`` of ``num_stages`` (one per rank of
    ``group``, in group rank order)."""

    def __init__(self, submodule: Module, stage_index: int, num_stages: int,
                 group: Any = None) -> None:
        ranks = dist.get_process_group_ranks(group)
        if len(ranks) != num_stages or dist.get_rank(group) != stage_index:
            raise ValueError(f"stage {stage_index} of {num_stages} must run on group rank "
                             f"{stage_index} of a group of {num_stages} (this is group rank "
                             f"{dist.get_rank(group)} of {len(ranks)})")
        self.submodule = submodule
        self.stage_index = stage_index
        self.num_stages = num_stages
        self.group = group
        self.is_first = stage_index == 0
        self.is_last = stage_index == num_stages - 1
        self.prev_rank = None if self.is_first else ranks[stage_index - 1]
        self.next_rank = None if self.is_last else ranks[stage_index + 1]
        self._inputs: dict[int, Tensor] = {}  # micro-batch -> its input (received ones)
        self._outputs: dict[int, Tensor] = {}  # micro-batch -> output (last stage: loss)

    def forward_one(self, chunk: int, inputs: Any = None, target: Any = None,
                    loss_fn: Callable[[Tensor, Any], Tensor] | None = None) -> Tensor:
        """Forward of micro-batch ``chunk``: its output (the last stage: the loss)."""
        # BEGIN SOLUTION 7.5
        # HINT: receive with recv_activation(self.prev_rank, self.group); a received input
        # HINT: needs requires_grad so that backward gives its gradient to send back
        if self.is_first:
            x = inputs
        else:
            x = recv_activation(self.prev_rank, self.group).requires_grad_(True)
            self._inputs[chunk] = x
        out = self.submodule(x)
        if self.is_last:
            out = loss_fn(out, target)
        else:
            send_activation(out, self.next_rank, self.group)
        self._outputs[chunk] = out
        return out
        # END SOLUTION

    def backward_one(self, chunk: int, loss_scale: float = 1.0) -> None:
        """Backward of micro-batch ``chunk`` (the last stage scales its loss by
        ``loss_scale``), then free its activations."""
        # BEGIN SOLUTION 7.5
        out = self._outputs.pop(chunk)
        if self.is_last:
            (out * loss_scale).backward()
        else:
            out.backward(recv_gradient(out, self.next_rank, self.group))
        if not self.is_first:
            x = self._inputs.pop(chunk)
            send_gradient(x._grad.data, self.prev_rank, self.group)
        # END SOLUTION
