"""Task 7.2: ZeroRedundancyOptimizer (ZeRO stages 1 and 2) over the submission's AdamW, on
ranks as threads, against single-process PyTorch AdamW on the whole batch.

Every rank trains the probes' MLP (float64) on its part of each batch. After every step
each rank must hold PyTorch's parameters (torch.testing's float64 tolerance; both sides
run the same float64 formulas), and AdamW's state for its chunk of every parameter
(the flattened parameter padded to world equal chunks, rank r owning chunk r). Memory:
a rank's optimizer state (counted over every optimizer reachable from the ZeRO object)
is its chunks' only, about 1/world of the whole; at stage 2 so are the gradients it
holds after backward. Communication (from the trace): per step, reduce-scatters whose
outputs are the averaged gradients and all-gathers whose outputs are the updated
parameters, covering every parameter once; no all-reduce. At stage 2 the reduce-scatters
run during backward. A float32 model keeps float32 shards (and float32 AdamW's results).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from graders.checks import assert_close, assert_conforms, assert_equal
from graders.oracle import distributed as oracle
from graders.oracle import distributed_collectives as table
from graders.suites._seed import case_rng
from graders.suites._support import task

WIDTHS = [5, 7, 6, 3]
OPTIONS = {"lr": 0.01, "betas": [0.9, 0.95], "weight_decay": 0.1}
STEPS = 3
CASES = [(1, 2), (1, 3), (2, 2), (2, 3)]


def spec(stage: int, world: int, seed: int = 0, dtype: type = np.float64,
         key: str = "") -> dict[str, Any]:
    # the weights and batches come from the grading seed (seed 0: today's values)
    rng = case_rng(seed, "7.2", key, stage, world, np.dtype(dtype).name)
    weights = {n: v.astype(dtype) for n, v in oracle.mlp_weights(WIDTHS, rng).items()}
    batches = [[(rng.uniform(-1, 1, (4, WIDTHS[0])).astype(dtype),
                 rng.uniform(-1, 1, (4, WIDTHS[-1])).astype(dtype))
                for _ in range(world)] for _ in range(STEPS)]
    return {"world": world, "stage": stage, "widths": WIDTHS, "weights": weights,
            "options": OPTIONS, "batches": batches}


def describe(s: dict[str, Any]) -> str:
    dtype = next(iter(s["weights"].values())).dtype
    return (f"{s['world']} ranks, {dtype} model, ZeroRedundancyOptimizer(groups, tt.optim.AdamW, "
            f"stage={s['stage']}, lr={OPTIONS['lr']}, betas={tuple(OPTIONS['betas'])}) over "
            f"the MLP {WIDTHS} (weights decay {OPTIONS['weight_decay']}, biases do not), a "
            f"batch of 4 per rank, {STEPS} steps")


def run(submission: Any, s: dict[str, Any]) -> list[dict[str, Any]]:
    got = submission.call("distributed_zero.train", s)
    names = list(s["weights"])
    shape = {"losses": None, "grad_bytes": [0] * STEPS, "state_bytes": [0] * STEPS,
             "params": [{n: None for n in names}] * STEPS,
             "state": [{n: None for n in names}] * STEPS,
             "shard_dtypes": [{n: "" for n in names}] * STEPS, "trace": None}
    assert_conforms(got, {"ranks": [shape] * s["world"]}, what="distributed_zero.train")
    table.check_trace([r["trace"] for r in got["ranks"]])
    return got["ranks"]


def ids(cases: list[tuple[int, int]]) -> list[str]:
    return [f"stage{stage}-world{world}" for stage, world in cases]


@task("7.2")
@pytest.mark.parametrize(("stage", "world"), CASES, ids=ids(CASES))
def test_parameters_match_single_process_adamw(submission, stage, world):
    """Every rank's parameters after every step, as AdamW on the whole batch in one
    process (the gradient averaged over the ranks)."""
    s = spec(stage, world)
    ranks = run(submission, s)
    expected = oracle.zero_train(WIDTHS, s["weights"], s["batches"], OPTIONS)
    for rank, got in enumerate(ranks):
        assert_close(np.asarray(got["losses"]), expected["losses"][rank],
                     what=f"rank {rank}: its local losses", case=describe(s))
        for step in range(STEPS):
            for name in s["weights"]:
                assert_close(got["params"][step][name], expected["params"][step][name],
                             what=f"rank {rank}: {name} after step {step + 1}", case=describe(s))


@task("7.2")
@pytest.mark.parametrize(("stage", "world"), CASES, ids=ids(CASES))
def test_each_rank_holds_adams_state_for_its_chunk(submission, stage, world):
    """opt.optim's state for rank r's chunk of each parameter: PyTorch's exp_avg and
    exp_avg_sq of that parameter, flattened, padded to world equal chunks, chunk r (and the
    step count)."""
    s = spec(stage, world)
    ranks = run(submission, s)
    expected = oracle.zero_train(WIDTHS, s["weights"], s["batches"], OPTIONS)
    for rank, got in enumerate(ranks):
        for step in range(STEPS):
            for name in s["weights"]:
                state = got["state"][step][name]
                want = expected["state"][step][name]
                what = f"rank {rank}: opt.optim.state[<its chunk of {name}>]"
                assert_conforms(state, {"exp_avg": None, "exp_avg_sq": None, "step": None},
                                what=what)
                for key in ("exp_avg", "exp_avg_sq"):
                    assert_close(state[key], oracle.shard(want[key], world, rank),
                                 what=f"{what}[{key!r}] after step {step + 1}", case=describe(s))
                assert_close(np.asarray(state["step"], np.float64).reshape(()),
                             np.float64(want["step"]), check_dtype=False,
                             what=f"{what}['step'] after step {step + 1}", case=describe(s))


def _chunks_bytes(s: dict[str, Any], itemsize: int) -> int:
    return sum(itemsize * math.ceil(v.size / s["world"]) for v in s["weights"].values())


@task("7.2")
@pytest.mark.parametrize(("stage", "world"), CASES, ids=ids(CASES))
def test_memory_per_rank_is_a_shard(submission, stage, world):
    """A rank's optimizer state takes about 1/world of AdamW's whole state (two moments
    per element; padding allowed); at stage 2 the gradients a rank holds after backward
    are about 1/world of all gradients too."""
    s = spec(stage, world)
    ranks = run(submission, s)
    whole = sum(2 * 8 * v.size for v in s["weights"].values())
    share = 2 * _chunks_bytes(s, 8)
    for rank, got in enumerate(ranks):
        held = max(got["state_bytes"])
        if not 0 < held <= share:
            raise AssertionError(
                f"rank {rank} holds {held} bytes of optimizer state; AdamW's whole state is "
                f"{whole} bytes, a rank's share (its chunks, padded) {share} bytes\n"
                f"  case: {describe(s)}")
        if stage == 2:
            grads = max(got["grad_bytes"])
            limit = _chunks_bytes(s, 8)
            if not 0 < grads <= limit:
                raise AssertionError(
                    f"rank {rank} holds {grads} bytes of gradients after backward; at stage 2 "
                    f"a rank keeps only its chunks ({limit} bytes; all gradients take "
                    f"{whole // 2})\n  case: {describe(s)}")


@task("7.2")
@pytest.mark.parametrize(("stage", "world"), CASES, ids=ids(CASES))
def test_gradients_reduce_scattered_and_parameters_all_gathered(submission, stage, world):
    """Per step: reduce-scatters whose outputs add up to the averaged gradients (stage 2:
    during backward), all-gathers whose outputs are the updated parameters, each
    parameter once (padding allowed), and no all-reduce."""
    s = spec(stage, world)
    ranks = run(submission, s)
    expected = oracle.zero_train(WIDTHS, s["weights"], s["batches"], OPTIONS)
    total = sum(v.size for v in s["weights"].values())
    padded = sum(world * math.ceil(v.size / world) for v in s["weights"].values())
    for step in range(STEPS):
        grad_sum = sum(g.sum() for g in expected["grads"][step].values())
        param_sum = sum(p.sum() for p in expected["params"][step].values())
        scattered = 0.0
        for rank, got in enumerate(ranks):
            marks = {m["label"]: m["index"] for m in got["trace"]
                     if m["kind"] == "mark" and m.get("step") == step}
            window = table.between(got["trace"], marks["backward"], marks["stepped"] + 1)
            what = f"rank {rank}, step {step + 1}"
            if table.calls(window, ("all_reduce",)):
                raise AssertionError(f"{what}: an all-reduce; ZeRO reduce-scatters the "
                                     f"gradients instead\n  case: {describe(s)}")
            rs = table.calls(window, ("reduce_scatter",))
            ag = table.calls(window, ("all_gather",))
            for kind, events in (("reduce-scatter", rs), ("all-gather", ag)):
                numel = sum(e["numel"] for e in events)
                if not total <= numel <= padded:
                    raise AssertionError(
                        f"{what}: the {kind}s carry {numel} elements; every parameter once is "
                        f"{total} ({padded} padded)\n  case: {describe(s)}")
            if stage == 2 and any(e["index"] > marks["step"] for e in rs):
                raise AssertionError(f"{what}: a reduce-scatter after backward returned; at "
                                     f"stage 2 each gradient is reduce-scattered from its hook "
                                     f"during backward\n  case: {describe(s)}")
            gathered = sum(e["out"][0] for e in ag)
            if not np.isclose(gathered, param_sum, rtol=1e-9, atol=1e-9):
                raise AssertionError(f"{what}: the all-gathers' outputs sum to {gathered:.12g}, "
                                     f"the updated parameters to {param_sum:.12g}\n"
                                     f"  case: {describe(s)}")
            scattered += sum(e["out"][0] for e in rs)
        if not any(np.isclose(scattered, grad_sum * k, rtol=1e-9, atol=1e-9) for k in (1, world)):
            raise AssertionError(f"step {step + 1}: the reduce-scatters' outputs over all ranks "
                                 f"sum to {scattered:.12g}; the averaged gradients sum to "
                                 f"{grad_sum:.12g}\n  case: {describe(s)}")


@task("7.2")
@pytest.mark.parametrize("stage", [1, 2])
def test_float32_parameters_keep_float32_shards(submission, stage):
    """A float32 model: each shard (opt.shard(p), what opt.optim updates) is float32 like
    its parameter, so the optimizer state takes 1/world of float32 AdamW's, and the
    parameters after every step are PyTorch's float32 AdamW's (dtype included)."""
    s = spec(stage, 2, dtype=np.float32)
    ranks = run(submission, s)
    expected = oracle.zero_train(WIDTHS, s["weights"], s["batches"], OPTIONS)
    share = 2 * _chunks_bytes(s, 4)
    for rank, got in enumerate(ranks):
        for step in range(STEPS):
            for name in s["weights"]:
                assert_equal(got["shard_dtypes"][step][name], "float32",
                             what=f"rank {rank}: opt.shard({name}).dtype after step {step + 1} "
                                  f"({name} is float32)", case=describe(s))
                assert_close(got["params"][step][name], expected["params"][step][name],
                             what=f"rank {rank}: {name} after step {step + 1}", case=describe(s))
        held = max(got["state_bytes"])
        if not 0 < held <= share:
            raise AssertionError(
                f"rank {rank} holds {held} bytes of optimizer state; a rank's share of float32 "
                f"AdamW's state (its chunks, padded) is {share} bytes\n  case: {describe(s)}")


def _check_training(ranks: list[dict[str, Any]], s: dict[str, Any], members: list[int],
                    case: str) -> None:
    """The ranks ``members`` (one process group, in group-rank order): their losses,
    parameters and their chunks' AdamW state after every step, as AdamW in one process on
    the group's batches."""
    batches = [[per_rank[r] for r in members] for per_rank in s["batches"]]
    expected = oracle.zero_train(WIDTHS, s["weights"], batches, OPTIONS)
    for place, rank in enumerate(members):
        label = f"rank {rank} (group rank {place}): opt.optim.state[<its chunk of {{}}>]"
        _check_rank_steps(ranks[rank], expected, s, rank, place, len(members), case,
                          label.format,
                          lambda name, key, step, label=label: f"{label.format(name)}[{key!r}] "
                                                               f"after step {step + 1}")


def _check_rank_steps(got: dict[str, Any], expected: dict[str, Any], s: dict[str, Any],
                      rank: int, place: int, size: int, case: str,
                      state_what: Callable[[str], str], key_what: Callable[[str, str, int], str],
                      ) -> None:
    """Rank ``rank``, ``place`` of the ``size`` ranks of its group (``expected``: the
    group's ``oracle.zero_train``): its local losses, and after every step its parameters
    and AdamW's state (exp_avg, exp_avg_sq) for its chunk of each; ``state_what(name)`` and
    ``key_what(name, key, step)`` name the state in the messages."""
    assert_close(np.asarray(got["losses"]), expected["losses"][place],
                 what=f"rank {rank}: its local losses", case=case)
    for step in range(STEPS):
        for name in s["weights"]:
            assert_close(got["params"][step][name], expected["params"][step][name],
                         what=f"rank {rank}: {name} after step {step + 1}", case=case)
            state = got["state"][step][name]
            assert_conforms(state, {"exp_avg": None, "exp_avg_sq": None, "step": None},
                            what=state_what(name))
            for key in ("exp_avg", "exp_avg_sq"):
                want = expected["state"][step][name][key]
                assert_close(state[key], oracle.shard(want, size, place),
                             what=key_what(name, key, step), case=case)


@task("7.2")
@pytest.mark.parametrize("stage", [1, 2])
def test_process_group_whose_ranks_differ_from_the_global_ranks(submission, stage):
    """On a sub-group: 4 ranks cut into the groups [0, 2] and [1, 3], each rank's ZeRO over
    its group (``process_group=``), the group ranks not the global ranks: each group trains
    as AdamW on its own ranks' batches (group rank r owning chunk r), and every collective
    runs over the group."""
    groups = [[0, 2], [1, 3]]
    s = {**spec(stage, 4, key="process-group"), "groups": groups}
    case = describe(s) + f", process_group=new_group(...) of the groups {groups} (on a sub-group)"
    ranks = run(submission, s)
    for members in groups:
        _check_training(ranks, s, members, case)
        for rank in members:
            for event in table.calls(ranks[rank]["trace"]):
                if event["group"] != members:
                    raise AssertionError(
                        f"rank {rank}: a {event['kind']} over the ranks {event['group']}; with "
                        f"process_group=<group {members}> every collective runs over the group "
                        f"(on a sub-group)\n  case: {case}")


@task("7.2")
@pytest.mark.parametrize("stage", [1, 2])
def test_column_major_parameters_and_gradients(submission, stage):
    """With a column-major layout: the weights stored column-major (as a transposed array
    is) and every gradient handed on column-major; the shards are still the parameters'
    elements in row-major (logical) order, so the training is AdamW's as in one process."""
    s = {**spec(stage, 3, key="column-major"), "layout": "column-major"}
    case = (describe(s) + ", the weights stored column-major and their gradients column-major "
            "(with a column-major layout)")
    _check_training(run(submission, s), s, list(range(3)), case)


MPI_CASES = [(1, 2), (2, 3)]


@task("7.2")
@pytest.mark.parametrize(("stage", "world"), MPI_CASES,
                         ids=[f"{i}-mpi" for i in ids(MPI_CASES)])
def test_ranks_as_processes_match_single_process_adamw(submission, stage, world):
    """The ranks as separate processes (``-mpi``: forked by the grader, each with its own
    memory, the grader's collectives between them): every rank's parameters and its
    chunk's AdamW state after every step, as AdamW on the whole batch in one process."""
    s = {**spec(stage, world, seed=1), "processes": True}
    case = describe(s) + ", each rank its own process"
    ranks = run(submission, s)
    expected = oracle.zero_train(WIDTHS, s["weights"], s["batches"], OPTIONS)
    for rank, got in enumerate(ranks):
        _check_rank_steps(got, expected, s, rank, rank, world, case,
                          lambda name, rank=rank: f"rank {rank}: opt.optim.state[<its chunk of "
                                                  f"{name}>]",
                          lambda name, key, step, rank=rank: f"rank {rank}: {key} of its chunk "
                                                             f"of {name} after step {step + 1}")
