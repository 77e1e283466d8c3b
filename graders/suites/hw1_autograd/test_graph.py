"""Task 1.1: Function.apply builds the graph.

Programs mix the probes' own Functions: one float output, two outputs (``sincos``), a
float and an int64 output (``relu_mask``), an int64 output only (``positive``), so graph
attributes are graded on what torch's Function machinery does with each kind of output.
"""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from graders.checks import assert_close, assert_conforms, assert_equal
from graders.oracle import programs as oracle
from graders.probes.programs import MODES
from graders.strategies.programs import (
    describe,
    layout,
    needs_grad,
    operands,
    outputs,
    programs,
    reproducer,
    value_label,
)
from graders.suites._seed import reseeded, seeded_program, seeded_values
from graders.suites._support import examples, task

# fixed programs every grading runs: both outputs of a two-output Function consumed,
# an int64 output beside a float one, an int64 output alone
KEY_PROGRAMS = [
    {"leaves": [[np.array([0.5, -1.0, 2.0]), True], [np.array([1.5, 0.25, -0.5]), False]],
     "ops": [["sincos", 0], ["mul", 3, 1], ["add", 2, 4], ["relu_mask", 5], ["positive", 0],
             ["add", 6, 0], ["sum", 9]]},
]


def _observed_graph(submission, program, mode=None):
    """The graph probe's answer, checked for structure: one entry per value."""
    got = submission.call("programs.graph", program, mode)
    value = {"requires_grad": True, "is_leaf": True, "has_grad_fn": True,
             "same_node_as": None, "edges": None}
    n_values = len(program["leaves"]) + sum(len(outputs(op)) for op, *_ in program["ops"])
    assert_conforms(got, {"values": [value] * n_values}, what="the graph observation")
    return got["values"]


def _compare_attributes(got, expected, program, mode=None):
    during = "" if mode is None else f" (ops run under {mode})"
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        for key in ("requires_grad", "is_leaf", "has_grad_fn"):
            assert_equal(g[key], e[key], what=f"{value_label(program, i)}: {key}{during}",
                         case=describe(program),
                         reproducer=reproducer(program, backward=False, mode=mode))


# the grade-mode example: its values drawn from the grading seed when it runs
MODE_EXAMPLE = {"leaves": [[np.array([0.5, -1.0]), True]],
                "ops": [["sin", 0], ["mul", 1, 0], ["add", 2, 1], ["sum", 3]]}


def _with_key_programs(test):
    for program in reversed(KEY_PROGRAMS):
        test = example(program=program)(test)
    return test


@task("1.1")
@settings(max_examples=examples(25))
@given(program=programs(extended=True))
@_with_key_programs
def test_requires_grad_propagation(submission, program):
    """requires_grad, is_leaf and grad_fn of every value match torch on random graphs;
    integer outputs (indices, masks) never require grad nor get a grad_fn."""
    program = reseeded(program, KEY_PROGRAMS, "1.1 test_requires_grad_propagation")
    got = _observed_graph(submission, program)
    _compare_attributes(got, oracle.graph(program), program)


@task("1.1")
@settings(max_examples=examples(15))
@given(program=programs(all_require_grad=True, extended=True))
@_with_key_programs
def test_next_functions_point_at_producers(submission, program):
    """grad_fn.next_functions lead to each input's grad_fn and output number (which output
    of a two-output Function it was), or its leaf's AccumulateGrad; the outputs of one
    call share one grad_fn."""
    program = reseeded(program, KEY_PROGRAMS, "1.1 test_next_functions_point_at_producers")
    got = _observed_graph(submission, program)
    needs = needs_grad(program)
    n_leaves = len(program["leaves"])
    first_of = {}
    for first, (op, *_) in zip(layout(program), program["ops"], strict=True):
        for k in range(len(outputs(op))):
            first_of[first + k] = (first, k)
    for first, (op, *args) in zip(layout(program), program["ops"], strict=True):
        reads = operands(op, args)
        expected = []
        for a in reads:
            if a < n_leaves:
                expected.append(["leaf", a, 0] if needs[a] else ["none", None, 0])
            else:
                expected.append(["value", *first_of[a]] if needs[a] else ["none", None, 0])
        for k, kind in enumerate(outputs(op)):
            value = first + k
            if kind != "float":
                continue
            label = value_label(program, value)
            edges = got[value]["edges"]
            repro = reproducer(program, backward=False, edges=True)
            if not isinstance(edges, list) or len(edges) < len(reads):
                raise AssertionError(
                    f"{label}.grad_fn.next_functions: expected an entry for each of its "
                    f"{len(reads)} tensor input(s), got {edges!r}\n  case: {describe(program)}"
                    "\n  reproduce:\n" + "\n".join("    " + line for line in repro.splitlines()))
            assert_equal(edges[: len(reads)], expected,
                         what=f"{label}.grad_fn.next_functions ([kind, producer, output_nr] "
                              "per input)", case=describe(program), reproducer=repro)
            assert_equal(got[value]["same_node_as"], first,
                         what=f"{label}: the first value with the same grad_fn (the outputs "
                              f"of one call share one node)", case=describe(program),
                         reproducer=repro)


@task("1.1")
def test_nothing_recorded_without_requires_grad(submission):
    """An op whose inputs do not require grad records nothing: no grad_fn, still a leaf."""
    program = seeded_program({"leaves": [[[1.0, 2.0], False], [[3.0, 4.0], False]],
                              "ops": [["mul", 0, 1], ["sin", 2], ["add", 3, 0]]},
                             "1.1 nothing recorded")
    got = _observed_graph(submission, program)
    for i, v in enumerate(got):
        assert_equal([v["requires_grad"], v["is_leaf"], v["has_grad_fn"]], [False, True, False],
                     what=f"{value_label(program, i)} [requires_grad, is_leaf, has grad_fn]",
                     case=describe(program), reproducer=reproducer(program, backward=False))


@task("1.1")
@settings(max_examples=examples(12))
@given(program=programs(max_ops=5), mode=st.sampled_from(sorted(MODES)))
@example(program=MODE_EXAMPLE, mode="inference_mode+enable_grad")
def test_recording_follows_grad_mode(submission, program, mode):
    """Nothing is recorded with grad mode off, nor in inference mode even with grad mode
    switched back on inside it (torch's operators under inference_mode + enable_grad
    record nothing). The probe sets the mode flags directly, so the context managers
    (1.3) are not used.

    The programs use only ops torch has operators for: a torch.autograd.Function applied
    under inference_mode + enable_grad does record (an inference tensor with a grad_fn
    that backward then refuses), a quirk tinytrain does not copy."""
    program = reseeded(program, [MODE_EXAMPLE], "1.1 grad mode")
    got = _observed_graph(submission, program, mode)
    _compare_attributes(got, oracle.graph(program, mode), program, mode)


@task("1.1")
@settings(max_examples=examples(10))
@given(program=programs(extended=True))
@_with_key_programs
def test_recorded_graph_carries_gradients(submission, program):
    """The graph the submission records (next_functions, output numbers, the input and
    output metadata the engine reads) carries torch's gradients to the leaves when the
    probes' own copy of the 1.2 engine runs backward on it."""
    program = reseeded(program, KEY_PROGRAMS, "1.1 test_recorded_graph_carries_gradients")
    got = submission.call("programs.backward_of_recorded", program)
    n_leaves = len(program["leaves"])
    assert_conforms(got, {"grads": [None] * n_leaves}, what="the observation")
    expected = oracle.leaf_grads(program)
    for i, (g, e) in enumerate(zip(got["grads"], expected, strict=True)):
        if e is None or g is None:
            assert_equal(g is None, e is None, what=f"x{i}.grad is None", case=describe(program))
        else:
            assert_close(g, e, what=f"x{i}.grad (backward by the probes' engine on the "
                         "recorded graph)", case=describe(program),
                         reproducer=reproducer(program))


@task("1.1")
def test_record_result_and_needs_input_grad(submission):
    """record returns True exactly when it recorded (grad mode on, not inference mode, an
    input that requires grad): Function.apply packs saved tensors only then; and
    ctx.needs_input_grad is a bool per argument, False for a number (as torch's)."""
    got = submission.call("programs.record_results",
                          seeded_values([1.0, 2.0, 3.0, 4.0, 1.0], "1.1 record results"))
    modes = ["default", *sorted(MODES)]
    assert_conforms(got, {"results": {m: ["", True] for m in modes},
                          "no_input_requires_grad": ["", True], "needs_input_grad": [True, True]},
                    what="the observation")
    for mode in modes:
        grad_on, inference_on = MODES.get(mode, (True, False))
        x = torch.ones(2, requires_grad=True)
        with torch.inference_mode(inference_on), torch.set_grad_enabled(grad_on):
            expected = (x * torch.ones(2)).grad_fn is not None  # torch records this call
        assert_equal(got["results"][mode], ["bool", expected],
                     what=f"record(ctx, (x, y), outputs) with x.requires_grad, grad mode "
                          f"{mode}: [type, value] of what it returns")
    assert_equal(got["no_input_requires_grad"], ["bool", False],
                 what="record(...) when no input requires grad: [type, value]")
    assert_equal(got["needs_input_grad"], [True, False],
                 what="grad_fn.needs_input_grad of Scale.apply(x, 3.0) with x.requires_grad "
                      "(torch: (True, False))")
