"""``tt.distributed``: parallel training with torch.distributed's names.

Given (not homework): process groups and collectives (``all_reduce``, ``all_gather``,
``reduce_scatter``, ``broadcast``, ``send``/``recv``, ``barrier``, async ``Work``) on two
backends, ranks as threads of one process (``spawn``) and MPI processes (``mpiexec``),
the trace of every call, and ``DeviceMesh``. Homework (assignment 7): data parallelism
(``DistributedDataParallel``), ZeRO (``optim.ZeroRedundancyOptimizer``), tensor and
sequence parallelism (``tensor_parallel``, ``sequence_parallel``), pipelines
(``pipelining``) and a GPT trained with all of them (``models``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import models, optim, pipelining, sequence_parallel, tensor_parallel
from .backends.threads import ThreadWorld
from .collectives.api import (
    GroupMember,
    ReduceOp,
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    barrier,
    broadcast,
    destroy_process_group,
    get_backend,
    get_process_group_ranks,
    get_rank,
    get_trace,
    get_world_size,
    init_process_group,
    irecv,
    is_available,
    is_initialized,
    isend,
    new_group,
    record_event,
    recv,
    reduce_scatter,
    reduce_scatter_tensor,
    send,
)
from .collectives.errors import DistributedError, RankAborted
from .collectives.group import ProcessGroup, Work
from .data_parallel import DistributedDataParallel
from .device_mesh import DeviceMesh, init_device_mesh


def spawn(fn: Callable[..., Any], args: tuple[Any, ...] = (), nprocs: int = 2,
          timeout: float = 30.0) -> list[Any]:
    """Run ``fn(rank, *args)`` on ``nprocs`` ranks as threads of this process (the threads
    backend's default group is ready in each); their return values in rank order. A rank
    that raises, a deadlock, or a rank that runs ``timeout`` seconds without reaching a
    collective raises here, naming the rank (``torch.multiprocessing.spawn``'s shape)."""
    return ThreadWorld(nprocs, timeout=timeout).run(fn, *args)


__all__ = [
    "DeviceMesh",
    "DistributedDataParallel",
    "DistributedError",
    "GroupMember",
    "ProcessGroup",
    "RankAborted",
    "ReduceOp",
    "ThreadWorld",
    "Work",
    "all_gather",
    "all_gather_into_tensor",
    "all_reduce",
    "barrier",
    "broadcast",
    "destroy_process_group",
    "get_backend",
    "get_process_group_ranks",
    "get_rank",
    "get_trace",
    "get_world_size",
    "init_device_mesh",
    "init_process_group",
    "irecv",
    "is_available",
    "is_initialized",
    "isend",
    "models",
    "new_group",
    "optim",
    "pipelining",
    "record_event",
    "recv",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "send",
    "sequence_parallel",
    "spawn",
    "tensor_parallel",
]
