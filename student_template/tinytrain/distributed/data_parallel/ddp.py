"""DistributedDataParallel (task 7.1), after ``torch.nn.parallel.DistributedDataParallel``.

Every rank holds the whole model and runs it on its own part of the batch. At
construction the parameters (and buffers) are broadcast from the group's first rank, so
all ranks start equal. The gradients are averaged over the ranks during backward:

- they are grouped into buckets of about ``bucket_cap_mb`` megabytes, in reverse order of
  registration (``module.parameters()`` reversed: backward produces the last layers'
  gradients first);
- a hook on each parameter (``register_post_accumulate_grad_hook``) notes its gradient
  as ready; once every gradient of the next bucket is ready, the bucket's gradients are
  copied into one flat buffer whose asynchronous all-reduce (the average) starts at once,
  while backward goes on computing the other gradients (communication overlaps compute);
  buckets start in order, bucket 0 first, so every rank issues the same calls;
- a callback queued on the autograd engine (``queue_callback``) runs when backward ends:
  it waits for every all-reduce and copies the averages back into ``.grad``.

So after ``loss.backward()`` every rank holds the gradient of the mean loss over the whole
(global) batch, each gradient all-reduced exactly once. Inside ``no_sync()`` nothing is
communicated and gradients accumulate locally; the first backward outside it averages the
accumulated gradients. Every parameter must receive a gradient in each synchronised
backward (PyTorch's default, ``find_unused_parameters=False``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from ...autograd.engine import queue_callback
from ...nn.module import Module
from ...tensor import Tensor
from ..collectives import api as dist


def compute_bucket_assignment(sizes_in_bytes: list[int], bucket_cap_bytes: int) -> list[list[int]]:
    """Group parameters into buckets: ``sizes_in_bytes[i]`` is parameter i's gradient size
    (parameters in registration order). Walk them in reverse order, adding each to the
    current bucket; a bucket is closed as soon as it holds ``bucket_cap_bytes`` or more
    (so the parameter that crosses the cap belongs to it). Returns the buckets, each a
    list of parameter indices in the order they were added (bucket 0 holds the last
    parameters)."""
    # HINT: PyTorch's rule (compute_bucket_assignment_by_size): add, then close when full
    raise NotImplementedError("task 7.1: DistributedDataParallel: broadcast, bucketed averaging overlapped with backward, no_sync")


class DistributedDataParallel(Module):
    """Wrap ``module`` so that its gradients are averaged over the ranks of
    ``process_group`` (the default group when None), bucketed and overlapped with
    backward (see the module docstring)."""

    def __init__(self, module: Module, bucket_cap_mb: float = 25.0,
                 process_group: Any = None) -> None:
        super().__init__()
        self.module = module
        self.process_group = process_group
        self.bucket_cap_mb = bucket_cap_mb
        self.require_backward_grad_sync = True
        self._params = [p for p in module.parameters() if p.requires_grad]
        self._sync_module_states()
        sizes = [p.numel() * p.element_size() for p in self._params]
        self.bucket_indices = compute_bucket_assignment(sizes, int(bucket_cap_mb * 1024 * 1024))
        self._bucket_of = {id(self._params[i]): k
                           for k, bucket in enumerate(self.bucket_indices) for i in bucket}
        self._reset_reduction()
        for param in self._params:
            param.register_post_accumulate_grad_hook(self._on_grad_ready)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside: no communication, gradients accumulate on each rank (gradient
        accumulation); the first backward after it averages what accumulated."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    # ----- the homework -----------------------------------------------------------------
    def _sync_module_states(self) -> None:
        """Make every rank start from the first rank's parameters and buffers."""
        # HINT: dist.broadcast(tensor, src=<global rank>, group=...) writes into tensor.data;
        # HINT: dist.get_process_group_ranks(group)[0] is the group's first rank
        raise NotImplementedError("task 7.1: DistributedDataParallel: broadcast, bucketed averaging overlapped with backward, no_sync")

    def _reset_reduction(self) -> None:
        """Forget the last backward's buckets: nothing ready, nothing launched."""
        self._ready: list[set[int]] = [set() for _ in self.bucket_indices]
        self._launched: list[tuple[Any, Tensor]] = []  # (work, flat buffer) per bucket
        self._callback_queued = False

    def _on_grad_ready(self, param: Tensor) -> None:
        """The hook: ``param.grad`` is final for this backward."""
        if not self.require_backward_grad_sync:
            return
        # HINT: queue_callback(self._finish_reduction) once per backward; then launch every
        # HINT: bucket, in bucket order, as soon as all its gradients are ready
        raise NotImplementedError("task 7.1: DistributedDataParallel: broadcast, bucketed averaging overlapped with backward, no_sync")

    def _launch_bucket(self, k: int) -> None:
        """Start the average of bucket ``k``'s gradients (one flat buffer, async)."""
        raise NotImplementedError("task 7.1: DistributedDataParallel: broadcast, bucketed averaging overlapped with backward, no_sync")

    def _finish_reduction(self) -> None:
        """At the end of backward: wait for every bucket and copy the averages back."""
        if len(self._launched) < len(self.bucket_indices):
            missing = [i for k, bucket in enumerate(self.bucket_indices) for i in bucket
                       if id(self._params[i]) not in self._ready[k]]
            self._reset_reduction()
            raise RuntimeError(
                f"DistributedDataParallel: parameters {missing} (indices in "
                "module.parameters()) received no gradient in this backward; every parameter "
                "must take part in the loss")
        raise NotImplementedError("task 7.1: DistributedDataParallel: broadcast, bucketed averaging overlapped with backward, no_sync")
        self._reset_reduction()
