"""Task 3.2: saved-tensor hooks (pack once per saved tensor, unpack per use, innermost pair
wins) and the inspection of what a node saved (grad_fn._saved_self ...).

Graphs are built from probe Functions that save exactly what torch's ops save, so the hook
calls are compared with torch's on the same program.
"""

from __future__ import annotations

import contextlib
from collections import Counter

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from graders.checks import assert_close, assert_equal, assert_raises_like
from graders.checks.compare import literal
from graders.checks.structure import RAISED, Kind, ListOf, conform
from graders.oracle import memory as mlp_oracle
from graders.oracle import saved_hooks as oracle
from graders.strategies.programs import describe, functions_source, programs
from graders.suites._seed import case_seed, seeded_values
from graders.suites._support import examples, task

HOOKS_CODE = ("pack(t): log 'pack', keep t, return its number; unpack(n): log 'unpack', "
              "return the kept tensor")


EVENT = [Kind(str), Kind(str), Kind(int), Kind(None, np.ndarray), Kind(bool)]


def _conform_calls(got, expected):
    """hook_calls' answer: every event [pair, call, number, packed values, grad mode], the
    number of forward events, a gradient (or None) per leaf."""
    conform(got, {"events": ListOf(EVENT), "forward_events": Kind(int),
                  "grads": expected["grads"]}, what="saved_hooks.hook_calls")


def _compare_calls(got, expected, program, setting):
    case = f"{describe(program)}; {setting}; hooks: {HOOKS_CODE}"
    _conform_calls(got, expected)
    packs = [ev[:3] for ev in got["events"][: got["forward_events"]]]
    torch_packs = [ev[:3] for ev in expected["events"][: expected["forward_events"]]]
    assert_equal(packs, torch_packs, what="hook calls during the forward ([pair, call, "
                 "number]; pack runs once per saved tensor, when it is saved)", case=case)
    for g, e in zip(got["events"][: got["forward_events"]],
                    expected["events"][: expected["forward_events"]], strict=True):
        assert_close(g[3], e[3], what=f"the tensor given to pack call {g[:3]}", case=case)
    unpacks = Counter(tuple(ev[:3]) for ev in got["events"][got["forward_events"]:])
    torch_unpacks = Counter(tuple(ev[:3]) for ev in expected["events"][expected["forward_events"]:])
    assert_equal(dict(sorted(unpacks.items())), dict(sorted(torch_unpacks.items())),
                 what="hook calls during backward, counted per packed tensor (unpack runs "
                      "each time backward uses it)", case=case)
    for i, (g, e) in enumerate(zip(got["grads"], expected["grads"], strict=True)):
        assert_close(g, e, what=f"x{i}.grad", case=case)


@task("3.2")
@settings(max_examples=examples(25))
@given(program=programs(max_ops=6))
def test_pack_once_per_saved_tensor_unpack_per_use(submission, program):
    """Under saved_tensors_hooks, pack runs once per saved tensor at save time (with the
    tensor torch's op saves) and unpack once per use in backward, as in torch."""
    got = submission.call("saved_hooks.hook_calls", program)
    _compare_calls(got, oracle.hook_calls(program), program, "one backward")


@task("3.2")
@settings(max_examples=examples(10))
@given(program=programs(max_ops=5))
def test_unpack_again_on_each_backward(submission, program):
    """With retain_graph, a second backward unpacks every saved tensor again; nothing is
    packed again."""
    got = submission.call("saved_hooks.hook_calls", program, calls=2)
    _compare_calls(got, oracle.hook_calls(program, calls=2), program,
                   "backward(retain_graph=True), then backward()")


@task("3.2")
@settings(max_examples=examples(15))
@given(program=programs(max_ops=6), inner_ops=st.integers(1, 4))
def test_innermost_pair_wins(submission, program, inner_ops):
    """With two nested saved_tensors_hooks blocks, tensors saved inside the inner one go
    through the inner pair only."""
    got = submission.call("saved_hooks.hook_calls", program, inner_ops=inner_ops)
    _compare_calls(got, oracle.hook_calls(program, inner_ops=inner_ops), program,
                   f"an 'outer' pair around the forward, an 'inner' one around its first "
                   f"{inner_ops} ops")


@task("3.2")
@settings(max_examples=examples(5))
@given(program=programs(max_ops=4))
def test_hooks_run_with_grad_mode_off(submission, program):
    """PyTorch runs pack and unpack hooks with grad mode off."""
    got = submission.call("saved_hooks.hook_calls", program)
    torch_calls = oracle.hook_calls(program)
    _conform_calls(got, torch_calls)
    assert_equal(len(got["events"]), len(torch_calls["events"]),
                 what="number of hook calls (pack and unpack)", case=describe(program))
    modes = sorted({(ev[1], ev[4]) for ev in got["events"]})
    expected = sorted({(ev[1], ev[4]) for ev in torch_calls["events"]})
    assert_equal(modes, expected, what="[hook, tt.is_grad_enabled() inside it]",
                 case=describe(program))


@task("3.2")
def test_unpack_hook_must_return_a_tensor(submission):
    """An unpack hook that returns something else makes backward raise PyTorch's TypeError,
    which names the type the hook returned."""
    got = submission.call("saved_hooks.bad_unpack", seeded_values([0.5, -1.0], "3.2 unpack"))
    conform(got, {"backward": RAISED}, what="saved_hooks.bad_unpack")
    assert_raises_like(got["backward"], "TypeError", what="backward when unpack_hook returns 7",
                       contains=("unpack_hook expected to be a Tensor", "result of type int"))


def _torch_raising_hooks(x, where):
    calls = []

    def pack(tensor):
        calls.append("pack")
        if where == "pack":
            raise KeyError("pack boom")
        return tensor

    def unpack(packed):
        calls.append("unpack")
        if where == "unpack":
            raise KeyError("unpack boom")
        return packed

    xt = torch.tensor(np.asarray(x, np.float64), requires_grad=True)
    out, y = {}, None
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            y = torch.sin(xt)
        out["forward"] = None
    except KeyError:
        out["forward"] = "KeyError"
    out["backward"] = None
    if y is not None:
        try:
            y.sum().backward()
        except KeyError:
            out["backward"] = "KeyError"
    out["x_grad_is_none"] = xt.grad is None
    out["grad_enabled"] = torch.is_grad_enabled()
    out["calls"] = list(calls)
    xt.grad = None
    torch.sin(xt).sum().backward()
    out["after_grad"] = xt.grad.numpy()
    out["after_calls"] = calls[len(out["calls"]):]
    out["after_grad_enabled"] = torch.is_grad_enabled()
    return out


@task("3.2")
@pytest.mark.parametrize("where", ["pack", "unpack"])
def test_a_raising_hook_reaches_the_caller_and_leaves_nothing_behind(submission, where):
    """A pack hook (in the forward) or unpack hook (in backward) that raises: the
    exception reaches the caller with its type (as torch), the grad mode is what it was,
    and once the block is left the pair is gone: the next forward and backward run
    normally, without calling it (exception axis)."""
    x = seeded_values([0.5, -1.0, 2.0], "3.2 raising hook")
    got = submission.call("saved_hooks.raising_hooks", x, where)
    conform(got, {"forward": RAISED, "backward": RAISED, "x_grad_is_none": Kind(bool),
                  "grad_enabled": Kind(bool), "calls": ListOf(Kind(str)),
                  "after_backward": RAISED, "after_grad": Kind(None, np.ndarray),
                  "after_calls": ListOf(Kind(str)),
                  "after_grad_enabled": Kind(bool)}, what="saved_hooks.raising_hooks")
    expected = _torch_raising_hooks(x, where)
    axis = f" (after an exception raised by the {where} hook)"
    case = (f"x = {literal(x)}; with saved_tensors_hooks(pack, unpack): y = x.sin(); "
            f"y.sum().backward(); the {where} hook raises KeyError; then "
            "x.sin().sum().backward() outside the block")
    assert_raises_like(got["forward"], expected["forward"],
                       what=f"the forward under the pair{axis}", case=case)
    assert_raises_like(got["backward"], expected["backward"],
                       what=f"the backward of the graph built under the pair{axis}", case=case)
    assert_equal([got["calls"], got["x_grad_is_none"], got["grad_enabled"]],
                 [expected["calls"], expected["x_grad_is_none"], expected["grad_enabled"]],
                 what=f"[hook calls, x.grad is None, tt.is_grad_enabled()] right after{axis}",
                 case=case)
    assert_equal([got["after_calls"], got["after_grad_enabled"]],
                 [expected["after_calls"], expected["after_grad_enabled"]],
                 what=f"[hook calls, tt.is_grad_enabled()] of the next backward{axis}",
                 case=case)
    assert_raises_like(got["after_backward"], None, what=f"the next backward{axis}", case=case)
    assert_close(got["after_grad"], expected["after_grad"],
                 what=f"x.grad of the next backward{axis}", case=case)


@task("3.2")
def test_hooks_are_per_thread(submission):
    """Hooks installed in another thread do not apply to this thread's graph."""
    values = seeded_values([0.5, -1.0], "3.2 threads")
    got = submission.call("saved_hooks.hooks_per_thread", values)
    conform(got, {"calls_seen": Kind(int), "calls_here": ListOf([Kind(str), Kind(str)]),
                  "grad": np.zeros(2)}, what="saved_hooks.hooks_per_thread")
    assert_equal(got["calls_seen"], 0, what="calls of hooks installed in another thread")
    assert_equal(got["calls_here"], [["this-thread", "pack"], ["this-thread", "unpack"]],
                 what="calls of hooks installed in this thread, for x.sin().sum().backward()")
    x = np.array(values)
    assert_close(got["grad"], 2 * np.cos(x), what="x.grad after x.sin().sum().backward() "
                 "twice (once in each thread's setting)")


@task("3.2")
def test_saved_tensor_inspection(submission):
    """grad_fn._saved_self / _saved_other / _saved_result give what the node saved:
    sin saves its input (the same tensor), exp its output (with the node as grad_fn), mul
    by a constant only ``other``; each access unpacks; after backward they are freed. A
    name the node did not save (also on a node that saved nothing) is Python's
    AttributeError, naming the node's class."""
    values = seeded_values([0.5, -1.0, 2.0], "3.2 inspection")
    got = submission.call("saved_hooks.inspection", values)
    conform(got, {"exp_result": np.zeros(3), "exp_output": np.zeros(3), "unknown": RAISED,
                  "nothing_saved": RAISED, "node_class": Kind(str),
                  "nothing_saved_class": Kind(str),
                  "after_backward": RAISED, "sin_self_is_input": Kind(bool),
                  "exp_result_grad_fn_is_node": Kind(bool), "exp_result_version": Kind(int),
                  "mul_other_is_c": Kind(bool), "mul_self_is_none": Kind(bool),
                  "unpacks_for_two_accesses": Kind(int), "through_hooks_is_input": Kind(bool)},
            what="saved_hooks.inspection")
    flags = {
        "sin_self_is_input": True, "exp_result_grad_fn_is_node": True, "exp_result_version": 0,
        "mul_other_is_c": True, "mul_self_is_none": True, "unpacks_for_two_accesses": 2,
        "through_hooks_is_input": True,
    }
    for key, value in flags.items():
        assert_equal(got[key], value, what=key.replace("_", " "), reproducer=INSPECTION_CODE)
    assert_close(got["exp_output"], np.exp(np.array(values)), what="x.exp()")
    assert_close(got["exp_result"], got["exp_output"], what="exp's _saved_result vs its output")
    # Python's (and PyTorch's) wording: "'MulBackward0' object has no attribute '_saved_x'"
    assert_raises_like(got["unknown"], "AttributeError", what="grad_fn._saved_nothing",
                       contains=(f"'{got['node_class']}' object has no attribute "
                                 "'_saved_nothing'",))
    assert_raises_like(got["nothing_saved"], "AttributeError",
                       what="(x + c).grad_fn._saved_self (the add saved nothing)",
                       contains=(f"'{got['nothing_saved_class']}' object has no attribute "
                                 "'_saved_self'",))
    assert_raises_like(got["after_backward"], "RuntimeError",
                       what="grad_fn._saved_self after backward",
                       contains=("after they have already been freed",))


INSPECTION_CODE = f"""import numpy as np
import tinytrain as tt

{functions_source(["sin", "exp", "torch_mul"])}


x = tt.tensor(np.array([0.5, -1.0, 2.0]), requires_grad=True)
c = tt.tensor(np.array([3.0, 4.0, 5.0]))
s, e, m = Sin.apply(x), Exp.apply(x), TorchMul.apply(x, c)
result = e.grad_fn._saved_result
# PyTorch: True, True, 0, True, True
print("sin_self_is_input:", s.grad_fn._saved_self is x)
print("exp_result_grad_fn_is_node:", result.grad_fn is e.grad_fn)
print("exp_result_version:", result._version)
print("mul_other_is_c:", m.grad_fn._saved_other is c)
print("mul_self_is_none:", m.grad_fn._saved_self is None)
unpacks = []
with tt.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: unpacks.append(t) or t):
    h = Sin.apply(x)
first = h.grad_fn._saved_self
h.grad_fn._saved_self
print("unpacks_for_two_accesses:", len(unpacks))  # PyTorch: 2
print("through_hooks_is_input:", first is x)  # PyTorch: True"""


@task("3.2")
def test_packed_tensors_are_not_kept(submission):
    """With a pack hook that keeps nothing, the graph holds none of the forward's
    activations once the caller drops them: the node keeps what pack returned, not the
    tensor (the reason offloading works)."""
    x, weights = mlp_oracle.mlp_inputs(case_seed(0, "3.2 forgetful hooks") % 2**16)
    plain = submission.call("memory.mlp", x, weights, "plain")
    got = submission.call("memory.mlp", x, weights, "forgetful_hooks")
    expected = mlp_oracle.mlp_grads(x, weights)
    conform(plain, mlp_oracle.run_template(expected), what="memory.mlp (plain)")
    conform(got, mlp_oracle.run_template([None] * len(expected)),
            what="memory.mlp (forgetful hooks)")
    assert_equal(got["block_calls"], [3, 3], what="calls of the 3 blocks of the forward [after "
                 "the forward, at the end] (the forward must run; no backward follows)")
    assert plain["live_bytes"] > 0, "the plain run keeps no activation alive"
    assert_equal(got["live_bytes"], 0, what="bytes of activations still alive after the "
                 f"forward under saved_tensors_hooks(lambda t: None, ...) (plain run: "
                 f"{plain['live_bytes']})")


def _torch_raising_hooks_nested(x, where, nested):
    graph = torch.autograd.graph
    outer_calls = []

    def boom(_):
        raise KeyError("boom")

    def count(kind):
        def hook(t):
            outer_calls.append(kind)
            return t
        return hook

    outer = graph.saved_tensors_hooks(count("pack"), count("unpack")) if nested else None
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    with outer if outer is not None else contextlib.nullcontext():
        error = None
        try:
            with graph.saved_tensors_hooks(boom if where == "pack" else (lambda t: t),
                                           (lambda t: t) if where == "pack" else boom):
                y = torch.sin(xt)
            y.sum().backward()
        except KeyError as e:
            error = type(e).__name__
        modes = [torch.is_grad_enabled(), torch.is_inference_mode_enabled()]
        before = len(outer_calls)
        x2 = torch.tensor(x, dtype=torch.float64, requires_grad=True)
        torch.sin(x2).sum().backward()
    return {"error": error, "modes": modes, "outer_calls": outer_calls[before:],
            "x_grad": x2.grad.numpy()}


@task("3.2")
@settings(max_examples=examples(4))
@given(x=arrays(np.float64, st.integers(1, 4), elements=st.floats(-1.5, 1.5)),
       where=st.sampled_from(["pack", "unpack"]), nested=st.booleans())
def test_raising_hook_inside_an_outer_pair_restores_the_outer_pair(submission, x, where, nested):
    """A pack or unpack hook that raises: the exception reaches the caller, grad mode and
    the hooks in effect are restored (the outer pair when nested), and the next forward and
    backward work normally, as in torch."""
    got = submission.call("saved_hooks.raising_hooks_nested", x, where, nested)
    expected = _torch_raising_hooks_nested(x, where, nested)
    conform(got, {"error": RAISED, "modes": [Kind(bool), Kind(bool)],
                  "outer_calls": ListOf(Kind(str)), "again": RAISED,
                  "x_grad": Kind(None, np.ndarray)}, what="saved_hooks.raising_hooks")
    axis = f"after a{'n un' if where == 'unpack' else ' '}pack hook raised"
    case = (f"x = {literal(x)}; " + ("inside an outer counting saved_tensors_hooks pair; "
                                     if nested else "")
            + f"with saved_tensors_hooks(...{where} raising KeyError...): y = sin(x); "
            "y.sum().backward(); then a new sin(x2).sum().backward()")
    assert_raises_like(got["error"], expected["error"], what=f"the caller ({axis})", case=case)
    assert_equal(got["modes"], expected["modes"],
                 what=f"[is_grad_enabled, is_inference_mode_enabled] {axis}", case=case)
    assert_raises_like(got["again"], None, what=f"the next forward and backward {axis}",
                       case=case)
    assert_equal(got["outer_calls"], expected["outer_calls"],
                 what=f"hook calls of the pair in effect in the next forward and backward {axis}",
                 case=case)
    assert_close(got["x_grad"], expected["x_grad"], what=f"x2.grad {axis}", case=case)
