"""Tasks 7.3 and 7.4: Megatron's communication operators, one entry each in the mapping
table (``graders/oracle/distributed.py``, ``MAPPINGS``): on 2 and 3 ranks with a
different input per rank, every rank's output and input gradient must be what the
operator means (identity, sum over ranks, this rank's chunk, the chunks put together;
along the features for tensor parallelism, along the sequence for sequence parallelism;
exact up to float64 sums), and it must communicate in forward and in backward exactly
the collectives of its definition (one call each, of the full tensor's size)."""

from __future__ import annotations

from typing import Any

import pytest

from graders.checks import assert_close, assert_conforms, assert_equal
from graders.oracle import distributed as oracle
from graders.oracle import distributed_collectives as table
from graders.suites._seed import case_seed
from graders.suites._support import task

CASES = [pytest.param(info, world, id=f"{info.name}-world{world}", marks=task(info.task))
         for info in oracle.MAPPINGS for world in (2, 3)]


def run(submission: Any, info: oracle.MappingInfo, world: int) -> tuple[dict, dict]:
    case = oracle.mapping_case(info, world, seed=case_seed(world, info.name, world))
    got = submission.call("distributed_tp.mapping", info.path, world, case["inputs"],
                          case["grad_outputs"])
    assert_conforms(got, {"ranks": [{"output": None, "input_grad": None}] * world,
                          "trace": [None] * world}, what=f"distributed_tp.mapping({info.name})")
    table.check_trace(got["trace"])
    return got, case


def describe(info: oracle.MappingInfo, world: int) -> str:
    shape = list(info.input_shape(world))
    return (f"{world} ranks, y = tt.distributed.{info.path}(x) with x of shape {shape} "
            "(different on each rank), then y.backward(g)")


@pytest.mark.parametrize(("info", "world"), CASES)
def test_operator_forward_and_backward(submission, info, world):
    """Each rank's output and input gradient."""
    got, case = run(submission, info, world)
    for rank in range(world):
        result = got["ranks"][rank]
        assert_close(result["output"], case["outputs"][rank], rtol=1e-12, atol=1e-12,
                     what=f"rank {rank}: the output", case=describe(info, world), against="the "
                     "operator's definition")
        assert_close(result["input_grad"], case["input_grads"][rank], rtol=1e-12, atol=1e-12,
                     what=f"rank {rank}: x.grad", case=describe(info, world),
                     against="the operator's definition")


@pytest.mark.parametrize(("info", "world"), CASES)
def test_operator_communication(submission, info, world):
    """The collectives in forward and in backward, as the operator's definition says (an
    identity communicates nothing), each of the whole tensor's elements."""
    got, _ = run(submission, info, world)
    full = 2 * (2 * world) * (3 * world)  # (batch, sequence, features), unsharded
    for rank in range(world):
        trace = got["trace"][rank]
        marks = {m["label"]: m["index"] for m in trace if m["kind"] == "mark"}
        for phase, start, stop, expected in (
                ("forward", marks["forward"], marks["backward"], info.forward_calls),
                ("backward", marks["backward"], marks["done"], info.backward_calls)):
            calls = table.calls(table.between(trace, start, stop))
            assert_equal([(e["kind"], e["numel"]) for e in calls],
                         [(kind, full) for kind in expected],
                         what=f"rank {rank}: the collectives in {phase} (kind, elements)",
                         case=describe(info, world))
