"""Task 1.4: retain_grad, tensor hooks, detach."""

from __future__ import annotations

import warnings

import numpy as np
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from graders.checks import assert_close, assert_conforms, assert_equal, assert_raises_like
from graders.checks.compare import literal
from graders.suites._seed import seeded_values
from graders.suites._support import examples, task

vectors = arrays(np.float64, st.integers(1, 4), elements=st.floats(-1.5, 1.5))
_RAISED = {"type": None, "message": ""}


@task("1.4")
@settings(max_examples=examples(10))
@given(x=vectors, k=st.sampled_from([0.5, -2.0]), calls=st.integers(1, 2))
def test_retain_grad(submission, x, k, calls):
    """retain_grad() keeps a non-leaf's .grad (accumulated over calls); others stay None."""
    got = submission.call("autograd.retain_grad", x, k, calls)
    assert_conforms(got, {"a_grad": None, "b_grad_is_none": True, "a_retains": True,
                          "b_retains": True, "x_grad": None, "leaf_retain": _RAISED,
                          "leaf_retains": True}, what="the observation")
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
    assert_conforms(got, {"grad": None, "leaf_calls": [None], "mid_calls": [None]},
                    what="the observation")
    t = torch.tensor(x, requires_grad=True)
    seen_leaf, seen_mid = [], []
    t.register_hook(lambda g: seen_leaf.append(g.clone()))
    mid = torch.sin(t)
    mid.register_hook(lambda g: (seen_mid.append(g.clone()), g * factor)[1])
    (mid * 2.0).sum().backward()
    case = f"x = {literal(x)}; mid = sin(x) with a hook returning grad * {factor}; y = 2 * mid"
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
    assert_conforms(got, {"hooked": None, "after_remove": None, "no_grad_tensor": _RAISED},
                    what="the observation")
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
    assert_conforms(got, {"requires_grad": True, "is_leaf": True, "grad_fn_none": True,
                          "shares_storage": True, "shares_version": True, "values": None,
                          "grad": None}, what="the observation")
    assert_equal([got["requires_grad"], got["is_leaf"], got["grad_fn_none"]], [False, True, True],
                 what="[requires_grad, is_leaf, grad_fn is None] of the detached tensor")
    assert_equal([got["shares_storage"], got["shares_version"]], [True, True],
                 what="[shares storage, shares the version counter] with the original")
    assert_close(got["values"], np.sin(x), what="detached values")
    assert_close(got["grad"], np.sin(x), what="x.grad of sum(x * sin(x).detach())",
                 case=f"x = {literal(x)}")


_STEP = st.one_of(
    st.sampled_from([0.5, -2.0, 10.0]).map(lambda k: ["mul", k]),
    st.sampled_from([1.0, -0.25]).map(lambda c: ["add", c]),
    st.just(["observe"]),
)
# hooks that change the hooks of their tensor while they run, or the gradient in place
_MUTATING_STEP = st.one_of(
    st.sampled_from([2.0, -0.5]).map(lambda k: ["remove_self", k]),
    st.sampled_from([3.0, -1.0]).map(lambda k: ["remove_next", k]),
    st.sampled_from([3.0, 0.5]).map(lambda k: ["register", k]),
    st.sampled_from([10.0, -2.0]).map(lambda k: ["inplace", k]),
)


def _torch_hook(seen, where, index, step, tensor, handles):
    def hook(g):
        seen.append([where, index, g.detach().numpy().copy()])
        kind = step[0]
        if kind == "inplace":
            g.mul_(step[1])
            return None
        if kind == "register":
            tensor.register_hook(_torch_hook(seen, where, 100 + index, ["mul", step[1]],
                                             tensor, handles))
            return None
        if kind in ("remove_self", "remove_next"):
            handle = handles.pop(index if kind == "remove_self" else index + 1, None)
            if handle is not None:
                handle.remove()
        if kind in ("mul", "remove_self", "remove_next"):
            return g * step[1]
        if kind == "add":
            return g + step[1]
        return None

    return hook


def _torch_hook_chain(x, mid_steps, leaf_steps, mid_op="sin", calls=1):
    t = torch.tensor(x, requires_grad=True)
    mid = t + 0.5 if mid_op == "add" else torch.sin(t)
    seen = []
    for where, tensor, steps in (("mid", mid, mid_steps), ("x", t, leaf_steps)):
        handles = {}
        for i, step in enumerate(steps):
            if step[0] == "retain":
                tensor.retain_grad()
            else:
                handles[i] = tensor.register_hook(_torch_hook(seen, where, i, step, tensor,
                                                              handles))
    out = (mid * 2.0).sum()
    for _ in range(calls):
        out.backward(retain_graph=True)
    with warnings.catch_warnings():  # .grad of a non-leaf that did not retain it
        warnings.simplefilter("ignore")
        mid_grad = mid.grad
    return {"seen": seen, "mid_grad": None if mid_grad is None else mid_grad.numpy(),
            "x_grad": t.grad.numpy(), "retains_grad": [mid.retains_grad, t.retains_grad]}


_STEP_TEXT = {
    "remove_self": "lambda g: (own_handle.remove(), g * {})[1]",
    "remove_next": "lambda g: (next_hooks_handle.remove(), g * {})[1]",
    "register": "lambda g: {name}.register_hook(lambda g: g * {})",
    "inplace": "lambda g: g.mul_({})",
}


def _describe_steps(steps, name):
    parts = []
    for step in steps:
        if step[0] == "retain":
            parts.append(f"{name}.retain_grad()")
        elif step[0] == "observe":
            parts.append(f"{name}.register_hook(lambda g: None)")
        elif step[0] in _STEP_TEXT:
            parts.append(f"{name}.register_hook({_STEP_TEXT[step[0]].format(step[1], name=name)})")
        else:
            op = "*" if step[0] == "mul" else "+"
            parts.append(f"{name}.register_hook(lambda g: g {op} {step[1]})")
    return "; ".join(parts) or f"(nothing on {name})"


def _check_hook_chain(got, expected, case, axis=""):
    assert_conforms(got, {"seen": [["", 0, None]] * len(expected["seen"]), "mid_grad": None,
                          "x_grad": None, "retains_grad": [True, True]}, what="the observation")
    order = [g[:2] for g in got["seen"]]
    assert_equal(order, [e[:2] for e in expected["seen"]],
                 what=f"hook calls in order [tensor, index of the hook on it]{axis}", case=case)
    for g, e in zip(got["seen"], expected["seen"], strict=True):
        assert_close(g[2], e[2], what=f"the gradient hook #{e[1]} on {e[0]} saw (the previous "
                     f"hook's result){axis}", case=case)
    assert_close(got["mid_grad"], expected["mid_grad"],
                 what=f"mid.grad (retained: the gradient after all of mid's hooks){axis}",
                 case=case)
    assert_close(got["x_grad"], expected["x_grad"], what=f"x.grad (after all of x's hooks){axis}",
                 case=case)
    assert_equal(got["retains_grad"], expected["retains_grad"],
                 what="[mid.retains_grad, x.retains_grad]", case=case)


CHAIN_EXAMPLE = np.array([0.5, -1.0])


@task("1.4")
@settings(max_examples=examples(12))
@given(x=vectors,
       mid_steps=st.lists(st.one_of(_STEP, st.just(["retain"])), min_size=1, max_size=4),
       leaf_steps=st.lists(st.one_of(_STEP, st.just(["retain"])), max_size=3))
@example(x=CHAIN_EXAMPLE, mid_steps=[["retain"], ["mul", 10.0], ["add", 1.0]],
         leaf_steps=[["add", 1.0], ["mul", 10.0], ["retain"]])
def test_several_hooks_and_retain_grad(submission, x, mid_steps, leaf_steps):
    """Hooks on one tensor run in the order they were registered, each on the previous
    one's result; retain_grad keeps the gradient after all of the tensor's hooks, whether
    it was called before or after registering them; on a leaf it is a no-op."""
    if x is CHAIN_EXAMPLE:  # the explicit example: its x drawn from the grading seed
        x = seeded_values(CHAIN_EXAMPLE, "1.4 hook chain")
    got = submission.call("autograd.hook_chain", x, mid_steps, leaf_steps)
    expected = _torch_hook_chain(x, mid_steps, leaf_steps)
    case = (f"x = {literal(x)}; mid = x.sin(); {_describe_steps(mid_steps, 'mid')}; "
            f"{_describe_steps(leaf_steps, 'x')}; (2 * mid).sum().backward()")
    _check_hook_chain(got, expected, case)


@task("1.4")
@settings(max_examples=examples(10))
@given(x=vectors,
       mid_steps=st.lists(st.one_of(_STEP, _MUTATING_STEP, st.just(["retain"])), min_size=1,
                          max_size=4),
       leaf_steps=st.lists(st.one_of(_STEP, _MUTATING_STEP), max_size=3),
       mid_op=st.sampled_from(["sin", "add"]))
@example(x=CHAIN_EXAMPLE, mid_steps=[["remove_self", 2.0], ["mul", 10.0], ["register", 3.0]],
         leaf_steps=[["remove_next", 3.0], ["mul", 0.5]], mid_op="sin")
@example(x=CHAIN_EXAMPLE, mid_steps=[["retain"], ["add", 1.0]],
         leaf_steps=[["inplace", 10.0]], mid_op="add")
def test_hooks_that_change_hooks_or_gradient_while_running(submission, x, mid_steps,
                                                           leaf_steps, mid_op):
    """Hooks that remove themselves or the next hook, or register a new one, while the
    tensor's hooks run: the backward in progress runs the hooks registered when it reached
    the tensor (as torch, a snapshot), the next backward sees the change; a hook that
    modifies its gradient in place changes what flows on, never a gradient retained
    earlier (retain_grad keeps its own copy)."""
    if x is CHAIN_EXAMPLE:
        x = seeded_values(CHAIN_EXAMPLE, "1.4 hook chain mutating")
    got = submission.call("autograd.hook_chain", x, mid_steps, leaf_steps, mid_op, 2)
    expected = _torch_hook_chain(x, mid_steps, leaf_steps, mid_op, 2)
    mid_text = "x + 0.5" if mid_op == "add" else "x.sin()"
    case = (f"x = {literal(x)}; mid = {mid_text}; {_describe_steps(mid_steps, 'mid')}; "
            f"{_describe_steps(leaf_steps, 'x')}; (2 * mid).sum().backward(retain_graph=True) "
            "twice")
    _check_hook_chain(got, expected, case,
                      axis=" with hooks that change the hooks or the gradient while they run")


@task("1.4")
def test_retain_grad_misuse(submission):
    """retain_grad() on a tensor that does not require grad raises torch's RuntimeError;
    on a leaf it does nothing; twice on one tensor is once; retains_grad says so."""
    got = submission.call("autograd.retain_grad_misuse",
                          seeded_values([1.0, 2.0, 0.5, -1.0], "1.4 misuse"))
    assert_conforms(got, {"plain": _RAISED, "computed": _RAISED, "leaf": _RAISED,
                          "before": [True, True], "after": [True, True],
                          "after_backward": [True, True], "mid_grad": None},
                    what="the observation")
    message = ("can't retain_grad on Tensor that has requires_grad=False",)
    assert_raises_like(got["plain"], "RuntimeError", contains=message,
                       what="retain_grad() on a leaf made without requires_grad")
    assert_raises_like(got["computed"], "RuntimeError", contains=message,
                       what="retain_grad() on a result of tensors that do not require grad")
    assert_raises_like(got["leaf"], None, what="retain_grad() on a leaf that requires grad")
    case = "x leaf; mid = 3 * x; mid.retain_grad() twice; (2 * mid).sum().backward()"
    assert_equal(got["before"], [False, False],
                 what="[x.retains_grad, mid.retains_grad] before retain_grad()", case=case)
    assert_equal(got["after"], [False, True],
                 what="[x.retains_grad, mid.retains_grad] after retain_grad()", case=case)
    assert_equal(got["after_backward"], [False, True],
                 what="[x.retains_grad, mid.retains_grad] after backward", case=case)
    assert_close(got["mid_grad"], np.array([2.0, 2.0]),
                 what="mid.grad (retain_grad() twice must not count the gradient twice)",
                 case=case)


class _TorchZero(torch.autograd.Function):
    """The probes' Zero in torch: zeros forward, a backward that returns None."""

    @staticmethod
    def forward(ctx, a):
        return torch.zeros_like(a)

    @staticmethod
    def backward(ctx, g):
        return None


@task("1.4")
@settings(max_examples=examples(3))
@given(x=vectors)
def test_hooks_on_tensors_that_get_no_gradient(submission, x):
    """A tensor whose every gradient is None (its consumer's backward returned None) may
    carry hooks, on a leaf and on a non-leaf: backward goes through, the leaf's .grad stays
    None and the other leaf gets its gradient, as in torch."""
    got = submission.call("autograd.hooks_without_gradient", x)
    assert_conforms(got, {"backward": _RAISED, "x_grad_is_none": True, "w_grad": None},
                    what="the observation")

    t, w = torch.tensor(x, requires_grad=True), torch.ones(len(x), dtype=torch.float64,
                                                           requires_grad=True)
    t.register_hook(lambda g: None)
    mid = torch.sin(t)
    mid.register_hook(lambda g: None)
    (_TorchZero.apply(mid) + 2.0 * w).sum().backward()
    case = (f"x = {literal(x)} and mid = sin(x), each with a hook; w = ones; "
            "(zero(mid) + 2 * w).sum().backward(), zero's backward returning None")
    assert_raises_like(got["backward"], None, what="backward", case=case)
    assert_equal(got["x_grad_is_none"], t.grad is None, what="x.grad is None", case=case)
    assert_close(got["w_grad"], w.grad.numpy(), what="w.grad", case=case)


@task("1.4")
@settings(max_examples=examples(3))
@given(x=vectors)
def test_retain_grad_with_nothing_to_keep(submission, x):
    """retain_grad on a tensor that gets no gradient (its consumer's backward returned
    None; the unused output of a two-output Function beside a used one) keeps None there
    and the gradient where there is one; on a tensor dropped before backward it is
    harmless. As in torch."""
    got = submission.call("autograd.retain_grad_without_gradient", x)
    assert_conforms(got, {"zero": _RAISED, "mid_grad_is_none": True, "w_grad": x,
                          "two_outputs": _RAISED, "first_grad_is_none": True,
                          "second_grad": x, "x_grad": x, "dropped": _RAISED,
                          "dropped_x_grad": x}, what="the observation")

    class SinCos(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a.sin(), a.cos()

        @staticmethod
        def backward(ctx, g_sin, g_cos):
            (a,) = ctx.saved_tensors
            return g_sin * a.cos() - g_cos * a.sin()

    t, w = torch.tensor(x, requires_grad=True), torch.ones(len(x), dtype=torch.float64,
                                                           requires_grad=True)
    mid = torch.sin(t)
    mid.retain_grad()
    (_TorchZero.apply(mid) + 2.0 * w).sum().backward()
    case = (f"x = {literal(x)}; mid = Sin(x); mid.retain_grad(); w = ones; "
            "Sum(Add(Zero(mid), Scale(w, 2))).backward(), the grader's own Functions (Zero's "
            "backward returns None)")
    assert_raises_like(got["zero"], None, what="backward", case=case)
    assert_equal(got["mid_grad_is_none"], mid.grad is None, what="mid.grad is None", case=case)
    assert_close(got["w_grad"], w.grad.numpy(), what="w.grad", case=case)
    ts = torch.tensor(x, requires_grad=True)
    first, second = SinCos.apply(ts)
    first.retain_grad()
    second.retain_grad()
    second.sum().backward()
    case = (f"x = {literal(x)}; s, c = SinCos(x); s.retain_grad(); c.retain_grad(); "
            "Sum(c).backward(), the grader's own Functions")
    assert_raises_like(got["two_outputs"], None, what="backward", case=case)
    assert_equal(got["first_grad_is_none"], first.grad is None, what="s.grad is None", case=case)
    assert_close(got["second_grad"], second.grad.numpy(), what="c.grad", case=case)
    assert_close(got["x_grad"], ts.grad.numpy(), what="x.grad", case=case)
    td = torch.tensor(x, requires_grad=True)
    dropped = torch.sin(td)
    dropped.retain_grad()
    out = dropped.sum()
    del dropped
    out.backward()
    case = (f"x = {literal(x)}; m = Sin(x); m.retain_grad(); out = Sum(m); del m; "
            "out.backward(), the grader's own Functions")
    assert_raises_like(got["dropped"], None, what="backward", case=case)
    assert_close(got["dropped_x_grad"], td.grad.numpy(), what="x.grad", case=case)


@task("1.4")
def test_detach_keeps_inference(submission):
    """detach() of an inference tensor is an inference tensor, of a normal one not
    (is_inference() a bool, as torch's)."""
    got = submission.call("autograd.detach_inference", seeded_values([1.0, 1.0], "1.4 detach"))
    assert_conforms(got, {"plain": ["", True], "inference": ["", True]}, what="the observation")
    plain = torch.ones(2)
    with torch.inference_mode():
        inference = torch.ones(2)
    for key, tensor in (("plain", plain), ("inference", inference)):
        value = tensor.detach().is_inference()
        assert_equal(got[key], [type(value).__name__, value],
                     what=f"detach() of {'an inference' if key == 'inference' else 'a normal'} "
                          "tensor: [type, value] of is_inference()")


def _torch_raising_tensor_hook(x, where):
    t = torch.tensor(np.asarray(x, np.float64), requires_grad=True)
    mid = torch.sin(t)
    calls = []

    def hook(g):
        calls.append(1)
        if len(calls) == 1:
            raise ValueError("hook boom")
        return g * 2.0

    (mid if where == "mid" else t).register_hook(hook)
    out = (3.0 * mid).sum()
    first = None
    try:
        out.backward(retain_graph=True)
    except ValueError as e:
        first = type(e).__name__
    result = {"first": first, "x_grad_is_none": t.grad is None,
              "grad_enabled": torch.is_grad_enabled()}
    out.backward()
    result.update(x_grad=t.grad.numpy(), calls=len(calls),
                  after_grad_enabled=torch.is_grad_enabled())
    return result


@task("1.4")
@settings(max_examples=examples(4))
@given(x=vectors, where=st.sampled_from(["mid", "leaf"]))
@example(x=CHAIN_EXAMPLE, where="leaf")
@example(x=CHAIN_EXAMPLE, where="mid")
def test_a_raising_tensor_hook_reaches_the_caller_and_leaves_hooks_in_place(submission, x,
                                                                            where):
    """A tensor hook that raises: the exception reaches backward's caller with its type
    (as torch), no leaf gradient is written, the grad mode is what it was, and the hook
    stays registered: the next backward calls it and uses its result (exception axis)."""
    if x is CHAIN_EXAMPLE:
        x = seeded_values(CHAIN_EXAMPLE, "1.4 raising hook")
    got = submission.call("autograd.raising_tensor_hook", x, where)
    assert_conforms(got, {"first": _RAISED, "x_grad_is_none": True, "grad_enabled": True,
                          "second": _RAISED, "x_grad": None, "calls": 0,
                          "after_grad_enabled": True}, what="the observation")
    expected = _torch_raising_tensor_hook(x, where)
    on = "mid" if where == "mid" else "x"
    axis = " (after an exception raised by a tensor hook)"
    case = (f"x = {literal(x)}; mid = x.sin(); {on}.register_hook(h), h raising ValueError on "
            "its first call and returning g * 2 after; out = (3 * mid).sum(); "
            "out.backward(retain_graph=True) (raises); out.backward()")
    assert_raises_like(got["first"], expected["first"], what=f"the first backward{axis}",
                       case=case)
    assert_equal([got["x_grad_is_none"], got["grad_enabled"]],
                 [expected["x_grad_is_none"], expected["grad_enabled"]],
                 what=f"[x.grad is None, tt.is_grad_enabled()] right after{axis}", case=case)
    assert_raises_like(got["second"], None, what=f"the next backward{axis}", case=case)
    assert_equal([got["calls"], got["after_grad_enabled"]],
                 [expected["calls"], expected["after_grad_enabled"]],
                 what=f"[calls of the hook, tt.is_grad_enabled()] after the next backward{axis}",
                 case=case)
    assert_close(got["x_grad"], expected["x_grad"], what=f"x.grad of the next backward{axis}",
                 case=case)
