"""The MPI backend: every process of ``mpiexec -n N python script.py`` is a rank
(mpi4py over MPICH, the ``mpi`` extra: ``pip install -e ".[mpi]"``).

Results are the threads backend's bit for bit: a collective gathers every rank's
contribution (``Allgather``) and each rank reduces them in group rank order with the same
code (``collectives.reduce``), instead of MPI's own reduction, whose order depends on the
algorithm MPI picks. That costs bandwidth (a reduction moves world times the data of a
ring all-reduce), which does not matter at this course's sizes; the trace records the
calls, not what MPI moved. Sends are buffered (``Isend`` of a copy), as on threads.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..collectives import reduce as reductions
from ..collectives.group import ProcessGroup


def _mpi() -> Any:
    try:
        from mpi4py import MPI
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise RuntimeError("the 'mpi' backend needs mpi4py and an MPI library: "
                           "pip install -e '.[mpi]' (mpi4py with the mpich wheel)") from exc
    return MPI


def _bytes(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)


class MPIBackend:
    """This process's rank in MPI's COMM_WORLD."""

    name = "mpi"

    def __init__(self, timeout: float | None = None) -> None:
        self.MPI = _mpi()
        self.comm = self.MPI.COMM_WORLD
        self.rank = self.comm.Get_rank()
        self.world_size = self.comm.Get_size()
        self._pending_sends: list[tuple[Any, np.ndarray]] = []

    def world_handle(self) -> Any:
        return self.comm

    def new_group(self, index: int, ranks: tuple[int, ...]) -> tuple[int, Any]:
        members = self.comm.Get_group().Incl(list(ranks))
        comm = self.comm.Create(members)  # collective over COMM_WORLD, as new_group is
        return index + 1, (None if comm == self.MPI.COMM_NULL else comm)

    def start(self, group: ProcessGroup, kind: str, seq: int, contribution: Any,
              meta: dict[str, Any]) -> _Pending:
        comm = group._handle
        if kind == "barrier":
            return _Pending(comm.Ibarrier(), lambda: None)
        if kind == "broadcast":
            src = meta["src"]
            shape, dtype = _shape_dtype(meta["what"])
            buffer = contribution if contribution is not None else np.empty(shape, dtype)
            request = comm.Ibcast(_bytes(buffer), root=src)
            return _Pending(request, lambda: buffer)
        payload = _bytes(contribution)
        gathered = np.empty((group.size(), payload.size), np.uint8)
        request = comm.Iallgather(payload, gathered)
        me = group.rank()

        def result() -> Any:
            parts = [row.view(contribution.dtype).reshape(contribution.shape) for row in gathered]
            return reductions.compute(kind, parts, me, meta)

        return _Pending(request, result)

    def send(self, group: ProcessGroup, array: np.ndarray, dst: int, tag: int) -> None:
        comm, dest = group._handle, group.ranks.index(dst)
        buffer = np.ascontiguousarray(array)
        header = (tuple(buffer.shape), buffer.dtype.name)
        self._pending_sends.append((comm.isend(header, dest=dest, tag=2 * tag), header))
        self._pending_sends.append((comm.Isend(_bytes(buffer), dest=dest, tag=2 * tag + 1),
                                    buffer))
        self._pending_sends = [(r, b) for r, b in self._pending_sends if not r.Test()]

    def start_recv(self, group: ProcessGroup, src: int, tag: int, seq: int) -> _Received:
        return _Received(self, group._handle, group.ranks.index(src), tag)

    def finalize(self) -> None:
        for request, _ in self._pending_sends:
            request.Wait()
        self._pending_sends.clear()


class _Pending:
    def __init__(self, request: Any, result: Any) -> None:
        self.request = request
        self.result = result
        self.finished = False

    def done(self) -> bool:
        if not self.finished:
            self.finished = bool(self.request.Test())
        return self.finished

    def wait(self) -> Any:
        if not self.finished:
            self.request.Wait()
            self.finished = True
        return self.result()


class _Received:
    """A recv: a header (shape, dtype name), then the bytes."""

    def __init__(self, backend: MPIBackend, comm: Any, src: int, tag: int) -> None:
        self.backend, self.comm, self.src, self.tag = backend, comm, src, tag

    def done(self) -> bool:
        return bool(self.comm.Iprobe(source=self.src, tag=2 * self.tag))

    def wait(self) -> np.ndarray:
        shape, name = self.comm.recv(source=self.src, tag=2 * self.tag)
        array = np.empty(shape, _dtype(name))
        self.comm.Recv(_bytes(array), source=self.src, tag=2 * self.tag + 1)
        return array


def _shape_dtype(what: str) -> tuple[tuple[int, ...], np.dtype]:
    """``float64[4, 8]`` back to its shape and dtype."""
    name, _, rest = what.partition("[")
    return tuple(int(s) for s in rest.rstrip("]").split(",") if s.strip()), _dtype(name)


def _dtype(name: str) -> np.dtype:
    from ... import dtypes

    return getattr(dtypes, "bool_" if name == "bool" else name).np
