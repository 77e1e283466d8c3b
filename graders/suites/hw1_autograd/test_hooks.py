"""Task 1.4: retain_grad, tensor hooks, detach."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from graders.checks import assert_close, assert_equal, assert_raises_like
from graders.suites._support import examples, literal, task

vectors = arrays(np.float64, st.integers(1, 4), elements=st.floats(-1.5, 1.5))


@task("1.4")
@settings(max_examples=examples(10))
@given(x=vectors, k=st.sampled_from([0.5, -2.0]), calls=st.integers(1, 2))
def test_retain_grad(submission, x, k, calls):
    """retain_grad() keeps a non-leaf's .grad (accumulated over calls); others stay None."""
    got = submission.call("autograd.retain_grad", x, k, calls)
    t = torch.tensor(x, requires_grad=True)
    a = t * 3.0
    a.retain_grad()
    b = a * k
    out = b.sum()
    for _ in range(calls):
        out.backward(retain_graph=True)
    case = (f"x = {literal(x)}, a = 3 * x with a.retain_grad(), b = {k} * a, "
            f"{calls} call(s) of b.sum().backward(retain_graph=True)")
    assert_close(got["a_grad"], a.grad.numpy(), what="a.grad", case=case)
    if calls == 1:  # accumulating leaf grads over calls belongs to task 1.2
        assert_close(got["x_grad"], t.grad.numpy(), what="x.grad", case=case)
    assert_equal(got["b_grad_is_none"], True, what="b.grad is None (b did not retain_grad)")
    assert_equal([got["a_retains"], got["b_retains"], got["leaf_retains"]], [True, False, False],
                 what="[a.retains_grad, b.retains_grad, x.retains_grad]")
    assert_raises_like(got["leaf_retain"], None, what="retain_grad() on a leaf (a no-op)")


@task("1.4")
@settings(max_examples=examples(10))
@given(x=vectors, factor=st.sampled_from([0.0, 2.0, -3.0]))
def test_hooks_see_and_replace_gradients(submission, x, factor):
    """A non-leaf hook's return value replaces the gradient that flows on; a leaf hook
    sees the gradient once, before it is accumulated."""
    got = submission.call("autograd.hooks", x, factor)
    t = torch.tensor(x, requires_grad=True)
    seen_leaf, seen_mid = [], []
    t.register_hook(lambda g: seen_leaf.append(g.clone()))
    mid = torch.sin(t)
    mid.register_hook(lambda g: (seen_mid.append(g.clone()), g * factor)[1])
    (mid * 2.0).sum().backward()
    case = f"x = {literal(x)}; mid = sin(x) with a hook returning grad * {factor}; y = 2 * mid"
    assert_equal(len(got["mid_calls"]), 1, what="calls of the hook on mid", case=case)
    assert_equal(len(got["leaf_calls"]), 1, what="calls of the hook on x", case=case)
    assert_close(got["mid_calls"][0], seen_mid[0].numpy(), what="gradient the mid hook saw",
                 case=case)
    assert_close(got["leaf_calls"][0], seen_leaf[0].numpy(), what="gradient the x hook saw",
                 case=case)
    assert_close(got["grad"], t.grad.numpy(), what="x.grad", case=case)


@task("1.4")
@settings(max_examples=examples(5))
@given(x=vectors)
def test_leaf_hook_result_accumulated_and_removable(submission, x):
    """What a leaf hook returns is accumulated; handle.remove() unregisters the hook."""
    got = submission.call("autograd.hook_replaces_leaf_grad", x)
    expected = np.cos(x)
    assert_close(got["hooked"], 10 * expected, what="x.grad with a hook returning grad * 10",
                 case=f"x = {literal(x)}, loss = sin(x).sum()")
    assert_close(got["after_remove"], expected, what="x.grad after handle.remove()",
                 case=f"x = {literal(x)}, loss = sin(x).sum()")
    assert_raises_like(got["no_grad_tensor"], "RuntimeError",
                       what="register_hook on a tensor that does not require grad",
                       contains=("doesn't require gradient",))


@task("1.4")
@settings(max_examples=examples(5))
@given(x=vectors)
def test_detach(submission, x):
    """detach() shares storage and version counter, has no history, and stops gradients."""
    got = submission.call("autograd.detach", x)
    assert_equal([got["requires_grad"], got["is_leaf"], got["grad_fn_none"]], [False, True, True],
                 what="[requires_grad, is_leaf, grad_fn is None] of the detached tensor")
    assert_equal([got["shares_storage"], got["shares_version"]], [True, True],
                 what="[shares storage, shares the version counter] with the original")
    assert_close(got["values"], np.sin(x), what="detached values")
    assert_close(got["grad"], np.sin(x), what="x.grad of sum(x * sin(x).detach())",
                 case=f"x = {literal(x)}")
