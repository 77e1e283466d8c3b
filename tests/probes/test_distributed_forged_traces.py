"""Assignment 7 graded on evidence the submission cannot write: the collective trace and
the collectives themselves are the grader's (``graders/probes/_world.py``), and the ``-mpi``
cases run each rank in its own process.

Each attack is a hostile variant of the reference whose DistributedDataParallel, ZeRO or
tensor-parallel Linear never communicates through a collective: the ranks swap their
values through memory the rank threads share (``exchange``, in a module of the
submission's own), and a dozen lines added to the given ``collectives/group.py``
write the trace events a real collective would have written (``ProcessGroup.forge``,
fingerprints and all). Graded against the framework's own trace and threads backend, that
took every point. Each must now score no more than the same shared-memory variant without
the forged events (honest about not communicating), and less than full marks: the
grader's trace shows no collective, and separate processes share no memory.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ..conftest import REFERENCE, grade_forked, task_scores

# ----- what both variants add: an exchange through memory the rank threads share ---------------
SHARED = '''

import numpy as _np

_SHARED: dict = {}
_READS: dict = {}
_SHARED_LOCK = threading.Lock()
_CALLS: dict = {}


def exchange(group, value):
    """Every rank of ``group`` puts ``value`` and gets everyone's, in group rank order,
    through memory the rank threads share (no collective carries the values)."""
    from . import api
    ranks = tuple(api.get_process_group_ranks(group))
    me = api.get_rank()
    world = getattr(state.backend, "world", None)
    owner = state.backend if state.backend is not None else threading.current_thread()
    with _SHARED_LOCK:
        n = _CALLS.get(owner, 0)
        _CALLS[owner] = n + 1
        key = (id(world), ranks, n)
        box = _SHARED.setdefault(key, {})
        box[me] = None if value is None else _np.array(value, copy=True)
    if world is not None:  # the framework's threads backend: take turns with the others
        world.wait_until(state.backend.rank, "a shared-memory exchange",
                         lambda: len(box) >= len(ranks))
    else:  # the grader's ranks: a barrier hands the turn on until everyone has put
        api.barrier(group=group)
    values = [box.get(r, value) for r in ranks]
    with _SHARED_LOCK:
        _READS[key] = _READS.get(key, 0) + 1
        if _READS[key] == len(ranks):
            _SHARED.pop(key, None)
            _READS.pop(key, None)
    return values


def forge(group, kind, contribution, result, **meta):
    """Write the trace event of the collective that did not happen, where the group can."""
    pg = state.world if group is None else group
    write = getattr(pg, "forge", None)
    if write is not None:
        write(kind, contribution, result, **meta)


def shared_all_reduce(x, group):
    from . import api
    values = exchange(group, x)
    out = _np.array(values[0], copy=True)
    for v in values[1:]:
        _np.add(out, v, out=out)
    forge(group, "all_reduce", _np.array(x, copy=True), out, op="sum")
    return out


def shared_all_gather(x, dim, group):
    from . import api
    moved = _np.ascontiguousarray(_np.moveaxis(x, dim, 0))
    values = exchange(group, moved)
    out = _np.concatenate(values, axis=0)
    forge(group, "all_gather", moved, list(values), full=(out.shape, out.dtype))
    return _np.ascontiguousarray(_np.moveaxis(out, 0, dim))
'''

# ----- what only the hostile variant adds: 10 lines in the given group.py ---------------------
FORGE = ('''    def _next_p2p(self, kind: str, peer: int, tag: int) -> int:''',
         '''    def forge(self, kind, contribution, result, *, op=None, src=None, full=None,
              async_op=False):
        seq = self._seq
        self._seq += 1
        event = self._trace.start(kind, list(self.ranks), seq, op=op, array=contribution,
                                  full=full, async_op=async_op,
                                  peer=None if src is None else self.ranks[src],
                                  contribution=contribution)
        self._trace.end(event, result)

    def _next_p2p(self, kind: str, peer: int, tag: int) -> int:''')

AVERAGE = '''
        total = np.array(values[0], copy=True)
        for v in values[1:]:
            np.add(total, v, out=total)
        average = (total / total.dtype.type(len(values))).astype(total.dtype)'''

# ----- the homework, communicating through the shared memory --------------------------------------
HOMEWORK = {
    "7.1": ("distributed/data_parallel/ddp.py", [
        ('''        src = dist.get_process_group_ranks(self.process_group)[0]
        for tensor in [*self.module.parameters(), *self.module.buffers()]:
            dist.broadcast(tensor, src=src, group=self.process_group)''',
         '''        from ..collectives.state import exchange, forge
        ranks = dist.get_process_group_ranks(self.process_group)
        mine = dist.get_rank() == ranks[0]
        for tensor in [*self.module.parameters(), *self.module.buffers()]:
            sent = np.array(tensor.data, copy=True) if mine else None
            value = exchange(self.process_group, sent)[0]
            if value is not None:
                forge(self.process_group, "broadcast", sent, value, src=0,
                      full=(tensor.shape, tensor.data.dtype))
                tensor.data[...] = value'''),
        ('''        flat = Tensor(np.concatenate([g.ravel() for g in grads]))
        work = dist.all_reduce(flat, op=dist.ReduceOp.AVG, group=self.process_group,
                               async_op=True)
        self._launched.append((work, flat))''',
         '''        from ..collectives.state import exchange, forge
        mine = np.concatenate([g.ravel() for g in grads])
        values = exchange(self.process_group, mine)''' + AVERAGE + '''
        forge(self.process_group, "all_reduce", mine, average, op="avg", async_op=True)
        self._launched.append((None, Tensor(average)))'''),
        ('''            work.wait()
            offset = 0''', '''            if work is not None:
                work.wait()
            offset = 0'''),
    ]),
    "7.2": ("distributed/optim/zero.py", [
        ('''        out = Tensor(np.zeros(chunk, dtype=param.data.dtype))
        dist.reduce_scatter_tensor(out, Tensor(flat), op=dist.ReduceOp.AVG,
                                   group=self.process_group)
        self.shard(param).grad = out''',
         '''        from ..collectives.state import exchange, forge
        values = exchange(self.process_group, flat)''' + AVERAGE + '''
        mine = np.array(average.reshape(self.world, chunk)[self.rank], copy=True)
        forge(self.process_group, "reduce_scatter", flat.reshape(self.world, chunk), mine,
              op="avg", full=(flat.shape, flat.dtype))
        self.shard(param).grad = Tensor(mine)'''),
        ('''            dist.all_gather_into_tensor(full, self.shard(p), group=self.process_group)''',
         '''            from ..collectives.state import exchange, forge
            shard = np.array(self.shard(p).data, copy=True)
            values = exchange(self.process_group, shard)
            forge(self.process_group, "all_gather", shard, list(values),
                  full=(full.shape, full.data.dtype))
            full.data[...] = np.concatenate([np.ravel(v) for v in values])'''),
    ]),
    "7.3": ("distributed/tensor_parallel/mappings.py", [
        ("from ..collectives.arrays import CollectiveFunction, all_gather, all_reduce, chunk",
         "from ..collectives.arrays import CollectiveFunction, chunk\n"
         "from ..collectives.state import shared_all_gather as all_gather\n"
         "from ..collectives.state import shared_all_reduce as all_reduce"),
    ]),
}
# DDP whose values go through the shared memory while real collectives, their results
# unused, give the grader's trace what it expects: only separate processes tell
BEHIND_REAL_CALLS = [
    ('''        src = dist.get_process_group_ranks(self.process_group)[0]
        for tensor in [*self.module.parameters(), *self.module.buffers()]:
            dist.broadcast(tensor, src=src, group=self.process_group)''',
     '''        from ..collectives.state import exchange
        src = dist.get_process_group_ranks(self.process_group)[0]
        for tensor in [*self.module.parameters(), *self.module.buffers()]:
            sent = np.array(tensor.data, copy=True) if dist.get_rank() == src else None
            value = exchange(self.process_group, sent)[0]
            dist.broadcast(Tensor(np.array(tensor.data, copy=True)), src=src,
                           group=self.process_group)
            if value is not None:
                tensor.data[...] = value'''),
    ('''        flat = Tensor(np.concatenate([g.ravel() for g in grads]))
        work = dist.all_reduce(flat, op=dist.ReduceOp.AVG, group=self.process_group,
                               async_op=True)
        self._launched.append((work, flat))''',
     '''        from ..collectives.state import exchange
        mine = np.concatenate([g.ravel() for g in grads])
        values = exchange(self.process_group, mine)''' + AVERAGE + '''
        work = dist.all_reduce(Tensor(mine), op=dist.ReduceOp.AVG, group=self.process_group,
                               async_op=True)
        self._launched.append((work, Tensor(average)))'''),
]
WHAT = {"7.1": "DistributedDataParallel", "7.2": "ZeroRedundancyOptimizer",
        "7.3": "the tensor-parallel Linear layers (their conjugate operators)"}


def _replace(path: Path, edits: list[tuple[str, str]]) -> None:
    text = path.read_text()
    for find, replace in edits:
        assert text.count(find) == 1, (path, find)
        text = text.replace(find, replace)
    compile(text, str(path), "exec")
    path.write_text(text)


def shared_memory_variant(root: Path, task: str, forged: bool,
                          edits: list[tuple[str, str]] | None = None) -> Path:
    """The reference with ``task``'s homework communicating through shared memory (or
    ``edits`` to its file); with ``forged``, the given group.py writing the trace events
    of the collectives skipped."""
    package = root / "tinytrain"
    shutil.copytree(REFERENCE / "tinytrain", package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    # a module of the submission's own (the given files, state.py among them, are put back
    # by the grader before grading: what is added to them never runs)
    shared = package / "distributed/collectives/shared_exchange.py"
    shared.write_text("import threading\n\nfrom .state import state\n" + SHARED)
    file, homework = HOMEWORK[task]
    _replace(package / file, homework if edits is None else edits)
    homework_file = package / file
    homework_file.write_text(homework_file.read_text().replace(
        "from ..collectives.state import", "from ..collectives.shared_exchange import"))
    if forged:
        _replace(package / "distributed/collectives/group.py", [FORGE])
    return root


@pytest.mark.parametrize("task", sorted(HOMEWORK), ids=[f"{t}-{WHAT[t].split()[0]}"
                                                        for t in sorted(HOMEWORK)])
def test_forged_trace_gains_nothing(task, tmp_path):
    """The shared-memory variant with forged trace events scores no more than the same
    variant without them, and below full marks."""
    honest = shared_memory_variant(tmp_path / "honest", task, forged=False)
    hostile = shared_memory_variant(tmp_path / "hostile", task, forged=True)
    scores = {}
    for name, submission in (("honest", honest), ("hostile", hostile)):
        score = grade_forked(submission, tmp_path / f"out-{name}", "--tasks", task,
                             "--no-shrink")
        assert score["_exit"] == 0, score["_stderr"]
        scores[name] = task_scores(score)[task]
    got, full = scores["hostile"]
    assert got < full, (f"{WHAT[task]} that communicates through shared memory, with forged "
                        f"trace events, got full marks ({got} / {full})")
    assert got <= scores["honest"][0] + 1e-9, (
        f"forged trace events earned points: {got} / {full} with them, "
        f"{scores['honest'][0]} / {full} without")


def test_shared_memory_behind_real_calls_fails_as_processes(tmp_path):
    """DDP that takes its values from the shared memory but also makes the real calls
    (results unused): ranks as threads cannot tell, every -mpi case must."""
    submission = shared_memory_variant(tmp_path / "submission", "7.1", forged=False,
                                       edits=BEHIND_REAL_CALLS)
    score = grade_forked(submission, tmp_path / "out", "--tasks", "7.1", "--no-shrink")
    assert score["_exit"] == 0, score["_stderr"]
    tests = [t for task in score["tasks"] for t in task["tests"]]
    failed = sorted(t["name"] for t in tests if t["status"] != "passed")
    mpi = sorted(t["name"] for t in tests if "-mpi]" in t["name"])
    assert mpi and failed == mpi, failed


# ----- the runtime itself, in this process on the reference ----------------------------------------
@pytest.fixture(scope="module")
def tt():
    sys.path.insert(0, str(REFERENCE))
    try:
        import tinytrain
    finally:
        sys.path.remove(str(REFERENCE))
    return tinytrain


SHARED_BOX: dict[int, float] = {}


@pytest.mark.parametrize("processes", [False, True], ids=["threads", "processes"])
def test_ranks_as_processes_share_no_memory(tt, processes):
    """Rank 0 writes a module global before a barrier, rank 1 reads it after: as threads it
    sees the value, as processes it cannot; the barrier is in the grader's trace."""
    from graders.probes import _world

    SHARED_BOX.clear()

    def rank_main(rank: int) -> float:
        if rank == 0:
            SHARED_BOX[0] = 42.0
        tt.distributed.barrier()
        return SHARED_BOX.get(0, -1.0)

    results, traces = _world.run(tt, 2, rank_main, processes=processes)
    assert results == ([42.0, 42.0] if not processes else [42.0, -1.0])
    assert [[e["kind"] for e in t] for t in traces] == [["barrier"], ["barrier"]]
    assert all(t[0]["end"] is not None for t in traces)


def test_forged_events_do_not_reach_the_grader(tt):
    """What the submission's own recorder would write is not the grader's trace: a rank
    that records events there (or has no framework trace to write to) changes nothing."""
    from graders.probes import _world

    def rank_main(rank: int) -> list[float]:
        x = tt.tensor(np.full(3, rank + 1.0))
        tt.distributed.all_reduce(x)
        state = sys.modules[f"{tt.__name__}.distributed.collectives.state"].state
        assert state.trace is None  # the framework's recorder is not in use
        return list(x.data)

    results, traces = _world.run(tt, 2, rank_main)
    assert results == [[3.0] * 3, [3.0] * 3]
    for rank, trace in enumerate(traces):
        (event,) = trace
        assert (event["kind"], event["op"], event["numel"]) == ("all_reduce", "sum", 3)
        assert event["in"] == [3.0 * (rank + 1), 3.0 * (rank + 1) ** 2]
        assert event["out"] == [9.0, 27.0]


def test_replacing_the_grader_collectives_is_caught(tt):
    from graders.probes import _world

    api = sys.modules[f"{tt.__name__}.distributed.collectives.api"]
    original = api.all_reduce

    def rank_main(rank: int) -> None:
        api.all_reduce = lambda *args, **kwargs: None

    with pytest.raises(_world.DistributedError, match="replaced the grader's collectives"):
        _world.run(tt, 2, rank_main)
    assert api.all_reduce is original  # put back


def test_a_hung_rank_process_is_named_with_its_line(tt):
    from graders.probes import _world

    def rank_main(rank: int) -> None:
        while rank == 1:
            pass
        tt.distributed.barrier()

    start = time.monotonic()
    with pytest.raises(_world.DistributedError) as info:
        _world.run(tt, 2, rank_main, processes=True, timeout=1.0)
    assert time.monotonic() - start < 5
    message = str(info.value)
    assert "rank 1 ran for 1 s without reaching a collective" in message
    assert "test_distributed_forged_traces.py" in message
    assert "rank 0 was waiting in barrier #0" in message
