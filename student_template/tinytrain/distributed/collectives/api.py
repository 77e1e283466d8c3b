"""torch.distributed's functions, on tinytrain tensors.

Collectives work in place on ``tensor.data`` (and bump the tensor's version); they are not
recorded by autograd (the tensor-parallel operators wrap them in Functions). ``src`` and
``dst`` are global ranks, as in torch.distributed. With ``async_op=True`` a call returns a
``Work`` at once and its ``wait()`` puts the result in place; otherwise it returns None
when done. An output must have its input's dtype (TypeError otherwise, as torch.distributed
refuses mixed dtypes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...tensor import Tensor
from .errors import DistributedError
from .group import ProcessGroup, Work
from .reduce import REDUCE_OPS
from .state import state
from .trace import Trace


class ReduceOp:
    """How all_reduce and reduce_scatter combine the ranks' values."""

    SUM = "sum"
    AVG = "avg"
    MAX = "max"
    MIN = "min"
    PRODUCT = "product"


class _NonGroupMember:
    def __repr__(self) -> str:
        return "GroupMember.NON_GROUP_MEMBER"


class GroupMember:
    """``WORLD`` (None: the default group) and ``NON_GROUP_MEMBER`` (what ``new_group``
    returns on a rank outside the group)."""

    WORLD = None
    NON_GROUP_MEMBER = _NonGroupMember()


BACKENDS = ("threads", "mpi")


# ----- setup ------------------------------------------------------------------------------
def is_available() -> bool:
    return True


def init_process_group(backend: str = "threads", *, rank: int | None = None,
                       world_size: int | None = None, timeout: float | None = None,
                       trace: bool = True) -> None:
    """Join the default process group.

    "threads": inside ``tt.distributed.spawn`` (or a ``ThreadWorld``) the group already
    exists and this only checks the arguments; outside, it makes a world of one rank.
    "mpi": every MPI process of ``mpiexec -n N`` is a rank (needs the ``mpi`` extra).
    ``trace=False`` records no trace (long runs).
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; tinytrain has {list(BACKENDS)}")
    current = state.backend
    if current is not None:
        if current.name != backend:
            raise RuntimeError(f"this rank already uses the {current.name!r} backend")
        for name, value, actual in (("rank", rank, current.rank),
                                    ("world_size", world_size, current.world_size)):
            if value is not None and value != actual:
                raise ValueError(f"init_process_group({name}={value}) but this rank's {name} "
                                 f"is {actual}")
        state.trace.enabled = trace
        return
    if backend == "threads":
        from ..backends.threads import ThreadWorld

        if (world_size or 1) != 1 or (rank or 0) != 0:
            raise RuntimeError("ranks as threads are started by tt.distributed.spawn(fn, "
                               "nprocs=N); init_process_group('threads') alone makes one rank")
        world = ThreadWorld(1, timeout=timeout or 30.0, trace=trace)
        world._running, world._status[0] = 0, "running"
        world._used = True
        world._install(0)
        return
    from ..backends.mpi import MPIBackend

    backend_obj = MPIBackend(timeout)
    if world_size is not None and world_size != backend_obj.world_size:
        raise ValueError(f"init_process_group(world_size={world_size}) but mpiexec started "
                         f"{backend_obj.world_size} processes")
    state.backend = backend_obj
    state.trace = Trace(trace)
    state.groups_made = 0
    state.world = ProcessGroup(backend_obj, tuple(range(backend_obj.world_size)), 0,
                               backend_obj.world_handle(), state.trace)


def is_initialized() -> bool:
    return state.backend is not None


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Leave the default group (a subgroup: nothing to do)."""
    if group is not None:
        return
    backend = state.backend
    if backend is not None and hasattr(backend, "finalize"):
        backend.finalize()
    state.backend = state.world = state.trace = None
    state.groups_made = 0


def _backend() -> Any:
    if state.backend is None:
        raise RuntimeError("Default process group has not been initialized, please make sure "
                           "to call init_process_group.")
    return state.backend


def _group(group: ProcessGroup | None) -> ProcessGroup:
    _backend()
    if group is None:
        return state.world
    if group is GroupMember.NON_GROUP_MEMBER:
        raise DistributedError("this rank is not a member of the group")
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup, got {type(group).__name__}")
    return group


def get_backend(group: ProcessGroup | None = None) -> str:
    return _backend().name


def get_rank(group: ProcessGroup | None = None) -> int:
    """This rank's number in ``group`` (the default group: the global rank); -1 outside."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return _group(group).rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return _group(group).size()


def get_process_group_ranks(group: ProcessGroup | None) -> list[int]:
    """The global ranks of ``group``, in group rank order."""
    return list(_group(group).ranks)


def new_group(ranks: list[int] | None = None) -> Any:
    """A group of ``ranks`` (all ranks when None). Every rank must call it, in the same
    order, even the ranks outside the group (which get ``GroupMember.NON_GROUP_MEMBER``)."""
    backend = _backend()
    members = tuple(range(backend.world_size)) if ranks is None else tuple(int(r) for r in ranks)
    if len(set(members)) != len(members) or not members or any(
            not 0 <= r < backend.world_size for r in members):
        raise ValueError(f"new_group: invalid ranks {list(members)} for world size "
                         f"{backend.world_size}")
    index = state.groups_made
    state.groups_made += 1
    gid, handle = backend.new_group(index, members)
    if backend.rank not in members:
        return GroupMember.NON_GROUP_MEMBER
    return ProcessGroup(backend, members, gid, handle, state.trace)


# ----- collectives ------------------------------------------------------------------------
def _tensor(x: Any, name: str = "tensor") -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a tinytrain Tensor, got {type(x).__name__}")
    return x


def _op(op: Any) -> str:
    if op not in REDUCE_OPS:
        raise ValueError(f"unknown reduce op {op!r}; use tt.distributed.ReduceOp")
    return op


def _same_dtype(what: str, out: Tensor, inputs: list[Tensor]) -> None:
    # torch.distributed (gloo, NCCL) rejects an output whose dtype is not the input's
    for inp in inputs:
        if inp.data.dtype != out.data.dtype:
            raise TypeError(f"{what}: the output is {out.data.dtype.name} but an input is "
                            f"{inp.data.dtype.name} (with mixed dtypes); torch.distributed "
                            "requires the output and input tensors in one dtype")


def _store(tensor: Tensor) -> Callable[[np.ndarray], None]:
    def finish(result: np.ndarray) -> None:
        tensor.data[...] = np.asarray(result).reshape(tensor.shape)
        tensor._bump_version()

    return finish


def all_reduce(tensor: Tensor, op: str = ReduceOp.SUM, group: ProcessGroup | None = None,
               async_op: bool = False) -> Work | None:
    """Every rank's ``tensor`` becomes the reduction (sum, avg, max, ...) over the group."""
    tensor, pg = _tensor(tensor), _group(group)
    return pg.run("all_reduce", np.array(tensor.data, copy=True), _store(tensor), op=_op(op),
                  async_op=async_op)


def all_gather(tensor_list: list[Tensor], tensor: Tensor, group: ProcessGroup | None = None,
               async_op: bool = False) -> Work | None:
    """``tensor_list[i]`` becomes group rank i's ``tensor``."""
    tensor, pg = _tensor(tensor), _group(group)
    if len(tensor_list) != pg.size():
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors for a group "
                         f"of {pg.size()}")
    outputs = [_tensor(t, "tensor_list[i]") for t in tensor_list]
    for out in outputs:
        _same_dtype("all_gather", out, [tensor])

    def finish(results: list[np.ndarray]) -> None:
        for out, value in zip(outputs, results, strict=True):
            _store(out)(value)

    full = ((pg.size(), *tensor.shape), tensor.data.dtype)
    return pg.run("all_gather", np.array(tensor.data, copy=True), finish, full=full,
                  async_op=async_op)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor,
                           group: ProcessGroup | None = None,
                           async_op: bool = False) -> Work | None:
    """``output_tensor`` (world x the input's elements) becomes the inputs of group ranks
    0, 1, ... concatenated along dim 0 (or stacked, for an output of shape (world, ...))."""
    out, inp, pg = _tensor(output_tensor), _tensor(input_tensor), _group(group)
    if out.numel() != inp.numel() * pg.size():
        raise ValueError(f"all_gather_into_tensor: output has {out.numel()} elements, expected "
                         f"{pg.size()} x {inp.numel()}")
    _same_dtype("all_gather_into_tensor", out, [inp])

    def finish(results: list[np.ndarray]) -> None:
        _store(out)(np.concatenate([np.ravel(r) for r in results]))

    return pg.run("all_gather", np.array(inp.data, copy=True), finish,
                  full=(out.shape, out.data.dtype), async_op=async_op)


def reduce_scatter(output: Tensor, input_list: list[Tensor], op: str = ReduceOp.SUM,
                   group: ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """Group rank i's ``output`` becomes the reduction over ranks of their ``input_list[i]``."""
    out, pg = _tensor(output, "output"), _group(group)
    if len(input_list) != pg.size():
        raise ValueError(f"reduce_scatter: input_list has {len(input_list)} tensors for a "
                         f"group of {pg.size()}")
    inputs = [_tensor(t, "input_list[i]") for t in input_list]
    _same_dtype("reduce_scatter", out, inputs)
    chunks = [t.data for t in inputs]
    if any(c.shape != out.shape for c in chunks):
        raise ValueError("reduce_scatter: every input must have the output's shape")
    stacked = np.stack(chunks)
    return pg.run("reduce_scatter", stacked, _store(out), op=_op(op),
                  full=(stacked.shape, stacked.dtype), async_op=async_op)


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: str = ReduceOp.SUM,
                          group: ProcessGroup | None = None,
                          async_op: bool = False) -> Work | None:
    """``input`` is world chunks along dim 0 (world x the output's elements): group rank i's
    ``output`` becomes the reduction over ranks of their chunk i."""
    out, inp, pg = _tensor(output, "output"), _tensor(input, "input"), _group(group)
    if inp.numel() != out.numel() * pg.size():
        raise ValueError(f"reduce_scatter_tensor: input has {inp.numel()} elements, expected "
                         f"{pg.size()} x {out.numel()}")
    _same_dtype("reduce_scatter_tensor", out, [inp])
    chunks = np.array(inp.data, copy=True).reshape((pg.size(), *out.shape))
    return pg.run("reduce_scatter", chunks, _store(out), op=_op(op),
                  full=(inp.shape, inp.data.dtype), async_op=async_op)


def broadcast(tensor: Tensor, src: int, group: ProcessGroup | None = None,
              async_op: bool = False) -> Work | None:
    """Every rank's ``tensor`` becomes global rank ``src``'s."""
    tensor, pg = _tensor(tensor), _group(group)
    if src not in pg.ranks:
        raise ValueError(f"broadcast: src rank {src} is not in the group {list(pg.ranks)}")
    mine = pg.ranks[pg.rank()] == src
    contribution = np.array(tensor.data, copy=True) if mine else None
    return pg.run("broadcast", contribution, _store(tensor), src=pg.ranks.index(src),
                  full=(tensor.shape, tensor.data.dtype), async_op=async_op)


def barrier(group: ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """Wait until every rank of the group has called barrier."""
    return _group(group).run("barrier", None, lambda result: None,
                             full=((0,), np.dtype(np.float32)), async_op=async_op)


def _peer(pg: ProcessGroup, rank: int, what: str) -> int:
    if rank not in pg.ranks or rank == pg.ranks[pg.rank()]:
        raise ValueError(f"{what} rank {rank} must be another rank of the group "
                         f"{list(pg.ranks)}")
    return rank


def send(tensor: Tensor, dst: int, group: ProcessGroup | None = None, tag: int = 0) -> None:
    """Send ``tensor`` to global rank ``dst`` (the values are copied: the call returns at
    once and the tensor may change afterwards)."""
    pg = _group(group)
    pg.send(_tensor(tensor).data, _peer(pg, dst, "send: dst"), tag, async_op=False)


def isend(tensor: Tensor, dst: int, group: ProcessGroup | None = None, tag: int = 0) -> Work:
    """``send`` returning a Work (already complete: sends are buffered)."""
    pg = _group(group)
    return pg.send(_tensor(tensor).data, _peer(pg, dst, "isend: dst"), tag, async_op=True)


def recv(tensor: Tensor, src: int, group: ProcessGroup | None = None, tag: int = 0) -> int:
    """Receive into ``tensor`` the next message from global rank ``src`` with ``tag``
    (shape and dtype must match); returns ``src``."""
    tensor, pg = _tensor(tensor), _group(group)
    pg.recv(tensor.shape, tensor.data.dtype, _peer(pg, src, "recv: src"), tag, _store(tensor),
            async_op=False)
    return src


def irecv(tensor: Tensor, src: int, group: ProcessGroup | None = None, tag: int = 0) -> Work:
    """``recv`` that returns at once; ``wait()`` blocks until the message is in ``tensor``."""
    tensor, pg = _tensor(tensor), _group(group)
    return pg.recv(tensor.shape, tensor.data.dtype, _peer(pg, src, "irecv: src"), tag,
                   _store(tensor), async_op=True)


# ----- the trace ----------------------------------------------------------------------------
def get_trace() -> list[dict[str, Any]]:
    """This rank's trace so far (see ``tt.distributed.collectives.trace``)."""
    _backend()
    return state.trace.events


def record_event(label: str, **info: Any) -> None:
    """Add a labelled mark to this rank's trace (a step boundary, a phase)."""
    _backend()
    state.trace.mark(label, **info)
