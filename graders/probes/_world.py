"""The probes' own distributed runtime: the ranks, the collectives and the trace that
assignment 7 is graded on.

Why not the framework's: ``tt.distributed``'s collectives (``collectives/api.py``,
``group.py``, ``trace.py``, ``backends/threads.py``) are given code that ships inside the
submission, so a trace they record is the submission's word: a few edited lines there can
write whatever events the graders expect while the homework "communicates" through
memory the rank threads share. So every assignment-7 scenario runs on this runtime:

- for the scenario's duration, the names of the collective API (``all_reduce``,
  ``broadcast``, ``new_group``, ``get_rank`` ...) in every module of the submission's
  ``tinytrain.distributed`` that holds the framework's functions are replaced by this
  module's (the homework calls ``dist.all_reduce`` through ``collectives.api``, or a name
  it imported from there); afterwards each must still be this module's (else the probe
  fails: the submission replaced the grader's collectives) and the originals come back;
- each call goes to the hub, probe code in the worker's calling thread, which computes the
  collective from every rank's contribution in group rank order (a copy of the
  framework's ``collectives.reduce``, so results are bit for bit the framework's) and
  records each rank's trace (the framework's event format, ``collectives/trace.py``)
  from what it received and delivered; the probes' marks go straight to the hub too.

Two ways to run the ranks, same hub:

- ``processes=False``: ranks as threads of the worker that take turns as the framework's
  threads backend does (one runs until it waits; the hub handles each message in the
  sender's turn), so a grading is reproducible;
- ``processes=True`` (the suites' ``-mpi`` cases): each rank a process forked from the
  worker (``os.fork``), whose only link to the other ranks is its own pair of pipes to
  the hub, in the harness's pickle-free protocol (``graders.harness.protocol``; the hub
  never unpickles what a rank sends). Ranks share no memory, so a result can come only
  from the rank's own data and what the hub delivered: a homework that averages through
  memory shared by rank threads gets its own gradients back, or hangs.

Forked processes rather than the framework's MPI backend: mpi4py and an MPI library
would have to join the worker's environment (``sandbox.WORKER_DISTRIBUTIONS``), MPI's
process manager (hydra's ``mpiexec``) starts ranks through its own proxies and sockets
inside a worker that has no network namespace to offer, and the collective underneath
would be MPI's, reached through the submission's ``backends/mpi.py``. A fork and two
pipes per rank need nothing new, work as the unprivileged worker user under its limits
(a rank is one process of the 256 RLIMIT_NPROC allows; it dies with the worker:
PR_SET_PDEATHSIG, and the sandbox kills the worker user's processes after grading), and
keep the collective in probe code. What this does not stop: a rank process is still the
submission's, so code that writes raw frames to the hub's pipe, or that patches this
module in the worker at import time, can lie about its own calls; that takes more than
editing the given files, and what it can send the hub computes honestly.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import itertools
import os
import select
import signal
import sys
import threading
import time
import traceback
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from graders.harness import protocol

REDUCE_OPS = ("sum", "avg", "max", "min", "product")
API_NAMES = ("all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
             "reduce_scatter_tensor", "broadcast", "barrier", "send", "recv", "isend",
             "irecv", "get_rank", "get_world_size", "get_process_group_ranks", "new_group",
             "record_event", "get_trace", "is_initialized", "init_process_group",
             "destroy_process_group", "get_backend", "is_available")


class DistributedError(RuntimeError):
    """A scenario's ranks could not complete (a mismatch, a deadlock, a hang, a rank that
    failed); the message names the ranks and the collectives."""


class RankFailed(DistributedError):
    """A rank raised an exception; the message names the rank."""


class _Aborted(BaseException):
    """Raised in a rank thread whose world was aborted (not the root cause)."""


# ----- what each collective computes (a copy of the framework's collectives.reduce) ----------
def _reduce(contributions: list[np.ndarray], op: str) -> np.ndarray:
    result = np.array(contributions[0], copy=True)
    for other in contributions[1:]:
        if op in ("sum", "avg"):
            np.add(result, other, out=result)
        elif op == "max":
            np.maximum(result, other, out=result)
        elif op == "min":
            np.minimum(result, other, out=result)
        elif op == "product":
            np.multiply(result, other, out=result)
        else:
            raise ValueError(f"unknown reduce op {op!r}")
    if op == "avg":
        if result.dtype.kind in "iub":
            raise ValueError("ReduceOp.AVG needs a floating point tensor")
        result = (result / result.dtype.type(len(contributions))).astype(result.dtype)
    return result


def _compute(kind: str, contributions: list[Any], me: int, op: str | None,
             src: int | None) -> Any:
    if kind == "all_reduce":
        return _reduce(contributions, op)
    if kind == "all_gather":
        return [np.array(c, copy=True) for c in contributions]
    if kind == "reduce_scatter":
        return _reduce([c[me] for c in contributions], op)
    if kind == "broadcast":
        return np.array(contributions[src], copy=True)
    if kind == "barrier":
        return None
    raise ValueError(f"unknown collective {kind!r}")


def fingerprint(array: Any) -> list[float] | None:
    """[sum, sum of squares] in float64 (the framework's trace fingerprint)."""
    if array is None:
        return None
    if isinstance(array, (list, tuple)):
        array = np.concatenate([np.ravel(a) for a in array]) if array else np.zeros(0)
    values = np.asarray(array, dtype=np.float64).ravel()
    return [float(values.sum()), float(np.dot(values, values))]


def _what(shape: Any, dtype: str) -> str:
    return f"{dtype}{[int(s) for s in shape]}"


def _describe(kind: str, seq: int, ranks: tuple[int, ...], op: str | None, what: str,
              src: int | None) -> str:
    parts = [p for p in (op, what) if p]
    if src is not None:
        parts.append(f"from rank {ranks[src]}")
    inner = f" ({', '.join(parts)})" if parts else ""
    return f"{kind} #{seq}{inner} of group {list(ranks)}"


# ----- the hub: the grader's side of every call ---------------------------------------------
class _Op:
    def __init__(self, kind: str, signature: tuple[Any, ...], size: int, first: int,
                 described: str) -> None:
        self.kind, self.signature, self.first, self.described = kind, signature, first, described
        self.contributions: list[Any] = [None] * size
        self.arrived = 0


class _Hub:
    """Computes the collectives and records every rank's trace from the messages of the
    ranks (each rank's messages arrive in the order it sent them)."""

    def __init__(self, world: int) -> None:
        self.world = world
        self.traces: list[list[dict[str, Any]]] = [[] for _ in range(world)]
        self._counters = [itertools.count() for _ in range(world)]
        self.groups: dict[int, tuple[int, ...]] = {0: tuple(range(world))}
        self._ops: dict[tuple[int, int], _Op] = {}
        self._open: dict[tuple[int, str], dict[str, Any]] = {}
        self._delivered: dict[tuple[int, str], Any] = {}
        self._mail: defaultdict[tuple[int, int, int, int], deque] = defaultdict(deque)
        self._wanted: defaultdict[tuple[int, int, int, int], deque] = defaultdict(deque)
        self.status = ["running"] * world  # running, blocked, done, failed
        self.blocked_in: list[str | None] = [None] * world
        self.results: list[Any] = [None] * world
        self.failures: list[tuple[int, dict[str, Any], BaseException | None]] = []
        self.abort: str | None = None
        self.outbox: list[tuple[int, dict[str, Any]]] = []

    def _event(self, rank: int, **fields: Any) -> dict[str, Any]:
        event = {"index": next(self._counters[rank]), **fields}
        self.traces[rank].append(event)
        return event

    def _fail(self, message: str) -> None:
        if self.abort is None:
            self.abort = message

    def _deliver(self, rank: int, key: str, value: Any) -> None:
        self._delivered[(rank, key)] = value
        self.outbox.append((rank, {"t": "result", "key": key, "data": value}))
        if self.status[rank] == "blocked":
            self.status[rank] = "running"

    def handle(self, rank: int, msg: dict[str, Any], exc: BaseException | None = None) -> None:
        kind = msg.get("t")
        if kind == "where":  # a late answer to a hang's stack request
            return
        if kind == "blocked":
            # a result already on its way (delivered before this message was read) wakes it
            if self.status[rank] == "running" and (rank, str(msg.get("key"))) not in self._delivered:
                self.status[rank], self.blocked_in[rank] = "blocked", str(msg.get("what"))
            return
        if self.status[rank] == "blocked":
            self.status[rank] = "running"
        if kind == "mark":
            info = msg.get("info") or {}
            self._event(rank, kind="mark", label=str(msg.get("label")),
                        **{k: v for k, v in info.items() if k not in ("index", "kind", "label")})
        elif kind == "group":
            index, ranks = int(msg["index"]), tuple(int(r) for r in msg["ranks"])
            known = self.groups.get(index + 1)
            if known is None:
                self.groups[index + 1] = ranks
            elif known != ranks:
                self._fail(f"new_group call {index}: ranks {list(ranks)} on rank {rank}, but "
                           f"another rank made it with ranks {list(known)} (every rank must "
                           "call new_group in the same order with the same ranks)")
        elif kind == "start":
            self._start(rank, msg)
        elif kind == "waited":
            key = str(msg["key"])
            event = self._open.pop((rank, key), None)
            if event is not None and (rank, key) in self._delivered:
                event["out"] = fingerprint(self._delivered.pop((rank, key)))
                event["end"] = next(self._counters[rank])
        elif kind == "send":
            self._send(rank, msg)
        elif kind == "recv":
            self._recv(rank, msg)
        elif kind == "done":
            self.status[rank], self.results[rank] = "done", msg.get("result")
        elif kind == "failed":
            self.status[rank] = "failed"
            self.failures.append((rank, msg.get("error") or {}, exc))
        else:
            self._fail(f"rank {rank} sent the runtime an unknown message {kind!r}")

    def _group(self, rank: int, gid: int) -> tuple[int, ...]:
        ranks = self.groups.get(gid)
        if ranks is None or rank not in ranks:
            raise DistributedError(f"rank {rank} used a process group it is not in")
        return ranks

    def _start(self, rank: int, msg: dict[str, Any]) -> None:
        kind, gid, seq = str(msg["kind"]), int(msg["gid"]), int(msg["seq"])
        ranks = self._group(rank, gid)
        op, src, data = msg.get("op"), msg.get("src"), msg.get("data")
        shape, dtype = [int(s) for s in msg["shape"]], str(msg["dtype"])
        numel = int(np.prod(shape, dtype=np.int64))
        key = f"c{gid}.{seq}"
        event = self._event(rank, kind=kind, group=list(ranks), seq=seq, op=op, dtype=dtype,
                            shape=shape, numel=numel, bytes=numel * int(msg["itemsize"]),
                            **{"async": bool(msg.get("async"))},
                            peer=None if src is None else ranks[src], tag=None,
                            **{"in": fingerprint(data), "out": None, "end": None})
        self._open[(rank, key)] = event
        what = _what(shape, dtype)
        described = _describe(kind, seq, ranks, op, what, src)
        pending = self._ops.get((gid, seq))
        if pending is None:
            pending = self._ops[(gid, seq)] = _Op(kind, (kind, op, src, what), len(ranks), rank,
                                                  described)
        elif pending.signature != (kind, op, src, what):
            self._fail(f"collective mismatch in group {list(ranks)} (call #{seq}): rank "
                       f"{pending.first} called {pending.described}, rank {rank} called "
                       f"{described}")
            return
        pending.contributions[ranks.index(rank)] = data
        pending.arrived += 1
        if pending.arrived == len(ranks):
            del self._ops[(gid, seq)]
            for me, member in enumerate(ranks):
                self._deliver(member, key, _compute(kind, pending.contributions, me, op, src))

    def _send(self, rank: int, msg: dict[str, Any]) -> None:
        gid, dst, tag, seq = int(msg["gid"]), int(msg["dst"]), int(msg["tag"]), int(msg["seq"])
        ranks = self._group(rank, gid)
        data = np.asarray(msg["data"])
        event = self._event(rank, kind="send", group=list(ranks), seq=seq, op=None,
                            dtype=data.dtype.name, shape=list(data.shape), numel=int(data.size),
                            bytes=int(data.nbytes), **{"async": bool(msg.get("async"))},
                            peer=dst, tag=tag, **{"in": fingerprint(data), "out": None})
        event["end"] = next(self._counters[rank])
        self._mail[(gid, rank, dst, tag)].append(data)
        self._match((gid, rank, dst, tag))

    def _recv(self, rank: int, msg: dict[str, Any]) -> None:
        gid, src, tag, seq = int(msg["gid"]), int(msg["src"]), int(msg["tag"]), int(msg["seq"])
        ranks = self._group(rank, gid)
        shape, dtype = [int(s) for s in msg["shape"]], str(msg["dtype"])
        numel = int(np.prod(shape, dtype=np.int64))
        key = f"r{gid}.{src}.{tag}.{seq}"
        self._open[(rank, key)] = self._event(
            rank, kind="recv", group=list(ranks), seq=seq, op=None, dtype=dtype, shape=shape,
            numel=numel, bytes=numel * int(msg["itemsize"]), **{"async": bool(msg.get("async"))},
            peer=src, tag=tag, **{"in": None, "out": None, "end": None})
        self._wanted[(gid, src, rank, tag)].append(key)
        self._match((gid, src, rank, tag))

    def _match(self, box: tuple[int, int, int, int]) -> None:
        mail, wanted = self._mail[box], self._wanted[box]
        while mail and wanted:
            self._deliver(box[2], wanted.popleft(), mail.popleft())

    def stuck(self) -> bool:
        """No rank can go on: every unfinished rank waits for a result."""
        return (not any(s == "running" for s in self.status)
                and any(s == "blocked" for s in self.status))

    def deadlock_message(self) -> str:
        waits = "; ".join(f"rank {r} in {self.blocked_in[r]}" for r in range(self.world)
                          if self.status[r] == "blocked")
        roots = [f for f in self.failures if f[1].get("type") != "_Aborted"]
        if roots:
            rank, error, _ = roots[0]
            return (f"rank {rank} failed ({error.get('type')}: {error.get('message')}) while "
                    f"other ranks waited for it: {waits}")
        finished = [r for r in range(self.world) if self.status[r] == "done"]
        done = f" (ranks {finished} had returned)" if finished else ""
        return f"deadlock: every unfinished rank is waiting{done}: {waits}"

    def hang_message(self, rank: int, timeout: float, where: str) -> str:
        message = (f"rank {rank} ran for {timeout:g} s without reaching a collective (an "
                   f"infinite loop, or very slow code?){where}")
        waits = [f"rank {r} was waiting in {self.blocked_in[r]}" for r in range(self.world)
                 if self.status[r] == "blocked"]
        return message + ("; " + "; ".join(waits) if waits else "")

    def raise_failure(self) -> None:
        roots = [f for f in self.failures if f[1].get("type") != "_Aborted"]
        if roots:
            rank, error, exc = roots[0]
            if error.get("type") == "NotImplementedError":
                if isinstance(exc, NotImplementedError):
                    raise exc
                raise NotImplementedError(error.get("message", ""))
            if error.get("distributed"):
                raise DistributedError(f"rank {rank}: {error.get('message')}") from exc
            raise RankFailed(f"rank {rank} raised {error.get('type')}: {error.get('message')}"
                             f"{error.get('where', '')}") from exc
        if self.abort is not None:
            raise DistributedError(self.abort)
        unfinished = [r for r, s in enumerate(self.status) if s not in ("done", "failed")]
        if unfinished:
            raise DistributedError(f"ranks {unfinished} did not finish")


# ----- a rank's side -------------------------------------------------------------------------
_LOCAL = threading.local()


class _Group:
    """A process group of this runtime (the ranks are global rank numbers)."""

    def __init__(self, ranks: tuple[int, ...], gid: int) -> None:
        self.ranks, self.gid = tuple(ranks), gid

    def rank(self) -> int:
        return self.ranks.index(_rank().rank)

    def size(self) -> int:
        return len(self.ranks)

    def __repr__(self) -> str:
        return f"ProcessGroup(ranks={list(self.ranks)})"


class _Rank:
    """One rank's link to the hub: ``put`` a message, ``take`` the hub's replies."""

    def __init__(self, rank: int, world: int, put: Callable[[dict[str, Any]], None],
                 take: Callable[[float | None], dict[str, Any] | None], backend: str,
                 stash: dict[str, Any] | None = None,
                 block: Callable[[str, str], None] | None = None) -> None:
        self.rank, self.world, self.backend = rank, world, backend
        self._put, self._take, self._block = put, take, block
        self.world_group = _Group(tuple(range(world)), 0)
        self.groups_made = 0
        self.seq: defaultdict[int, int] = defaultdict(int)
        self.p2p: defaultdict[tuple[str, int, int, int], int] = defaultdict(int)
        self._stash: dict[str, Any] = {} if stash is None else stash

    def put(self, msg: dict[str, Any]) -> None:
        self._put(msg)

    def _read(self, timeout: float | None) -> bool:
        msg = self._take(timeout)
        if msg is None:
            return False
        if msg.get("t") == "abort":
            raise _Aborted(msg.get("message", "aborted"))
        self._stash[str(msg["key"])] = msg.get("data")
        return True

    def ready(self, key: str) -> bool:
        while key not in self._stash and self._read(0):
            pass
        return key in self._stash

    def wait(self, key: str, what: str) -> Any:
        if self._block is not None:  # threads: the scheduler returns once the result is in
            self._block(key, what)
        while key not in self._stash:
            if not self.ready(key):
                self._put({"t": "blocked", "key": key, "what": what})
                self._read(None)
        return self._stash.pop(key)


def _rank() -> _Rank:
    rank = getattr(_LOCAL, "rank", None)
    if rank is None:
        raise RuntimeError("Default process group has not been initialized, please make sure "
                           "to call init_process_group.")
    return rank


def mark(label: str, **info: Any) -> None:
    """The probes' marks (a phase, a gradient made), straight into the grader's trace."""
    _rank().put({"t": "mark", "label": label, "info": info})


class Work:
    """The handle of an async call: ``wait()`` puts the result in the output tensor(s)."""

    def __init__(self, key: str | None, finish: Callable[[Any], None], what: str) -> None:
        self._key, self._finish, self._what = key, finish, what
        self._done = key is None

    def wait(self, timeout: float | None = None) -> bool:
        if not self._done:
            rank = _rank()
            result = rank.wait(self._key, self._what)
            self._finish(result)
            self._done = True
            rank.put({"t": "waited", "key": self._key})
        return True

    def is_completed(self) -> bool:
        return self._done or _rank().ready(self._key)


def _api(tt: Any, non_member: Any) -> dict[str, Callable[..., Any]]:
    """The collective API on the submission's Tensor type (torch.distributed's signatures,
    the framework's argument checks)."""
    tensor_type = tt.Tensor

    def tensor_of(x: Any, name: str = "tensor") -> Any:
        if not isinstance(x, tensor_type):
            raise TypeError(f"{name} must be a tinytrain Tensor, got {type(x).__name__}")
        return x

    def group_of(group: Any) -> _Group:
        rank = _rank()
        if group is None:
            return rank.world_group
        if group is non_member:
            raise DistributedError("this rank is not a member of the group")
        if not isinstance(group, _Group):
            raise TypeError(f"group must be a ProcessGroup, got {type(group).__name__}")
        return group

    def op_of(op: Any) -> str:
        if op not in REDUCE_OPS:
            raise ValueError(f"unknown reduce op {op!r}; use tt.distributed.ReduceOp")
        return op

    def same_dtype(what: str, out: Any, inputs: list[Any]) -> None:
        # torch.distributed (gloo, NCCL) rejects an output whose dtype is not the input's
        for inp in inputs:
            if inp.data.dtype != out.data.dtype:
                raise TypeError(f"{what}: the output is {out.data.dtype.name} but an input is "
                                f"{inp.data.dtype.name} (with mixed dtypes); torch.distributed "
                                "requires the output and input tensors in one dtype")

    def store(tensor: Any) -> Callable[[Any], None]:
        def finish(result: Any) -> None:
            tensor.data[...] = np.asarray(result).reshape(tensor.shape)
            bump = getattr(tensor, "_bump_version", None)
            if bump is not None:
                bump()

        return finish

    def run(kind: str, pg: _Group, contribution: np.ndarray | None, finish: Callable[[Any], None],
            full: tuple[tuple[int, ...], np.dtype] | None = None, op: str | None = None,
            src: int | None = None, async_op: bool = False) -> Work | None:
        rank = _rank()
        seq = rank.seq[pg.gid]
        rank.seq[pg.gid] += 1
        shape, dtype = full if full is not None else (contribution.shape, contribution.dtype)
        dtype = np.dtype(dtype)
        rank.put({"t": "start", "kind": kind, "gid": pg.gid, "seq": seq, "op": op, "src": src,
                  "async": bool(async_op), "shape": [int(s) for s in shape],
                  "dtype": dtype.name, "itemsize": dtype.itemsize, "data": contribution})
        work = Work(f"c{pg.gid}.{seq}", finish,
                    _describe(kind, seq, pg.ranks, op, _what(shape, dtype.name), src))
        if async_op:
            return work
        work.wait()
        return None

    def all_reduce(tensor: Any, op: str = "sum", group: Any = None, async_op: bool = False):
        tensor, pg = tensor_of(tensor), group_of(group)
        return run("all_reduce", pg, np.array(tensor.data, copy=True), store(tensor),
                   op=op_of(op), async_op=async_op)

    def all_gather(tensor_list: list[Any], tensor: Any, group: Any = None,
                   async_op: bool = False):
        tensor, pg = tensor_of(tensor), group_of(group)
        if len(tensor_list) != pg.size():
            raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors for a "
                             f"group of {pg.size()}")
        outputs = [tensor_of(t, "tensor_list[i]") for t in tensor_list]
        for out in outputs:
            same_dtype("all_gather", out, [tensor])

        def finish(results: list[np.ndarray]) -> None:
            for out, value in zip(outputs, results, strict=True):
                store(out)(value)

        return run("all_gather", pg, np.array(tensor.data, copy=True), finish,
                   full=((pg.size(), *tensor.shape), tensor.data.dtype), async_op=async_op)

    def all_gather_into_tensor(output_tensor: Any, input_tensor: Any, group: Any = None,
                               async_op: bool = False):
        out, inp, pg = tensor_of(output_tensor), tensor_of(input_tensor), group_of(group)
        if out.numel() != inp.numel() * pg.size():
            raise ValueError(f"all_gather_into_tensor: output has {out.numel()} elements, "
                             f"expected {pg.size()} x {inp.numel()}")
        same_dtype("all_gather_into_tensor", out, [inp])

        def finish(results: list[np.ndarray]) -> None:
            store(out)(np.concatenate([np.ravel(r) for r in results]))

        return run("all_gather", pg, np.array(inp.data, copy=True), finish,
                   full=(out.shape, out.data.dtype), async_op=async_op)

    def reduce_scatter(output: Any, input_list: list[Any], op: str = "sum", group: Any = None,
                       async_op: bool = False):
        out, pg = tensor_of(output, "output"), group_of(group)
        if len(input_list) != pg.size():
            raise ValueError(f"reduce_scatter: input_list has {len(input_list)} tensors for a "
                             f"group of {pg.size()}")
        same_dtype("reduce_scatter", out, [tensor_of(t, "input_list[i]") for t in input_list])
        chunks = [t.data for t in input_list]
        if any(c.shape != out.shape for c in chunks):
            raise ValueError("reduce_scatter: every input must have the output's shape")
        stacked = np.stack(chunks)
        return run("reduce_scatter", pg, stacked, store(out), full=(stacked.shape, stacked.dtype),
                   op=op_of(op), async_op=async_op)

    def reduce_scatter_tensor(output: Any, input: Any, op: str = "sum", group: Any = None,
                              async_op: bool = False):
        out, inp, pg = tensor_of(output, "output"), tensor_of(input, "input"), group_of(group)
        if inp.numel() != out.numel() * pg.size():
            raise ValueError(f"reduce_scatter_tensor: input has {inp.numel()} elements, "
                             f"expected {pg.size()} x {out.numel()}")
        same_dtype("reduce_scatter_tensor", out, [inp])
        chunks = np.array(inp.data, copy=True).reshape((pg.size(), *out.shape))
        return run("reduce_scatter", pg, chunks, store(out), full=(inp.shape, inp.data.dtype),
                   op=op_of(op), async_op=async_op)

    def broadcast(tensor: Any, src: int, group: Any = None, async_op: bool = False):
        tensor, pg = tensor_of(tensor), group_of(group)
        if src not in pg.ranks:
            raise ValueError(f"broadcast: src rank {src} is not in the group {list(pg.ranks)}")
        mine = pg.ranks[pg.rank()] == src
        return run("broadcast", pg, np.array(tensor.data, copy=True) if mine else None,
                   store(tensor), full=(tensor.shape, tensor.data.dtype),
                   src=pg.ranks.index(src), async_op=async_op)

    def barrier(group: Any = None, async_op: bool = False):
        return run("barrier", group_of(group), None, lambda result: None,
                   full=((0,), np.dtype(np.float32)), async_op=async_op)

    def peer(pg: _Group, other: int, what: str) -> int:
        if other not in pg.ranks or other == pg.ranks[pg.rank()]:
            raise ValueError(f"{what} rank {other} must be another rank of the group "
                             f"{list(pg.ranks)}")
        return other

    def _send(tensor: Any, dst: int, group: Any, tag: int, async_op: bool, what: str):
        pg, rank = group_of(group), _rank()
        dst = peer(pg, dst, what)
        key = ("send", pg.gid, dst, tag)
        seq = rank.p2p[key]
        rank.p2p[key] += 1
        rank.put({"t": "send", "gid": pg.gid, "dst": dst, "tag": int(tag), "seq": seq,
                  "async": async_op, "data": np.array(tensor_of(tensor).data, copy=True)})
        return Work(None, lambda result: None, "send") if async_op else None

    def send(tensor: Any, dst: int, group: Any = None, tag: int = 0) -> None:
        _send(tensor, dst, group, tag, False, "send: dst")

    def isend(tensor: Any, dst: int, group: Any = None, tag: int = 0) -> Work:
        return _send(tensor, dst, group, tag, True, "isend: dst")

    def _recv(tensor: Any, src: int, group: Any, tag: int, async_op: bool, what: str):
        tensor, pg, rank = tensor_of(tensor), group_of(group), _rank()
        src = peer(pg, src, what)
        key = ("recv", pg.gid, src, tag)
        seq = rank.p2p[key]
        rank.p2p[key] += 1
        dtype = tensor.data.dtype
        rank.put({"t": "recv", "gid": pg.gid, "src": src, "tag": int(tag), "seq": seq,
                  "async": async_op, "shape": list(tensor.shape), "dtype": dtype.name,
                  "itemsize": dtype.itemsize})
        shape = tuple(tensor.shape)

        def check(array: np.ndarray) -> None:
            if array.shape != shape or array.dtype != dtype:
                raise RuntimeError(
                    f"recv from rank {src} (tag {tag}): the message is "
                    f"{_what(array.shape, array.dtype.name)} but the tensor to receive it is "
                    f"{_what(shape, dtype.name)}")
            store(tensor)(array)

        work = Work(f"r{pg.gid}.{src}.{tag}.{seq}", check,
                    f"recv #{seq} from rank {src} (tag {tag}) of group {list(pg.ranks)}")
        if async_op:
            return work
        work.wait()
        return src

    def recv(tensor: Any, src: int, group: Any = None, tag: int = 0) -> int:
        return _recv(tensor, src, group, tag, False, "recv: src")

    def irecv(tensor: Any, src: int, group: Any = None, tag: int = 0) -> Work:
        return _recv(tensor, src, group, tag, True, "irecv: src")

    def get_rank(group: Any = None) -> int:
        if group is non_member:
            return -1
        return group_of(group).rank()

    def get_world_size(group: Any = None) -> int:
        if group is non_member:
            return -1
        return group_of(group).size()

    def get_process_group_ranks(group: Any) -> list[int]:
        return list(group_of(group).ranks)

    def new_group(ranks: list[int] | None = None) -> Any:
        rank = _rank()
        members = tuple(range(rank.world)) if ranks is None else tuple(int(r) for r in ranks)
        if len(set(members)) != len(members) or not members or any(
                not 0 <= r < rank.world for r in members):
            raise ValueError(f"new_group: invalid ranks {list(members)} for world size "
                             f"{rank.world}")
        index = rank.groups_made
        rank.groups_made += 1
        rank.put({"t": "group", "index": index, "ranks": list(members)})
        if rank.rank not in members:
            return non_member
        return _Group(members, index + 1)

    def record_event(label: str, **info: Any) -> None:
        mark(label, **info)

    def get_trace() -> list[dict[str, Any]]:
        raise RuntimeError("while grading, the trace is the grader's (tt.distributed.get_trace "
                           "is not available)")

    def is_initialized() -> bool:
        return getattr(_LOCAL, "rank", None) is not None

    def init_process_group(backend: str = "threads", *, rank: int | None = None,
                           world_size: int | None = None, timeout: float | None = None,
                           trace: bool = True) -> None:
        me = _rank()
        for name, value, actual in (("rank", rank, me.rank), ("world_size", world_size, me.world)):
            if value is not None and value != actual:
                raise ValueError(f"init_process_group({name}={value}) but this rank's {name} "
                                 f"is {actual}")

    def destroy_process_group(group: Any = None) -> None:
        return None

    def get_backend(group: Any = None) -> str:
        return _rank().backend

    def is_available() -> bool:
        return True

    local = locals()
    return {name: local[name] for name in API_NAMES}


# ----- putting the API in place --------------------------------------------------------------
@contextlib.contextmanager
def installed(tt: Any) -> Iterator[None]:
    """While active, the submission's tinytrain.distributed calls this runtime: every
    module attribute that is one of the framework's API functions becomes ours. On the way
    out, each must still be ours (else DistributedError), and the originals are put back."""
    api = sys.modules.get(f"{tt.__name__}.distributed.collectives.api")
    if api is None:
        raise RuntimeError("tinytrain.distributed.collectives.api is missing")
    non_member = getattr(getattr(api, "GroupMember", None), "NON_GROUP_MEMBER", None)
    ours = _api(tt, object() if non_member is None else non_member)
    originals = {id(getattr(api, name, None)): name for name in API_NAMES
                 if callable(getattr(api, name, None))}
    prefix = f"{tt.__name__}.distributed"
    patched: list[tuple[Any, str, Any, Any]] = []
    for module_name, module in list(sys.modules.items()):
        if module is None or not (module_name == prefix or module_name.startswith(prefix + ".")):
            continue
        namespace = getattr(module, "__dict__", {})
        for attr, value in list(namespace.items()):
            name = attr if module is api and attr in ours else originals.get(id(value))
            if name is not None:
                patched.append((module, attr, value, ours[name]))
                setattr(module, attr, ours[name])
    try:
        yield
        replaced = [f"{m.__name__}.{a}" for m, a, _, mine in patched
                    if m.__dict__.get(a) is not mine]
        if replaced:
            raise DistributedError(
                f"the submission replaced the grader's collectives during the run "
                f"({', '.join(sorted(replaced)[:4])}): assignment 7 is graded with the "
                "grader's own tt.distributed calls")
    finally:
        for module, attr, value, _ in reversed(patched):
            setattr(module, attr, value)


def _error(exc: BaseException) -> dict[str, Any]:
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if os.sep + "graders" + os.sep not in f.filename]
    where = ""
    if frames:
        lines = [f"{f.filename}:{f.lineno} in {f.name}" for f in frames[-3:]]
        where = "\n  at " + "\n  at ".join(reversed(lines))
    return {"type": type(exc).__name__, "message": str(exc)[:2000], "where": where,
            "distributed": isinstance(exc, DistributedError)}


# ----- running the ranks -----------------------------------------------------------------------
def run(tt: Any, world: int, fn: Callable[[int], Any], *, processes: bool = False,
        timeout: float = 3.0) -> tuple[list[Any], list[list[dict[str, Any]]]]:
    """``fn(rank)`` on ``world`` ranks (threads, or forked processes): their results and the
    grader's trace of each rank. A rank that fails, a deadlock, or a rank that runs
    ``timeout`` seconds without reaching a collective raises, naming the rank."""
    hub = _Hub(world)
    with installed(tt):
        if processes:
            _run_processes(hub, world, fn, timeout)
        else:
            _run_threads(hub, world, fn, timeout)
    hub.raise_failure()
    return hub.results, hub.traces


def _serve(hub: _Hub, get: Callable[[float], tuple[int, dict[str, Any], Any] | None],
           deliver: Callable[[int, dict[str, Any]], None], timeout: float,
           where: Callable[[int], str]) -> list[int]:
    """The hub's loop until every rank finished or the world is aborted; the ranks that
    must be stopped (hung or blocked) when it was."""
    progress = time.monotonic()
    while not all(s in ("done", "failed") for s in hub.status):
        item = get(max(0.0, min(0.5, timeout - (time.monotonic() - progress))))
        if item is not None:
            progress = time.monotonic()
            rank, msg, exc = item
            try:
                hub.handle(rank, msg, exc)
            except DistributedError as error:
                hub._fail(str(error))
            for target, reply in hub.outbox:
                deliver(target, reply)
            hub.outbox.clear()
        if hub.abort is None and hub.stuck():
            hub._fail(hub.deadlock_message())
        if hub.abort is None and time.monotonic() - progress >= timeout:
            running = [r for r, s in enumerate(hub.status) if s == "running"]
            if running:
                hub._fail(hub.hang_message(running[0], timeout, where(running[0])))
        if hub.abort is not None:
            return [r for r, s in enumerate(hub.status) if s in ("running", "blocked")]
    return []


def _rank_main(rank: _Rank, fn: Callable[[int], Any]) -> dict[str, Any]:
    _LOCAL.rank = rank
    try:
        return {"t": "done", "result": fn(rank.rank)}
    except _Aborted as exc:
        return {"t": "failed", "error": {"type": "_Aborted", "message": str(exc)}, "exc": exc}
    except BaseException as exc:  # noqa: BLE001 - reported by the hub
        return {"t": "failed", "error": _error(exc), "exc": exc}
    finally:
        _LOCAL.rank = None


def _stack(frame: Any) -> str:
    """``; it was at (innermost first): ...``: the frames of ``frame``'s stack outside the
    graders and threading."""
    if frame is None:
        return ""
    stack = [f for f in traceback.extract_stack(frame) if "threading.py" not in f.filename
             and os.sep + "graders" + os.sep not in f.filename]
    if not stack:
        return ""
    lines = [f"{f.filename}:{f.lineno} in {f.name}" for f in stack[-4:]]
    return "; it was at (innermost first): " + " <- ".join(reversed(lines))


class _Turns:
    """Ranks as threads that take turns, as the framework's threads backend does: one rank
    runs until it waits for a result not there yet, then the next rank (round robin) that
    can go on runs. The hub handles each message in the sending rank's turn, so the
    interleaving, the trace and every result are the same on every run (a submission's
    state shared by mistake between the ranks fails the same way every time)."""

    def __init__(self, hub: _Hub, world: int) -> None:
        self.hub, self.world = hub, world
        self.cv = threading.Condition()
        self.current: int | None = 0
        self.state = ["new"] * world  # new, running, waiting, done
        self.waiting: list[str | None] = [None] * world
        self.stash: list[dict[str, Any]] = [{} for _ in range(world)]
        self.progress = time.monotonic()

    def _check(self, what: str | None = None) -> None:
        if self.hub.abort is not None:
            raise _Aborted(self.hub.abort + (f" while waiting in {what}" if what else ""))

    def put(self, r: int, msg: dict[str, Any], exc: BaseException | None = None) -> None:
        with self.cv:
            if msg.get("t") not in ("done", "failed"):
                self._check()
            self.progress = time.monotonic()
            try:
                self.hub.handle(r, msg, exc)
            except DistributedError as error:
                self.hub._fail(str(error))
            for target, reply in self.hub.outbox:
                self.stash[target][str(reply["key"])] = reply.get("data")
            self.hub.outbox.clear()
            if self.hub.abort is not None and msg.get("t") not in ("done", "failed"):
                self.cv.notify_all()
                raise DistributedError(self.hub.abort)

    def block(self, r: int, key: str, what: str) -> None:
        with self.cv:
            self._check()
            if key in self.stash[r]:
                return
            self.state[r], self.waiting[r] = "waiting", key
            self.hub.status[r], self.hub.blocked_in[r] = "blocked", what
            self._pass(r)
            while self.current != r and self.hub.abort is None:
                self.cv.wait()
            self._check(what)
            self.state[r], self.waiting[r] = "running", None
            self.hub.status[r] = "running"

    def _runnable(self, r: int) -> bool:
        return self.state[r] == "new" or (self.state[r] == "waiting"
                                          and self.waiting[r] in self.stash[r])

    def _pass(self, r: int) -> None:
        """Give the turn to the next rank after ``r`` that can go on (lock held)."""
        self.progress = time.monotonic()
        for step in range(1, self.world + 1):
            other = (r + step) % self.world
            if self._runnable(other):
                self.current = other
                self.cv.notify_all()
                return
        self.current = None
        if any(s == "waiting" for s in self.state):
            self.hub._fail(self.hub.deadlock_message())
        self.cv.notify_all()

    def start(self, r: int) -> None:
        with self.cv:
            while self.current != r and self.hub.abort is None:
                self.cv.wait()
            self._check()
            self.state[r] = "running"

    def finish(self, r: int, outcome: dict[str, Any]) -> None:
        exc = outcome.pop("exc", None)
        self.put(r, outcome, exc)
        with self.cv:
            self.state[r] = "done"
            if self.current == r:
                self._pass(r)
            self.cv.notify_all()


def _run_threads(hub: _Hub, world: int, fn: Callable[[int], Any], timeout: float) -> None:
    turns = _Turns(hub, world)

    def main(r: int) -> None:
        rank = _Rank(r, world, lambda msg: turns.put(r, msg), lambda wait: None, "threads",
                     stash=turns.stash[r], block=lambda key, what: turns.block(r, key, what))
        try:
            turns.start(r)
        except _Aborted as exc:
            outcome = {"t": "failed", "error": {"type": "_Aborted", "message": str(exc)}}
        else:
            outcome = _rank_main(rank, fn)
        turns.finish(r, outcome)

    threads = [threading.Thread(target=main, args=(r,), name=f"grader-rank-{r}", daemon=True)
               for r in range(world)]
    for thread in threads:
        thread.start()
    with turns.cv:
        aborted_at = None
        while not all(s == "done" for s in turns.state):
            if hub.abort is not None:  # the ranks unwind; a stuck one is left behind
                aborted_at = aborted_at or time.monotonic()
                if time.monotonic() - aborted_at > 1.0:
                    break
                turns.cv.wait(0.05)
                continue
            idle = time.monotonic() - turns.progress
            running = turns.current
            if running is not None and idle >= timeout:
                where = _stack(sys._current_frames().get(threads[running].ident or -1))
                hub._fail(hub.hang_message(running, timeout, where))
                turns.cv.notify_all()
                ident = threads[running].ident
                if ident is not None:  # an exception at the rank's next bytecode
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident),
                                                               ctypes.py_object(_Aborted))
            else:
                turns.cv.wait(min(max(timeout - idle, 0.01), 0.5))
    for thread in threads:
        thread.join(0.5)


_PR_SET_PDEATHSIG = 1
_F_SETPIPE_SZ = 1031


def _run_processes(hub: _Hub, world: int, fn: Callable[[int], Any], timeout: float) -> None:
    children: list[tuple[int, int, int]] = []  # pid, read end (from the rank), write end
    try:
        for r in range(world):
            up_r, up_w = os.pipe()
            down_r, down_w = os.pipe()
            for fd in (up_w, down_w):  # room for a whole message either way (best effort)
                with contextlib.suppress(OSError):
                    fcntl.fcntl(fd, _F_SETPIPE_SZ, 1 << 20)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:  # the rank: never returns into the worker
                code = 1
                try:
                    _close_fds_but(down_r, up_w)  # inherited pipes are no back channel
                    with contextlib.suppress(Exception):
                        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
                    code = _child(r, world, fn, down_r, up_w)
                finally:
                    with contextlib.suppress(Exception):
                        sys.stdout.flush()
                        sys.stderr.flush()
                    os._exit(code)
            os.close(up_w)
            os.close(down_r)
            children.append((pid, up_r, down_w))
        readers = {up_r: r for r, (_, up_r, _) in enumerate(children)}
        closed: set[int] = set()

        def get(wait: float) -> tuple[int, dict[str, Any], Any] | None:
            open_fds = [fd for fd in readers if fd not in closed]
            if not open_fds:
                time.sleep(wait)
                return None
            ready, _, _ = select.select(open_fds, [], [], wait)
            if not ready:
                return None
            fd = ready[0]
            rank = readers[fd]
            try:
                return rank, protocol.read_message(fd), None
            except (EOFError, protocol.ProtocolError, OSError, ValueError) as exc:
                closed.add(fd)
                if hub.status[rank] in ("done", "failed"):
                    return None
                return rank, {"t": "failed", "error": {
                    "type": "RankExited", "message": f"rank {rank}'s process ended without "
                    f"returning its result (os._exit, a crash, or a broken message: {exc})"}}, None

        def deliver(r: int, msg: dict[str, Any]) -> None:
            with contextlib.suppress(OSError):
                protocol.write_message(children[r][2], msg)

        def where(r: int) -> str:
            """Where hung rank ``r`` is: its SIGUSR2 handler sends its stack."""
            with contextlib.suppress(OSError):
                os.kill(children[r][0], signal.SIGUSR2)
            deadline = time.monotonic() + 0.5
            fd = children[r][1]
            while fd not in closed and select.select([fd], [], [], max(
                    0.0, deadline - time.monotonic()))[0]:
                try:
                    msg = protocol.read_message(fd)
                except (EOFError, protocol.ProtocolError, OSError, ValueError):
                    return ""
                if msg.get("t") == "where":
                    return str(msg.get("text", ""))[:2000]
            return ""

        stop = _serve(hub, get, deliver, timeout, where)
        for r in stop:
            with contextlib.suppress(OSError):
                os.kill(children[r][0], signal.SIGKILL)
    finally:
        for pid, up_r, down_w in children:
            for fd in (up_r, down_w):
                with contextlib.suppress(OSError):
                    os.close(fd)
            _reap(pid)


def _close_fds_but(*keep: int) -> None:
    """Close every file descriptor of this (forked) rank but stdin, stdout, stderr and
    ``keep``: the other ranks' pipes, the worker's to the grader, and whatever the
    submission opened before the fork."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        fds = list(range(3, 1024))
    for fd in fds:
        if fd > 2 and fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


def _reap(pid: int) -> None:
    deadline = time.monotonic() + 1.0
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done:
            return
        if time.monotonic() > deadline:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
            return
        time.sleep(0.005)


def _child(r: int, world: int, fn: Callable[[int], Any], down_r: int, up_w: int) -> int:
    def take(wait: float | None) -> dict[str, Any] | None:
        if wait == 0 and not select.select([down_r], [], [], 0)[0]:
            return None
        return protocol.read_message(down_r)

    rank = _Rank(r, world, lambda msg: protocol.write_message(up_w, msg), take, "mpi")

    def report_where(signum: int, frame: Any) -> None:
        protocol.write_message(up_w, {"t": "where", "text": _stack(frame)})

    signal.signal(signal.SIGUSR2, report_where)
    outcome = _rank_main(rank, fn)
    outcome.pop("exc", None)
    try:
        protocol.write_message(up_w, outcome)
    except Exception as exc:  # noqa: BLE001 - a result the protocol cannot carry
        protocol.write_message(up_w, {"t": "failed", "error": {
            "type": type(exc).__name__, "message": f"the rank's result could not be sent: {exc}"}})
    return 0
