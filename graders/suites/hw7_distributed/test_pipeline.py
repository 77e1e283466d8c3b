"""Task 7.5: pipeline parallelism, GPipe and 1F1B, on 2 to 4 stages (ranks as threads),
against the whole MLP in one process.

The probes' MLP (float64) is cut into stages of consecutive layers; the batch into
micro-batches. After each pipelined step, every stage's parameter gradients must be
PyTorch's gradients of the mean of the micro-batch losses (float64 default tolerance),
and the last stage's losses each micro-batch's; two steps with the probes' SGD between
them. The schedule, from the probes' instrumentation of each stage: the order of its
micro-batch forwards and backwards must be GPipe's (all F, then all B) or 1F1B's (stage
i: min(stages - i - 1, n) forwards, then F and B alternating, then the remaining B).
Memory: the bytes a stage's graph holds for backward (saved-tensor hooks) peak at the
activations of as many micro-batches as the schedule keeps in flight: all n for GPipe,
at most (stages - i) for 1F1B. Communication: each stage boundary carries one
activation forward and one gradient back per micro-batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from graders.checks import assert_close, assert_conforms, assert_equal
from graders.oracle import distributed as oracle
from graders.oracle import distributed_collectives as table
from graders.suites._seed import case_rng
from graders.suites._support import task

WIDTHS = [4, 6, 6, 5, 6, 3]  # five Linear layers
STAGES = {2: [[0, 1, 2], [3, 4]], 3: [[0, 1], [2, 3], [4]], 4: [[0, 1], [2], [3], [4]]}
CASES = [(schedule, world, n) for schedule in ("gpipe", "1f1b")
         for world, n in ((2, 4), (3, 6), (4, 4))]
LR = 0.1


def spec(schedule: str, world: int, n: int, steps: int = 2) -> dict[str, Any]:
    # the weights and batches come from the grading seed (seed 0: today's values)
    rng = case_rng(world * 10 + n, "7.5", schedule, world, n, steps)
    batch = 2 * n
    return {"world": world, "widths": WIDTHS, "stages": STAGES[world],
            "weights": oracle.mlp_weights(WIDTHS, rng), "schedule": schedule,
            "n_microbatches": n, "lr": LR,
            "steps": [(rng.uniform(-1, 1, (batch, WIDTHS[0])),
                       rng.uniform(-1, 1, (batch, WIDTHS[-1]))) for _ in range(steps)]}


def describe(s: dict[str, Any]) -> str:
    name = {"gpipe": "ScheduleGPipe", "1f1b": "Schedule1F1B"}[s["schedule"]]
    return (f"{s['world']} stages (layers {s['stages']} of the MLP {WIDTHS}), "
            f"{name}(stage, n_microbatches={s['n_microbatches']}, loss_fn=mse_loss), a batch "
            f"of {s['steps'][0][0].shape[0]}, {len(s['steps'])} steps (SGD lr {LR} between)")


def run(submission: Any, s: dict[str, Any]) -> list[dict[str, Any]]:
    got = submission.call("distributed_pp.train", s)
    steps = len(s["steps"])
    rank = {"orders": [""] * steps, "peaks": [0] * steps, "per_microbatch": 0,
            "losses": [None] * steps, "grads": [None] * steps, "trace": None}
    assert_conforms(got, {"ranks": [rank] * s["world"]}, what="distributed_pp.train")
    table.check_trace([r["trace"] for r in got["ranks"]])
    return got["ranks"]


def ids(cases: list[tuple[str, int, int]]) -> list[str]:
    return [f"{sched}-{world}stages-{n}microbatches" for sched, world, n in cases]


@task("7.5")
@pytest.mark.parametrize(("schedule", "world", "n"), CASES, ids=ids(CASES))
def test_pipeline_matches_one_process(submission, schedule, world, n):
    """Every stage's parameter gradients after each step, and the last stage's
    micro-batch losses."""
    s = spec(schedule, world, n)
    ranks = run(submission, s)
    expected = oracle.pipeline_train(WIDTHS, s["weights"], s["steps"], n, LR)
    for step in range(len(s["steps"])):
        assert_close(np.asarray(ranks[-1]["losses"][step], np.float64), expected["losses"][step],
                     what=f"last stage: the micro-batch losses of step {step + 1}",
                     case=describe(s))
        for rank, got in enumerate(ranks):
            grads = got["grads"][step]
            assert_conforms(grads, {f"fc{k}.{p}": None for k in s["stages"][rank]
                                    for p in ("weight", "bias")}, what=f"stage {rank}: gradients")
            for name, value in grads.items():
                assert_close(value, expected["grads"][step][name],
                             what=f"stage {rank}: {name}.grad after step {step + 1}",
                             case=describe(s))


@task("7.5")
@pytest.mark.parametrize(("schedule", "world", "n"), CASES, ids=ids(CASES))
def test_schedule_order_and_activation_memory(submission, schedule, world, n):
    """Each stage's order of micro-batch forwards (F) and backwards (B), and the peak
    bytes its graph holds: those of the micro-batches the schedule keeps in flight
    (GPipe: n; 1F1B: at most stages - i)."""
    s = spec(schedule, world, n)
    ranks = run(submission, s)
    for rank, got in enumerate(ranks):
        order = oracle.schedule_order(schedule, rank, world, n)
        for step in range(len(s["steps"])):
            assert_equal(got["orders"][step], order,
                         what=f"stage {rank}: the order of forward (F) and backward (B) "
                              f"micro-batch steps in step {step + 1}", case=describe(s))
        flight = oracle.in_flight(order)
        per = got["per_microbatch"]
        peak = max(got["peaks"])
        if not (per > 0 and peak <= flight * per * 1.001 + 64):
            raise AssertionError(
                f"stage {rank}: its graph held up to {peak} bytes for backward; one "
                f"micro-batch's forward saves {per} bytes and the schedule keeps at most "
                f"{flight} micro-batches in flight ({flight * per} bytes)\n  case: {describe(s)}")
        if schedule == "gpipe" and peak < n * per:
            raise AssertionError(
                f"stage {rank}: GPipe holds all {n} micro-batches' activations ({n * per} "
                f"bytes) before the first backward, but the peak was {peak} bytes\n"
                f"  case: {describe(s)}")


@task("7.5")
@pytest.mark.parametrize(("schedule", "world", "n"), CASES[:3], ids=ids(CASES[:3]))
def test_stages_exchange_one_activation_and_one_gradient_per_microbatch(
        submission, schedule, world, n):
    """Between stages i and i + 1, per step: n activations sent forward (the
    micro-batch's output of stage i) and n gradients sent back, each the size of a
    micro-batch's activation; nothing else."""
    s = spec(schedule, world, n, steps=1)
    ranks = run(submission, s)
    mb = s["steps"][0][0].shape[0] // n
    for rank, got in enumerate(ranks):
        data = [e for e in table.calls(got["trace"], ("send", "recv")) if e["tag"] == 0]
        expected = []
        if rank > 0:  # receives activations from the previous stage, sends gradients back
            width = WIDTHS[s["stages"][rank][0]]
            expected += [("recv", rank - 1, mb * width)] * n + [("send", rank - 1, mb * width)] * n
        if rank < world - 1:
            width = WIDTHS[s["stages"][rank][-1] + 1]
            expected += [("send", rank + 1, mb * width)] * n + [("recv", rank + 1, mb * width)] * n
        assert_equal(sorted((e["kind"], e["peer"], e["numel"]) for e in data), sorted(expected),
                     what=f"stage {rank}: the activations and gradients sent and received "
                          "(kind, peer, elements)", case=describe(s))
        others = table.calls(got["trace"], ("all_reduce", "all_gather", "reduce_scatter",
                                            "broadcast"))
        assert_equal(others, [], what=f"stage {rank}: collectives", case=describe(s))
