"""The threads backend: every rank is a thread of this process, as in the course's
framework, and one rank runs at a time.

A rank keeps running until it must wait (a collective whose other contributions have not
arrived, a recv with no message); then the next rank in round-robin order that can go on
runs. Python runs one thread at a time anyway (the GIL); taking turns only at collectives
makes everything reproducible: the interleaving, the trace, and every result (reductions
are computed in group rank order, see ``collectives.reduce``).

Failures never hang: when every unfinished rank waits, that is a deadlock (or a rank
failed), and each waiting rank raises an error naming what it waited in. A rank that runs
``timeout`` seconds without reaching a collective is stopped and reported with the line
it was running. ``ThreadWorld.run`` raises the root cause: the first exception a rank
raised (``NotImplementedError`` as it is), else the deadlock or hang.
"""

from __future__ import annotations

import ctypes
import sys
import threading
import time
import traceback
from collections import defaultdict, deque
from collections.abc import Callable
from typing import Any

import numpy as np

from ..collectives import reduce as reductions
from ..collectives.errors import DistributedError, RankAborted
from ..collectives.group import ProcessGroup
from ..collectives.state import state
from ..collectives.trace import Trace

MAX_WORLD_SIZE = 64


class RankFailed(DistributedError):
    """A rank raised an exception (kept as ``__cause__``); the message names the rank."""


class _Op:
    """One collective call of a group, filled in by its ranks."""

    def __init__(self, kind: str, meta: dict[str, Any], size: int, first: int) -> None:
        self.kind = kind
        self.meta = meta
        self.first = first  # the rank that called first (for mismatch messages)
        self.contributions: list[Any] = [None] * size
        self.arrived = 0
        self.size = size
        self.results: list[Any] | None = None
        self.taken = 0

    @property
    def complete(self) -> bool:
        return self.arrived == self.size

    def result(self, me: int) -> Any:
        if self.results is None:
            self.results = [None] * self.size
        if self.results[me] is None:
            self.results[me] = reductions.compute(self.kind, self.contributions, me, self.meta)
        return self.results[me]


class ThreadWorld:
    """``world_size`` ranks as threads. ``run(fn, *args)`` calls ``fn(rank, *args)`` in
    each, with the default process group of the threads backend initialised, and returns
    their results in rank order. ``trace[rank]`` holds each rank's events afterwards."""

    def __init__(self, world_size: int, timeout: float = 30.0, trace: bool = True) -> None:
        if not 1 <= world_size <= MAX_WORLD_SIZE:
            raise ValueError(f"world_size must be between 1 and {MAX_WORLD_SIZE}, "
                             f"got {world_size}")
        self.world_size = world_size
        self.timeout = float(timeout)
        self.traces = [Trace(trace) for _ in range(world_size)]
        self._cond = threading.Condition()
        self._status = ["new"] * world_size  # new, running, waiting, done, failed
        self._waits: list[tuple[str, Callable[[], bool]] | None] = [None] * world_size
        self._running: int | None = None
        self._ops: dict[tuple[int, int], _Op] = {}
        self._mail: defaultdict[tuple[int, int, int, int], deque] = defaultdict(deque)
        self._groups: list[tuple[int, ...]] = [tuple(range(world_size))]
        self._abort: str | None = None
        self._failures: list[tuple[int, BaseException]] = []
        self._progress_at = time.monotonic()
        self._threads: list[threading.Thread] = []
        self._used = False

    @property
    def trace(self) -> list[list[dict[str, Any]]]:
        """Each rank's events (see ``collectives.trace``)."""
        return [t.events for t in self.traces]

    # ----- running the ranks ----------------------------------------------------------
    def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> list[Any]:
        """Run ``fn(rank, *args, **kwargs)`` on every rank; their return values."""
        if self._used:
            raise RuntimeError("a ThreadWorld runs once; make a new one")
        self._used = True
        results: list[Any] = [None] * self.world_size
        for rank in range(self.world_size):
            thread = threading.Thread(target=self._rank_main, name=f"tinytrain-rank-{rank}",
                                      args=(rank, fn, args, kwargs, results), daemon=True)
            self._threads.append(thread)
        for thread in self._threads:
            thread.start()
        with self._cond:
            self._running = 0
            self._status[0] = "running"
            self._progress_at = time.monotonic()
            self._cond.notify_all()
            aborted_at = None
            while not all(s in ("done", "failed") for s in self._status):
                if self._abort is not None:  # the ranks unwind; a stuck one is left behind
                    aborted_at = aborted_at or time.monotonic()
                    if time.monotonic() - aborted_at > 1.0:
                        break
                    self._cond.wait(0.05)
                elif self._running is not None:
                    idle = time.monotonic() - self._progress_at
                    if idle >= self.timeout:
                        self._stop_hung_rank(self._running)
                    else:
                        self._cond.wait(min(self.timeout - idle, 0.5))
                else:
                    self._cond.wait(0.5)
        for thread in self._threads:
            thread.join(0.5)
        self._raise_failure()
        return results

    def _rank_main(self, rank: int, fn: Callable[..., Any], args: tuple[Any, ...],
                   kwargs: dict[str, Any], results: list[Any]) -> None:
        try:
            with self._cond:
                while self._running != rank and self._abort is None:
                    self._cond.wait()
                if self._abort is not None:
                    raise RankAborted(self._abort)
            self._install(rank)
            results[rank] = fn(rank, *args, **kwargs)
            status = "done"
        except BaseException as exc:  # noqa: BLE001 - reported by run()
            status = "failed"
            with self._cond:
                self._failures.append((rank, exc))
        finally:
            state.backend = state.world = state.trace = None
            state.groups_made = 0
        with self._cond:
            self._status[rank] = status
            self._waits[rank] = None
            if self._running == rank:
                self._pass_baton(rank)
            self._cond.notify_all()

    def _install(self, rank: int) -> None:
        backend = ThreadRank(self, rank)
        state.backend = backend
        state.trace = self.traces[rank]
        state.groups_made = 0
        state.world = ProcessGroup(backend, self._groups[0], 0, None, state.trace)

    # ----- taking turns -----------------------------------------------------------------
    def _runnable(self, rank: int) -> bool:
        status = self._status[rank]
        if status == "new":
            return True
        if status == "waiting":
            _, ready = self._waits[rank]
            return ready()
        return False

    def _pass_baton(self, rank: int) -> None:
        """Give the turn to the next rank after ``rank`` that can go on (lock held)."""
        self._progress_at = time.monotonic()
        n = self.world_size
        for step in range(1, n + 1):
            other = (rank + step) % n
            if self._runnable(other):
                self._running = other
                self._cond.notify_all()
                return
        self._running = None
        waiting = [r for r in range(n) if self._status[r] == "waiting"]
        if waiting and self._abort is None:
            self._abort = self._deadlock_message(waiting)
        self._cond.notify_all()

    def wait_until(self, rank: int, what: str, ready: Callable[[], bool]) -> None:
        """Block rank ``rank`` until ``ready()``; other ranks run meanwhile."""
        with self._cond:
            self._check_abort()
            self._progress_at = time.monotonic()
            if ready():
                return
            self._status[rank] = "waiting"
            self._waits[rank] = (what, ready)
            self._pass_baton(rank)
            while self._running != rank and self._abort is None:
                self._cond.wait()
            self._check_abort(what)
            self._status[rank] = "running"
            self._waits[rank] = None

    def _check_abort(self, what: str | None = None) -> None:
        if self._abort is not None:
            where = f" while waiting in {what}" if what else ""
            raise RankAborted(f"{self._abort}{where}")

    def abort(self, message: str) -> None:
        """Stop the world: every waiting rank raises ``message``."""
        with self._cond:
            if self._abort is None:
                self._abort = message
            self._cond.notify_all()

    def _deadlock_message(self, waiting: list[int]) -> str:
        waits = "; ".join(f"rank {r} in {self._waits[r][0]}" for r in waiting)
        failed = [(r, e) for r, e in self._failures if not isinstance(e, RankAborted)]
        if failed:
            rank, exc = failed[0]
            return (f"rank {rank} failed ({type(exc).__name__}: {exc}) while other ranks "
                    f"waited for it: {waits}")
        finished = [r for r in range(self.world_size) if self._status[r] == "done"]
        done = f" (ranks {finished} had returned)" if finished else ""
        return f"deadlock: every unfinished rank is waiting{done}: {waits}"

    def _stop_hung_rank(self, rank: int) -> None:
        """``rank`` ran ``timeout`` s without reaching a collective: abort and stop it."""
        thread = self._threads[rank]
        frame = sys._current_frames().get(thread.ident or -1)
        where = ""
        if frame is not None:
            stack = [f for f in traceback.extract_stack(frame)
                     if "threading.py" not in f.filename]
            lines = [f"{f.filename}:{f.lineno} in {f.name}" for f in stack[-4:]]
            where = "; it was at (innermost first): " + " <- ".join(reversed(lines))
        waits = []
        for r in range(self.world_size):
            if self._status[r] == "waiting":
                what, ready = self._waits[r]
                waits.append(f"rank {r} was waiting for its turn after {what}" if ready()
                             else f"rank {r} was waiting in {what}")
        message = (f"rank {rank} ran for {self.timeout:g} s without reaching a collective "
                   f"(an infinite loop, or very slow code?){where}")
        if waits:
            message += "; " + "; ".join(waits)
        self._abort = message
        self._cond.notify_all()
        if thread.ident is not None:  # an exception at the rank's next bytecode
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident),
                                                       ctypes.py_object(RankAborted))

    def _raise_failure(self) -> None:
        roots = [(r, e) for r, e in self._failures if not isinstance(e, RankAborted)]
        if roots:
            rank, exc = roots[0]
            if isinstance(exc, NotImplementedError):
                raise exc
            if isinstance(exc, DistributedError):
                raise type(exc)(f"rank {rank}: {exc}") from exc
            raise RankFailed(f"rank {rank} raised {type(exc).__name__}: {exc}"
                             f"{_location(exc)}") from exc
        if self._abort is not None:
            raise DistributedError(self._abort)
        unfinished = [r for r, s in enumerate(self._status) if s not in ("done", "failed")]
        if unfinished:
            raise DistributedError(f"ranks {unfinished} did not finish")

    # ----- collectives --------------------------------------------------------------------
    def new_group(self, index: int, ranks: tuple[int, ...]) -> int:
        """The id of the ``index``-th group made (every rank makes its groups in the same
        order, as torch.distributed requires)."""
        with self._cond:
            gid = index + 1
            if gid < len(self._groups):
                if self._groups[gid] != ranks:
                    raise DistributedError(
                        f"new_group call {index}: ranks {list(ranks)} here, but another rank "
                        f"made it with ranks {list(self._groups[gid])} (every rank must call "
                        "new_group in the same order with the same ranks)")
            else:
                self._groups.append(ranks)
            return gid

    def contribute(self, rank: int, group: ProcessGroup, kind: str, seq: int,
                   contribution: Any, meta: dict[str, Any]) -> _Op:
        with self._cond:
            self._check_abort()
            self._progress_at = time.monotonic()
            key = (group.gid, seq)
            op = self._ops.get(key)
            me = group.rank()
            if op is None:
                op = self._ops[key] = _Op(kind, meta, group.size(), rank)
            elif op.meta["signature"] != meta["signature"]:
                message = (f"collective mismatch in group {list(group.ranks)} (call #{seq}): rank "
                           f"{op.first} called {group.describe(op.kind, seq, op.meta)}, rank "
                           f"{rank} called {group.describe(kind, seq, meta)}")
                self._abort = message
                self._cond.notify_all()
                raise DistributedError(message)
            op.contributions[me] = contribution
            op.arrived += 1
            return op

    def take_result(self, op: _Op, group: ProcessGroup, seq: int) -> Any:
        with self._cond:
            result = op.result(group.rank())
            op.taken += 1
            if op.taken == op.size:
                self._ops.pop((group.gid, seq), None)
            return result

    def post(self, group: ProcessGroup, src: int, dst: int, tag: int, array: np.ndarray) -> None:
        with self._cond:
            self._check_abort()
            self._progress_at = time.monotonic()
            self._mail[(group.gid, src, dst, tag)].append(array)

    def mailbox(self, group: ProcessGroup, src: int, dst: int, tag: int) -> deque:
        return self._mail[(group.gid, src, dst, tag)]


class ThreadRank:
    """One rank's view of a ThreadWorld (what ``tt.distributed`` calls)."""

    name = "threads"

    def __init__(self, world: ThreadWorld, rank: int) -> None:
        self.world = world
        self.rank = rank
        self.world_size = world.world_size

    def new_group(self, index: int, ranks: tuple[int, ...]) -> tuple[int, Any]:
        return self.world.new_group(index, ranks), None

    def start(self, group: ProcessGroup, kind: str, seq: int, contribution: Any,
              meta: dict[str, Any]) -> _Collective:
        op = self.world.contribute(self.rank, group, kind, seq, contribution, meta)
        return _Collective(self, op, group, seq, group.describe(kind, seq, meta))

    def send(self, group: ProcessGroup, array: np.ndarray, dst: int, tag: int) -> None:
        self.world.post(group, self.rank, dst, tag, array)

    def start_recv(self, group: ProcessGroup, src: int, tag: int, seq: int) -> _Recv:
        box = self.world.mailbox(group, src, self.rank, tag)
        return _Recv(self, box, f"recv #{seq} from rank {src} (tag {tag}) of group "
                                f"{list(group.ranks)}")


class _Collective:
    def __init__(self, rank: ThreadRank, op: _Op, group: ProcessGroup, seq: int,
                 what: str) -> None:
        self.rank, self.op, self.group, self.seq, self.what = rank, op, group, seq, what

    def done(self) -> bool:
        return self.op.complete

    def wait(self) -> Any:
        world = self.rank.world
        world.wait_until(self.rank.rank, self.what, self.done)
        return world.take_result(self.op, self.group, self.seq)


class _Recv:
    def __init__(self, rank: ThreadRank, box: deque, what: str) -> None:
        self.rank, self.box, self.what = rank, box, what

    def done(self) -> bool:
        return len(self.box) > 0

    def wait(self) -> np.ndarray:
        self.rank.world.wait_until(self.rank.rank, self.what, self.done)
        return self.box.popleft()


def _location(exc: BaseException) -> str:
    """Where ``exc`` was raised: the innermost frames outside this package."""
    frames = traceback.extract_tb(exc.__traceback__)
    here = __file__.rsplit("/", 2)[0]
    mine = [f for f in frames if not f.filename.startswith(here)]
    if not mine:
        return ""
    lines = [f"{f.filename}:{f.lineno} in {f.name}" for f in mine[-3:]]
    return "\n  at " + "\n  at ".join(reversed(lines))
