"""The collectives of tt.distributed on both backends, driven by the collective table
(``graders/oracle/distributed_collectives.py``): every entry, spelling, reduce op, world
size, dtype and async mode on ranks as threads against the table's NumPy semantics; the
same cases under ``mpiexec`` give the same bits; traces agree with the data, and a
tampered trace is caught; failures (a deadlock, a rank that raises or hangs, mismatched
calls) end with the rank and the collective named, without hanging."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from graders.oracle import distributed_collectives as table
from graders.probes import distributed_collectives as probe

from ..conftest import REFERENCE, ROOT


@pytest.fixture(scope="module")
def tt():
    sys.path.insert(0, str(REFERENCE))
    try:
        import tinytrain
    finally:
        sys.path.remove(str(REFERENCE))
    return tinytrain


def cases(world: int) -> list[dict]:
    """Every (entry, spelling, op, dtype, async) on ``world`` ranks, with drawn inputs."""
    rng = np.random.default_rng(world)
    out = []
    for entry in table.COLLECTIVES:
        for call, op, dtype, async_op in itertools.product(
                entry.calls, entry.ops, ("float64", "float32", "int64"), (False, True)):
            if dtype == "int64" and op == "avg":
                continue
            kwargs = {"op": op} if op else {}
            if entry.name == "broadcast":
                kwargs["src"] = int(rng.integers(0, world))
            inputs = entry.sample(rng, world, np.dtype(dtype))
            out.append({"name": entry.name, "call": call, "dtype": dtype, "kwargs": kwargs,
                        "async": async_op, "inputs": inputs})
    return out


def case_id(case: dict) -> str:
    op = case["kwargs"].get("op", "")
    return f"{case['call'].rsplit('.', 1)[-1]}-{op}-{case['dtype']}-{'async' if case['async'] else 'sync'}"


WORLDS = [1, 2, 3, 4]


@pytest.mark.parametrize("world", WORLDS)
def test_every_collective_on_threads_matches_the_table(tt, world):
    for case in cases(world):
        entry = table.BY_NAME[case["name"]]
        got = probe.run(tt, case["call"], world, case["inputs"], case["kwargs"], case["async"])
        expected = entry.expected(case["inputs"], case["kwargs"])
        for rank, (g, e) in enumerate(zip(got["outputs"], expected, strict=True)):
            if e is None:
                assert g is None, case_id(case)
                continue
            tol = {"float32": 1e-6}.get(case["dtype"], 1e-15)
            np.testing.assert_allclose(np.ravel(g).astype(np.float64), np.ravel(e), rtol=tol,
                                       atol=tol, err_msg=f"rank {rank}, {case_id(case)}")
            assert g.dtype == np.dtype(case["dtype"]), case_id(case)
        table.check_trace(got["trace"])
        events = [table.calls(t) for t in got["trace"]]
        assert all(len(e) == 1 and e[0]["kind"] == entry.name and e[0]["async"] == case["async"]
                   for e in events), case_id(case)


def test_a_tampered_trace_is_caught(tt):
    inputs = [np.arange(4.0) + r for r in range(3)]
    got = probe.run(tt, "tt.distributed.all_reduce", 3, inputs, {"op": "sum"}, False)
    table.check_trace(got["trace"])
    for field, value in (("out", [0.0, 0.0]), ("numel", 5), ("end", None)):
        forged = json.loads(json.dumps(got["trace"]))
        forged[1][0][field] = value
        with pytest.raises(AssertionError):
            table.check_trace(forged)
    missing = json.loads(json.dumps(got["trace"]))
    missing[2] = []
    with pytest.raises(AssertionError, match="called by ranks"):
        table.check_trace(missing)


def test_send_and_recv_pair_up_in_the_trace(tt):
    dist = tt.distributed

    def fn(rank):
        t = tt.tensor(np.full(3, float(rank)))
        if rank == 0:
            dist.send(t, dst=1, tag=7)
            dist.irecv(t, src=1).wait()
        else:
            buffer = tt.zeros(3, dtype=tt.float64)
            dist.recv(buffer, src=0, tag=7)
            dist.isend(buffer * 2, dst=0).wait()
        return t.tolist()

    world = dist.ThreadWorld(2, timeout=2)
    assert world.run(fn) == [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]
    table.check_trace(world.trace)
    forged = json.loads(json.dumps(world.trace))
    next(e for e in forged[1] if e["kind"] == "recv")["out"] = [1.0, 1.0]
    with pytest.raises(AssertionError, match="did not get what was sent"):
        table.check_trace(forged)


@pytest.fixture(scope="module")
def mpiexec():
    found = shutil.which("mpiexec") or shutil.which("mpiexec", path=str(Path(sys.executable).parent))
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        found = None
    if found is None:
        pytest.skip("the mpi extra is not installed (pip install -e '.[mpi]'): no mpi4py/mpiexec")
    return found


@pytest.mark.parametrize("world", [2, 3])
def test_mpi_backend_gives_the_threads_backends_bits(tt, mpiexec, world, tmp_path):
    todo = cases(world)
    spec = [{**c, "inputs": [x.tolist() for x in c["inputs"]]} for c in todo]
    (tmp_path / "cases.json").write_text(json.dumps(spec))
    runner = ROOT / "tests" / "oracle" / "mpi_runner.py"
    subprocess.run([mpiexec, "-n", str(world), sys.executable, str(runner),
                    str(tmp_path / "cases.json"), str(tmp_path)], check=True, timeout=120,
                   capture_output=True)
    outputs = [np.load(tmp_path / f"rank{r}.npz") for r in range(world)]
    traces = [json.loads((tmp_path / f"trace{r}.json").read_text()) for r in range(world)]
    table.check_trace(traces)
    for i, case in enumerate(todo):
        threads = probe.run(tt, case["call"], world, case["inputs"], case["kwargs"], case["async"])
        for rank in range(world):
            if threads["outputs"][rank] is None:
                assert f"case{i}" not in outputs[rank]
                continue
            got = outputs[rank][f"case{i}"]
            assert got.dtype == threads["outputs"][rank].dtype
            assert np.array_equal(got, threads["outputs"][rank]), (rank, case_id(case))


# ----- failures -----------------------------------------------------------------------------
def _fails(tt, world, fn, timeout=1.0):
    start = time.monotonic()
    with pytest.raises(BaseException) as info:
        tt.distributed.ThreadWorld(world, timeout=timeout).run(fn)
    return info.value, time.monotonic() - start


def test_a_deadlock_names_every_waiting_rank_at_once(tt):
    dist = tt.distributed

    def fn(rank):
        t = tt.zeros(2)
        if rank == 0:
            dist.recv(t, src=1)
        else:
            dist.all_reduce(t)

    exc, seconds = _fails(tt, 3, fn)
    assert isinstance(exc, dist.DistributedError)
    assert "deadlock" in str(exc) and "rank 0 in recv #0 from rank 1" in str(exc)
    assert "rank 1 in all_reduce #0 (sum, float32[2])" in str(exc)
    assert seconds < 0.5


def test_a_rank_that_raises_is_named_and_the_others_are_released(tt):
    def fn(rank):
        if rank == 2:
            raise ValueError("bad batch")
        tt.distributed.all_reduce(tt.zeros(2))

    exc, seconds = _fails(tt, 3, fn)
    assert "rank 2 raised ValueError: bad batch" in str(exc)
    assert isinstance(exc.__cause__, ValueError)
    assert seconds < 0.5


def test_a_hung_rank_is_stopped_and_reported_with_its_line(tt):
    import threading

    before = threading.active_count()

    def fn(rank):
        tt.distributed.all_reduce(tt.zeros(2))
        if rank == 1:
            while True:
                pass
        tt.distributed.all_reduce(tt.zeros(2))

    exc, seconds = _fails(tt, 2, fn, timeout=0.5)
    assert "rank 0 was waiting" in str(exc)
    message = str(exc)
    assert "rank 1 ran for 0.5 s without reaching a collective" in message
    assert "test_distributed_collectives.py" in message  # the line it was running
    assert "rank 0 was waiting for its turn after all_reduce #0" in message
    assert seconds < 2.5
    time.sleep(0.2)
    assert threading.active_count() == before  # the hung thread was stopped


def test_mismatched_calls_are_reported(tt):
    def fn(rank):
        if rank == 0:
            tt.distributed.all_reduce(tt.zeros(3))
        else:
            tt.distributed.all_gather_into_tensor(tt.zeros(4), tt.zeros(2))

    exc, _ = _fails(tt, 2, fn)
    assert "collective mismatch in group [0, 1] (call #0)" in str(exc)
    assert "all_reduce #0 (sum, float32[3])" in str(exc) and "all_gather #0" in str(exc)


@pytest.mark.parametrize("call", ["all_gather_into_tensor", "reduce_scatter_tensor",
                                  "all_gather", "reduce_scatter"])
def test_mixed_dtypes_are_refused_as_the_graders_collectives_do(tt, call):
    """An output whose dtype is not the input's: torch.distributed (gloo) raises, and so do
    the framework's collectives, with the grader's runtime's message (``_world``), so that
    what a student runs locally behaves as what is graded."""
    from graders.probes import _world

    def rank_main(rank: int) -> None:
        dist = tt.distributed
        small = tt.tensor(np.zeros(2, np.float32))
        big = tt.tensor(np.zeros(4, np.float64))
        if call == "all_gather_into_tensor":
            dist.all_gather_into_tensor(big, small)
        elif call == "reduce_scatter_tensor":
            dist.reduce_scatter_tensor(small, big)
        elif call == "all_gather":
            dist.all_gather([tt.tensor(np.zeros(2)) for _ in range(2)], small)
        else:
            dist.reduce_scatter(small, [tt.tensor(np.zeros(2)) for _ in range(2)])

    exc, _ = _fails(tt, 2, rank_main)
    with pytest.raises(_world.RankFailed) as graded:
        _world.run(tt, 2, rank_main)
    message = str(graded.value).splitlines()[0].split("raised ", 1)[1]
    assert message.startswith(f"TypeError: {call}: ") and "(with mixed dtypes)" in message
    assert message in str(exc)


def test_not_implemented_passes_through_unchanged(tt):
    def fn(rank):
        if rank == 1:
            raise NotImplementedError("task 7.1: DDP")
        tt.distributed.barrier()

    exc, _ = _fails(tt, 2, fn)
    assert type(exc) is NotImplementedError and str(exc) == "task 7.1: DDP"


def test_ranks_take_turns_and_keep_their_own_grad_mode(tt):
    """One rank runs at a time (switching at collectives), and grad mode, autocast and
    saved-tensor hooks are per thread: a rank's no_grad region around a collective does
    not reach the rank that runs meanwhile."""
    dist = tt.distributed
    seen = {}

    def fn(rank):
        if rank == 0:
            with tt.no_grad(), tt.autocast("cuda", dtype=tt.float16), \
                    tt.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                dist.barrier()
                dist.barrier()
        else:
            dist.barrier()
            x = tt.ones(2, requires_grad=True)
            seen["requires_grad"] = (x * 2).requires_grad
            seen["autocast"] = tt.autograd.autocast_state.state.enabled
            seen["hooks"] = tt.autograd.graph.current_saved_tensors_hooks()
            dist.barrier()

    dist.ThreadWorld(2, timeout=2).run(fn)
    assert seen == {"requires_grad": True, "autocast": False, "hooks": None}
