"""Task 1.1: Function.apply builds the graph."""

from __future__ import annotations

from hypothesis import given, settings

from graders.checks import assert_equal
from graders.oracle import programs as oracle
from graders.strategies.programs import describe, programs
from graders.suites._support import examples, program_reproducer, task


@task("1.1")
@settings(max_examples=examples(25))
@given(program=programs())
def test_requires_grad_propagation(submission, program):
    """requires_grad, is_leaf and grad_fn of every value match torch on random graphs."""
    got = submission.call("programs.graph", program)["values"]
    expected = oracle.graph(program)
    for i, (g, e) in enumerate(zip(got, expected, strict=False)):
        for key in ("requires_grad", "is_leaf", "has_grad_fn"):
            assert_equal(g[key], e[key], what=f"value v{i}: {key}", case=describe(program),
                         reproducer=program_reproducer(program, backward=False))


@task("1.1")
@settings(max_examples=examples(15))
@given(program=programs(all_require_grad=True))
def test_next_functions_point_at_producers(submission, program):
    """grad_fn.next_functions lead to each input's grad_fn, or its leaf's AccumulateGrad."""
    got = submission.call("programs.graph", program)["values"]
    n_leaves = len(program["leaves"])
    for i, (op, *args) in enumerate(program["ops"]):
        value = n_leaves + i
        operands = args[:1] if op in ("scale", "sin", "square", "sum", "exp") else args
        expected = [["leaf", a] if a < n_leaves else ["value", a] for a in operands]
        edges = got[value]["edges"] or []
        assert_equal(edges[: len(operands)], expected, what=f"v{value}.grad_fn.next_functions",
                     case=describe(program))


@task("1.1")
def test_nothing_recorded_without_requires_grad(submission):
    """An op whose inputs do not require grad records nothing: no grad_fn, still a leaf."""
    program = {"leaves": [[[1.0, 2.0], False], [[3.0, 4.0], False]],
               "ops": [["mul", 0, 1], ["sin", 2], ["add", 3, 0]]}
    got = submission.call("programs.graph", program)["values"]
    for i, v in enumerate(got):
        assert_equal([v["requires_grad"], v["is_leaf"], v["has_grad_fn"]], [False, True, False],
                     what=f"v{i} [requires_grad, is_leaf, has grad_fn]",
                     reproducer="import tinytrain as tt\na = tt.tensor([1., 2.])\n"
                                "b = a * tt.tensor([3., 4.])\nprint(b.requires_grad, b.grad_fn)")
