"""Task 7.4: a sequence-parallel LayerNorm region, on 2 and 4 ranks, against one process.

Each rank holds its part of the sequence of x; LayerNorm runs on it, the activations are
all-gathered along the sequence into a tensor-parallel region (the probes' own: each rank
multiplies by its columns of A and rows of B, so no task-7.3 code runs), the partial
results are reduce-scattered back to sequence parts, and the residual is added. Every
rank's part of the output and of x's gradient, the LayerNorm gradients (after
``allreduce_sequence_parallel_grads``) and the parts of A's and B's gradients must be
PyTorch's (float64 default tolerance). Communication: an all-gather and a
reduce-scatter of the whole activations in forward and in backward, which move what one
all-reduce of them would (ring volumes from the collective table); then the LayerNorm
gradients summed over the ranks (all-reduces of 2C elements in all). Dropout is left out:
its random masks cannot be compared with torch's.

The sequence-parallel branches of the tensor-parallel layers (``ColumnParallelLinear`` and
``RowParallelLinear`` with ``sequence_parallel=True``) are graded in Megatron's MLP block,
with the probes' own copy of task 7.3's parts of those layers (their weights cut and the
local product), so 7.3's code does not run: on 2 ranks, and on 4 ranks in two
tensor-parallel groups of 2 (ranks 0, 2 and 1, 3) that get different inputs, so that every
collective must run over the layer's group, not the whole world.
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

BATCH, WIDTH = 3, 6  # the batch differs from the sequence length: the right dim is split


def prepare(world: int) -> dict[str, Any]:
    rng = case_rng(10 + world, "7.4 region", world)  # seed 0: today's values
    steps, hidden = 2 * world, 2 * world
    return {"world": world, "x": rng.uniform(-1, 1, (BATCH, steps, WIDTH)),
            "grad_output": rng.uniform(-1, 1, (BATCH, steps, WIDTH)),
            "ln": {"weight": rng.uniform(0.5, 1.5, WIDTH), "bias": rng.uniform(-0.5, 0.5, WIDTH)},
            "A": rng.uniform(-0.5, 0.5, (WIDTH, hidden)), "B": rng.uniform(-0.5, 0.5, (hidden, WIDTH))}


def describe(spec: dict[str, Any]) -> str:
    return (f"{spec['world']} ranks, x of shape {list(spec['x'].shape)} split along the "
            "sequence: out = x + reduce_scatter_to_sequence_parallel_region(tanh("
            "gather_from_sequence_parallel_region(LayerNorm(x)) @ A_r) @ B_r)")


def run(submission: Any, spec: dict[str, Any]) -> dict[str, Any]:
    got = submission.call("distributed_tp.sequence_parallel_block", spec)
    rank = {k: None for k in ("output", "input_grad", "ln_weight_grad", "ln_bias_grad",
                              "A_grad", "B_grad")}
    assert_conforms(got, {"ranks": [rank] * spec["world"], "trace": [None] * spec["world"]},
                    what="distributed_tp.sequence_parallel_block")
    table.check_trace(got["trace"])
    return got


@task("7.4")
@pytest.mark.parametrize("world", [2, 4])
def test_sequence_parallel_region_matches_one_process(submission, world):
    """Each rank's part of the output and of x's gradient, the LayerNorm gradients summed
    over the ranks, and each rank's part of A's and B's gradients."""
    spec = prepare(world)
    got = run(submission, spec)
    expected = oracle.sequence_parallel_block(spec["x"], spec["ln"], spec["A"], spec["B"],
                                              spec["grad_output"])
    for rank, result in enumerate(got["ranks"]):
        for key, axis in (("output", 1), ("input_grad", 1), ("A_grad", 1), ("B_grad", 0)):
            assert_close(result[key], oracle.split(expected[key], world, rank, axis),
                         what=f"rank {rank}: its part of {key}", case=describe(spec))
        for key in ("ln_weight_grad", "ln_bias_grad"):
            assert_close(result[key], expected[key], what=f"rank {rank}: {key} (after "
                         "allreduce_sequence_parallel_grads)", case=describe(spec))


@task("7.4")
@pytest.mark.parametrize("world", [2, 4])
def test_sequence_parallel_moves_an_all_reduces_bytes_in_two_halves(submission, world):
    """Forward and backward: one all-gather and one reduce-scatter of the whole activations
    (no all-reduce), as many bytes as one all-reduce would move; then the LayerNorm
    gradients all-reduced."""
    spec = prepare(world)
    got = run(submission, spec)
    full = spec["x"].size
    all_reduce_bytes = table.BY_NAME["all_reduce"].bytes_sent(full * 8, world)
    for rank in range(world):
        trace = got["trace"][rank]
        marks = {m["label"]: m["index"] for m in trace if m["kind"] == "mark"}
        for phase, start, stop in (("forward", "forward", "backward"),
                                   ("backward", "backward", "sync")):
            calls = table.calls(table.between(trace, marks[start], marks[stop]))
            assert_equal(sorted((e["kind"], e["numel"]) for e in calls),
                         [("all_gather", full), ("reduce_scatter", full)],
                         what=f"rank {rank}: the collectives in {phase} (kind, elements)",
                         case=describe(spec))
            moved = table.bytes_sent(calls)
            assert_close(np.array(moved), np.array(all_reduce_bytes), rtol=1e-12,
                         what=f"rank {rank}: bytes sent in {phase} (ring algorithms)",
                         case=describe(spec), against="an all-reduce of the activations")
        sync = table.calls(table.between(trace, marks["sync"], marks["done"]))
        assert_equal(({e["kind"] for e in sync}, sum(e["numel"] for e in sync)),
                     ({"all_reduce"}, 2 * WIDTH),
                     what=f"rank {rank}: summing the LayerNorm gradients (kinds, elements)",
                     case=describe(spec))


HIDDEN = 8  # fc1's output features, split over the tensor-parallel group
LAYER_GROUPS = {"world2": (2, [[0, 1]]), "world4-two-groups": (4, [[0, 2], [1, 3]])}


def prepare_layers(world: int, groups: list[list[int]]) -> dict[str, Any]:
    rng = case_rng(20 + world, "7.4 layers", world, str(groups))
    steps = 2 * len(groups[0])
    shape = (BATCH, steps, WIDTH)
    return {"world": world, "groups": groups,
            "x": [rng.uniform(-1, 1, shape) for _ in groups],
            "grad_output": [rng.uniform(-1, 1, shape) for _ in groups],
            "ln": {"weight": rng.uniform(0.5, 1.5, WIDTH), "bias": rng.uniform(-0.5, 0.5, WIDTH)},
            "fc1_weight": rng.uniform(-0.5, 0.5, (HIDDEN, WIDTH)),
            "fc1_bias": rng.uniform(-0.5, 0.5, HIDDEN),
            "fc2_weight": rng.uniform(-0.5, 0.5, (WIDTH, HIDDEN)),
            "fc2_bias": rng.uniform(-0.5, 0.5, WIDTH)}


def describe_layers(spec: dict[str, Any]) -> str:
    return (f"{spec['world']} ranks in the tensor-parallel groups {spec['groups']}, each group "
            f"its own x of shape {list(spec['x'][0].shape)}: x_r = "
            "scatter_to_sequence_parallel_region(x, group); out_r = x_r + RowParallelLinear("
            "fc2, group, sequence_parallel=True)(tanh(ColumnParallelLinear(fc1, group, "
            "sequence_parallel=True)(LayerNorm(x_r)))); then allreduce_sequence_parallel_grads("
            "[ln.weight, ln.bias, row.bias], group)")


LAYER_RESULTS = ("output", "input_grad", "ln_weight_grad", "ln_bias_grad", "fc1_weight_grad",
                 "fc1_bias_grad", "fc2_weight_grad", "fc2_bias_grad")
# how rank r of a group holds each result of its group's one-process run: its part along
# this axis (None: the whole)
LAYER_PARTS = {"output": 1, "input_grad": None, "ln_weight_grad": None, "ln_bias_grad": None,
               "fc1_weight_grad": 0, "fc1_bias_grad": 0, "fc2_weight_grad": 1,
               "fc2_bias_grad": None}


@task("7.4")
@pytest.mark.parametrize("name", list(LAYER_GROUPS))
def test_sequence_parallel_layers_match_one_process(submission, name):
    """The tensor-parallel Linear layers' sequence-parallel branches (all-gather into a
    column-parallel layer, reduce-scatter out of a row-parallel one) over the layer's group:
    each rank's part of its group's output and gradients."""
    world, groups = LAYER_GROUPS[name]
    spec = prepare_layers(world, groups)
    got = submission.call("distributed_tp.sequence_parallel_layers", spec)
    assert_conforms(got, {"ranks": [dict.fromkeys(LAYER_RESULTS)] * world,
                          "trace": [None] * world},
                    what="distributed_tp.sequence_parallel_layers")
    table.check_trace(got["trace"])
    weights = {k: spec[k] for k in ("fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias")}
    for index, members in enumerate(groups):
        expected = oracle.sequence_parallel_layers(spec["x"][index], spec["ln"], weights,
                                                   spec["grad_output"][index])
        for place, rank in enumerate(members):
            result = got["ranks"][rank]
            for key in LAYER_RESULTS:
                axis = LAYER_PARTS[key]
                want = expected[key] if axis is None else oracle.split(
                    expected[key], len(members), place, axis)
                part = "" if axis is None else f"its part ({place} of {len(members)}) of "
                assert_close(result[key], want, what=f"rank {rank}: {part}{key}",
                             case=describe_layers(spec))
