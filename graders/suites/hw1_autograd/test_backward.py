"""Task 1.2: backward (topological order, sums over paths, accumulation, errors)."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from graders.checks import assert_close, assert_equal, assert_raises_like
from graders.oracle import programs as oracle
from graders.strategies.programs import describe, programs
from graders.suites._support import examples, literal, program_reproducer, task

small_vectors = arrays(np.float64, st.integers(1, 5), elements=st.floats(-1.5, 1.5))


def _check_grads(got, expected, program, calls=1):
    for i, (g, e) in enumerate(zip(got, expected, strict=False)):
        assert_close(g, e, what=f"x{i}.grad", case=describe(program),
                     reproducer=program_reproducer(program, calls))


@task("1.2")
@settings(max_examples=examples(20))
@given(x=small_vectors)
def test_worked_example(submission, x):
    """The course's example: y = x * exp(x^2) has dy/dx = exp(x^2) * (1 + 2x^2)."""
    got = submission.call("autograd.worked_example", x)
    t = torch.tensor(x, requires_grad=True)
    (t * torch.exp(t * t)).sum().backward()
    reproducer = (f"import tinytrain as tt\nx = tt.tensor({literal(x)}, dtype=tt.float64, "
                  "requires_grad=True)\n(x * (x * x).exp()).sum().backward()\nprint(x.grad)")
    assert_close(got["grad"], t.grad.numpy(), what="x.grad", case=f"x = {literal(x)}",
                 reproducer=reproducer)
    assert_close(got["grad"], np.exp(x * x) * (1 + 2 * x * x), what="x.grad vs the formula",
                 case=f"x = {literal(x)}", reproducer=reproducer)


@task("1.2")
@settings(max_examples=examples(30))
@given(program=programs())
def test_random_graphs(submission, program):
    """Leaf gradients match torch on random graphs with branches and reused values."""
    got = submission.call("programs.backward", program)
    _check_grads(got["grads"], oracle.leaf_grads(program), program)


@task("1.2")
@settings(max_examples=examples(10))
@given(program=programs(max_ops=4))
def test_each_node_runs_once_after_its_consumers(submission, program):
    """Every node's backward runs exactly once, after all nodes that feed it a gradient."""
    got = submission.call("programs.backward", program)
    n_leaves = len(program["leaves"])
    labels = [f"v{n_leaves + i}" for i in range(len(program["ops"]))]
    reachable = _nodes_needing_backward(program)
    calls = got["calls"]
    for label in labels:
        if label in reachable:
            assert_equal(calls.count(label), 1, what=f"number of backward calls of {label}",
                         case=describe(program))
    position = {label: calls.index(label) for label in labels if label in calls}
    for i, (op, *args) in enumerate(program["ops"]):
        consumer = f"v{n_leaves + i}"
        operands = args[:1] if op == "scale" else args
        for a in operands:
            producer = f"v{a}"
            if producer in position and consumer in position:
                assert position[consumer] < position[producer], (
                    f"backward of {producer} ran before backward of {consumer}, which sends "
                    f"it a gradient (a node must wait for all its consumers)\n"
                    f"  case: {describe(program)}\n  order: {calls}")


def _nodes_needing_backward(program):
    """Labels of op values that depend on a leaf requiring grad."""
    n_leaves = len(program["leaves"])
    needs = [bool(rg) for _, rg in program["leaves"]]
    for op, *args in program["ops"]:
        operands = args[:1] if op == "scale" else args
        needs.append(any(needs[a] for a in operands))
    return {f"v{i}" for i in range(n_leaves, len(needs)) if needs[i]}


@task("1.2")
@settings(max_examples=examples(10))
@given(program=programs(max_ops=5), calls=st.integers(2, 3))
def test_leaf_grads_accumulate_across_calls(submission, program, calls):
    """Calling backward again (on a new forward) adds into .grad instead of replacing it."""
    got = submission.call("programs.backward", program, calls=calls, rebuild=True)
    _check_grads(got["grads"], oracle.leaf_grads(program, calls), program, calls)


@task("1.2")
@settings(max_examples=examples(10))
@given(program=programs(max_ops=5))
def test_retain_graph_allows_a_second_backward(submission, program):
    """backward(retain_graph=True) keeps saved tensors: a second pass doubles the grads."""
    got = submission.call("programs.backward", program, calls=2, retain_graph=True)
    expected = [None if g is None else 2 * g for g in oracle.leaf_grads(program)]
    _check_grads(got["grads"], expected, program, 2)


@task("1.2")
def test_non_leaf_grad_stays_none(submission):
    """Only leaves get .grad: intermediate values keep .grad None (without retain_grad)."""
    program = {"leaves": [[np.array([0.5, -1.0]), True]],
               "ops": [["sin", 0], ["mul", 1, 0], ["sum", 2]]}
    got = submission.call("programs.backward", program)
    assert_equal(got["non_leaf_has_grad"], [False, False, False],
                 what="which non-leaf values have a .grad")
    _check_grads(got["grads"], oracle.leaf_grads(program), program)


@task("1.2")
def test_backward_errors_match_torch(submission):
    """PyTorch's errors: backward twice, non-scalar implicit grad, no grad to compute."""
    got = submission.call("autograd.backward_errors")
    assert_raises_like(got["twice"], "RuntimeError", what="a second backward without retain_graph",
                       contains=("backward through the graph a second time",))
    assert_raises_like(got["non_scalar"], "RuntimeError", what="backward() of a non-scalar",
                       contains=("grad can be implicitly created only for scalar outputs",))
    assert_raises_like(got["no_grad_tensor"], "RuntimeError",
                       what="backward() of a tensor that does not require grad",
                       contains=("does not require grad",))
    assert_raises_like(got["one_element"], None, what="backward() of a one-element [[x]] tensor")


@task("1.2")
@settings(max_examples=examples(10))
@given(data=st.data())
def test_explicit_gradient_argument(submission, data):
    """y.backward(g) for a non-scalar y computes the vector-Jacobian product g^T dy/dx."""
    x = data.draw(small_vectors)
    g = data.draw(arrays(np.float64, x.shape, elements=st.floats(-2, 2)))
    got = submission.call("autograd.explicit_gradient", x, g)
    t = torch.tensor(x, requires_grad=True)
    (torch.sin(t) * t).backward(torch.tensor(g))
    assert_close(got["grad"], t.grad.numpy(), what="x.grad",
                 case=f"x = {literal(x)}, g = {literal(g)}")


@task("1.2")
@settings(max_examples=examples(5))
@given(data=st.data())
def test_backward_from_several_roots(submission, data):
    """tt.autograd.backward([a, b], [ga, gb]) sums both roots' contributions."""
    x = data.draw(small_vectors)
    g1 = data.draw(arrays(np.float64, x.shape, elements=st.floats(-2, 2)))
    g2 = data.draw(arrays(np.float64, x.shape, elements=st.floats(-2, 2)))
    got = submission.call("autograd.multiple_roots", x, g1, g2)
    t = torch.tensor(x, requires_grad=True)
    torch.autograd.backward([torch.sin(t), t * t], [torch.tensor(g1), torch.tensor(g2)])
    assert_close(got["grad"], t.grad.numpy(), what="x.grad", case=f"x = {literal(x)}")
