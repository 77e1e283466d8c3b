"""ProcessGroup and Work: a set of ranks that communicate, and the handle of a call.

Every collective call goes through ``ProcessGroup.run``, which numbers it, records it in
the trace, hands it to the backend and returns a ``Work``; ``Work.wait`` writes the result
into the caller's tensors. Backends implement ``new_group``, ``start`` and ``start_recv``
(both return a handle with ``wait()`` giving the result and ``done()``) and ``send``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from .trace import Trace


class ProcessGroup:
    """The ranks ``ranks`` (global rank numbers, in group rank order)."""

    def __init__(self, backend: Any, ranks: tuple[int, ...], gid: int, handle: Any,
                 trace: Trace) -> None:
        self.ranks = tuple(ranks)
        self.gid = gid
        self._backend = backend
        self._handle = handle  # what the backend needs to talk to this group
        self._trace = trace
        self._seq = 0
        self._p2p_seq: defaultdict[tuple[str, int, int], int] = defaultdict(int)

    def rank(self) -> int:
        """The calling rank's position in this group."""
        return self.ranks.index(self._backend.rank)

    def size(self) -> int:
        return len(self.ranks)

    def __repr__(self) -> str:
        return f"ProcessGroup(ranks={list(self.ranks)})"

    def describe(self, kind: str, seq: int, meta: dict[str, Any]) -> str:
        """A call for messages: ``all_reduce #3 (sum, float64[4, 8]) of group [0, 1]``."""
        parts = [p for p in (meta.get("op"), meta.get("what")) if p]
        if meta.get("src") is not None:
            parts.append(f"from rank {self.ranks[meta['src']]}")
        inner = f" ({', '.join(parts)})" if parts else ""
        return f"{kind} #{seq}{inner} of group {list(self.ranks)}"

    def run(self, kind: str, contribution: np.ndarray | None, finish: Callable[[Any], None],
            *, full: tuple[tuple[int, ...], np.dtype] | None = None, op: str | None = None,
            src: int | None = None, async_op: bool = False) -> Work | None:
        """Start collective ``kind`` with this rank's ``contribution``; ``finish(result)``
        stores the result. ``src`` is a group rank. Waits unless ``async_op``."""
        seq = self._seq
        self._seq += 1
        what = _what(full if full is not None else contribution)
        meta = {"op": op, "src": src, "what": what, "signature": (kind, op, src, what)}
        event = self._trace.start(kind, list(self.ranks), seq, op=op, array=contribution, full=full,
                                  async_op=async_op,
                                  peer=None if src is None else self.ranks[src],
                                  contribution=contribution)
        handle = self._backend.start(self, kind, seq, contribution, meta)
        work = Work(handle, finish, event, self._trace)
        if async_op:
            return work
        work.wait()
        return None

    def send(self, array: np.ndarray, dst: int, tag: int, async_op: bool) -> Work | None:
        seq = self._next_p2p("send", dst, tag)
        event = self._trace.start("send", list(self.ranks), seq, array=array, async_op=async_op,
                                  peer=dst, tag=tag, contribution=array)
        self._backend.send(self, np.array(array, copy=True), dst, tag)
        self._trace.end(event, None)
        work = Work(None, lambda result: None, None, self._trace)
        return work if async_op else None

    def recv(self, shape: tuple[int, ...], dtype: np.dtype, src: int, tag: int,
             finish: Callable[[np.ndarray], None], async_op: bool) -> Work | None:
        seq = self._next_p2p("recv", src, tag)
        event = self._trace.start("recv", list(self.ranks), seq, full=(shape, dtype),
                                  async_op=async_op, peer=src, tag=tag)
        handle = self._backend.start_recv(self, src, tag, seq)

        def check(array: np.ndarray) -> None:
            if array.shape != tuple(shape) or array.dtype != dtype:
                raise RuntimeError(
                    f"recv from rank {src} (tag {tag}): the message is {_what(array)} but the "
                    f"tensor to receive it is {_what((shape, dtype))}")
            finish(array)

        work = Work(handle, check, event, self._trace)
        if async_op:
            return work
        work.wait()
        return None

    def _next_p2p(self, kind: str, peer: int, tag: int) -> int:
        key = (kind, peer, tag)
        seq = self._p2p_seq[key]
        self._p2p_seq[key] += 1
        return seq


class Work:
    """The handle of a call started with ``async_op=True``: ``wait()`` blocks until it is
    done and the result is in the output tensor(s)."""

    def __init__(self, handle: Any, finish: Callable[[Any], None],
                 event: dict[str, Any] | None, trace: Trace) -> None:
        self._handle = handle  # the backend's: wait() gives the result, done() polls
        self._finish = finish
        self._event = event
        self._trace = trace
        self._done = handle is None

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the call completed; the output tensors then hold the result."""
        if not self._done:
            result = self._handle.wait()
            self._finish(result)
            self._done = True
            self._trace.end(self._event, result)
        return True

    def is_completed(self) -> bool:
        """True once ``wait`` would not block."""
        return self._done or self._handle.done()


def _what(x: Any) -> str:
    """``float64[4, 8]`` for an array (or a (shape, dtype) pair)."""
    if x is None:
        return ""
    shape, dtype = (x.shape, x.dtype) if isinstance(x, np.ndarray) else x
    return f"{np.dtype(dtype).name}{list(shape)}"
