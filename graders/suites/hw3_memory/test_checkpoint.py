"""Task 3.4: activation checkpointing (tt.utils.checkpoint.checkpoint)."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from torch.utils.checkpoint import checkpoint as torch_checkpoint

from graders.checks import assert_close, assert_equal, assert_raises_like
from graders.checks.compare import literal
from graders.checks.structure import RAISED, Kind, Shaped, conform
from graders.oracle import memory as oracle
from graders.probes.checkpoint import RANDOM_SEED
from graders.suites._seed import case_seed, seeded_values
from graders.suites._support import examples, task

MODEL = "blocks h -> tanh(sin(h @ W1 + b1) @ W2 + b2), each block under checkpoint"


@task("3.4")
@settings(max_examples=examples(3))
@given(seed=st.integers(0, 2**16))
def test_checkpoint_gradients_and_memory(submission, seed):
    """Checkpointed blocks keep only their inputs between forward and backward, recompute
    their forward during backward (once per block), and give the plain run's gradients."""
    x, weights = oracle.mlp_inputs(seed)
    plain = submission.call("memory.mlp", x, weights, "plain")
    got = submission.call("memory.mlp", x, weights, "checkpoint")
    expected = oracle.mlp_grads(x, weights)
    conform(plain, oracle.run_template(expected), what="memory.mlp (plain)")
    conform(got, oracle.run_template(expected), what="memory.mlp (checkpoint)")
    names = ["x"] + [f"{n}{i // 4}" for i, n in enumerate(["W1_", "b1_", "W2_", "b2_"] * 3)]
    for name, g, p, e in zip(names, got["grads"], plain["grads"], expected, strict=True):
        assert_close(g, p, rtol=0, atol=0, what=f"{name}.grad with checkpointing vs the plain "
                     f"run (must be identical)", case=MODEL)
        assert_close(g, e, what=f"{name}.grad with checkpointing vs torch", case=MODEL)
    assert_equal(got["block_calls"], [3, 6], what="calls of the 3 blocks [after the forward, "
                 "after backward] (each recomputed once)", case=MODEL)
    boundary = 2 * x.nbytes  # the outputs of the first two blocks, inputs of the next
    assert_equal(got["live_bytes"], boundary, what="bytes of activations alive after the "
                 f"forward (only block boundaries; plain run: {plain['live_bytes']})", case=MODEL)
    assert got["traced_bytes"] < plain["traced_bytes"] / 2, (
        f"memory held after the forward with checkpointing: {got['traced_bytes']} bytes, "
        f"plain run: {plain['traced_bytes']}")


def _torch_segments(x, k, no_grad_backward=False):
    xt = torch.tensor(x, requires_grad=True)
    w = torch.tensor(np.linspace(0.5, 1.5, x.shape[-1]), requires_grad=True)

    def segment(a, scale, b):
        return (a * w).sin() * scale, (b * a).exp()

    b = torch.tensor(x[::-1].copy(), requires_grad=True)
    y1, y2 = torch_checkpoint(segment, xt, k, b, use_reentrant=True)
    loss = y1.sum() + 2 * y2.sum()
    with torch.no_grad() if no_grad_backward else contextlib.nullcontext():
        loss.backward()
    return [xt.grad.numpy(), w.grad.numpy(), b.grad.numpy()], [y1.detach().numpy(),
                                                               y2.detach().numpy()]


SEGMENT = [st.lists(st.floats(-1, 1), min_size=3, max_size=5).map(np.array),
           st.sampled_from([0.5, -2.0])]


def _check_segment(got, x, k, no_grad_backward):
    grads, outputs = _torch_segments(x, k, no_grad_backward)
    conform(got, {"outputs": outputs, "grads": [Kind(None, np.ndarray)] * 3, "calls": Kind(int),
                  "recorded_in_forward": Kind(bool), "grad_mode": [Kind(bool), Kind(bool)]},
            what="checkpoint.segment")
    case = ("def segment(a, scale, b): return (a * w).sin() * scale, (b * a).exp()\n"
            "y1, y2 = checkpoint(segment, x, k, b); loss = y1.sum() + 2 * y2.sum()\n"
            + ("with tt.no_grad(): loss.backward()" if no_grad_backward else "loss.backward()"))
    for name, g, e in zip(["y1", "y2"], got["outputs"], outputs, strict=True):
        assert_close(g, e, what=name, case=case)
    assert_equal(got["calls"], 2, what="calls of segment (forward, then recomputation)",
                 case=case)
    assert_equal(got["recorded_in_forward"], False,
                 what="the segment's ops were recorded in the forward (they must not be)",
                 case=case)
    assert_equal(got["grad_mode"], [False, True],
                 what="tt.is_grad_enabled() inside segment [in the forward, in the "
                      "recomputation] (torch enables grad to recompute, whatever mode "
                      "backward was called in)", case=case)
    for name, g, e in zip(["x.grad", "w.grad", "b.grad"], got["grads"], grads, strict=True):
        assert_close(g, e, what=name, case=case)


@task("3.4")
@settings(max_examples=examples(5))
@given(x=SEGMENT[0], k=SEGMENT[1])
def test_checkpoint_segment_like_torch(submission, x, k):
    """A segment with two outputs, a number among its arguments and a parameter it uses
    from outside (which gets its gradient through the recomputation): torch's values and
    gradients."""
    _check_segment(submission.call("checkpoint.segment", x, k), x, k, False)


@task("3.4")
@settings(max_examples=examples(2))
@given(x=SEGMENT[0], k=SEGMENT[1])
def test_checkpoint_backward_under_no_grad(submission, x, k):
    """loss.backward() called inside no_grad: the recomputation still records (torch's
    checkpoint enables grad for it), so the gradients are the same."""
    _check_segment(submission.call("checkpoint.segment", x, k, True), x, k, True)


def _stream(n, seed=RANDOM_SEED):
    """The first ``n`` numbers tt.rand(..., dtype=tt.float64) draws after
    tt.manual_seed(seed): tinytrain's global generator is NumPy's PCG64 (given code,
    tinytrain/random.py)."""
    return np.random.default_rng(seed).random(n)


STREAM = "torch's rule on tinytrain's generator (NumPy's PCG64 stream)"
RANDOM_CASES = {
    # between, preserve_rng_state: (masks drawn, by position in the stream; x.grad's
    # mask; where the next draw starts)
    (0, True): ([0, 0], 0, 16),
    (5, True): ([0, 0], 0, 21),
    (0, False): ([0, 16], 16, 32),
}


@task("3.4")
@pytest.mark.parametrize(("between", "preserve"), list(RANDOM_CASES),
                         ids=["replay", "draws-before-backward", "preserve_rng_state=False"])
def test_checkpoint_replays_random_numbers(submission, between, preserve):
    """Random ops inside the segment draw the same numbers when it is recomputed (as
    torch's preserve_rng_state), from tinytrain's generator, and the generator then
    continues as if there had been no recomputation, also when numbers were drawn between
    forward and backward; with preserve_rng_state=False the recomputation draws new
    numbers (x.grad follows its mask) and the generator moves on past them, as torch's."""
    seed = case_seed(RANDOM_SEED, "3.4 random segment", between, preserve) % 2**31
    got = submission.call("checkpoint.random_segment", between, preserve, seed)
    starts, grad_at, next_at = RANDOM_CASES[(between, preserve)]
    stream = _stream(next_at + 3, seed)
    masks = [(stream[k:k + 16] > 0.5).astype(np.float64) for k in starts]
    conform(got, {"masks": masks, "grad": Shaped((16,)), "between": Shaped((between,)),
                  "next_draw": Shaped((3,))}, what="checkpoint.random_segment")
    case = (f"tt.manual_seed({seed}); def seg(a): return a * (tt.rand(16) > .5); "
            f"y = checkpoint(seg, x, preserve_rng_state={preserve})"
            + (f"; tt.rand({between})" if between else "") + "; y.sum().backward(); tt.rand(3)")
    for k, (g, e) in enumerate(zip(got["masks"], masks, strict=True)):
        assert_close(g, e, rtol=0, atol=0, case=case, against=STREAM,
                     what=f"mask drawn by {'the forward' if k == 0 else 'the recomputation'}")
    assert_close(got["grad"], (stream[grad_at:grad_at + 16] > 0.5).astype(np.float64),
                 rtol=0, atol=0, case=case, against=STREAM,
                 what="x.grad (the mask " + ("of the forward" if preserve else
                                             "the recomputation drew") + ")")
    assert_close(got["between"], stream[16:16 + between], rtol=0, atol=0, case=case,
                 against=STREAM,
                 what="the numbers drawn between forward and backward")
    assert_close(got["next_draw"], stream[next_at:next_at + 3], rtol=0, atol=0, case=case,
                 against=STREAM,
                 what="tt.rand(3) after backward " + (
                     "(the generator continues as without checkpoint)" if preserve else
                     "(after the numbers the recomputation drew)"))


@task("3.4")
def test_checkpoint_without_inputs_requiring_grad(submission):
    """As torch (reentrant): when no input requires grad the output does not either, and a
    warning says so; under no_grad the segment just runs."""
    got = submission.call("checkpoint.no_grad_inputs",
                          seeded_values([1.0, 2.0, 3.0, 4.0, 1.0, 2.0], "3.4 no grad inputs"))
    conform(got, {"requires_grad": Kind(bool), "warned": Kind(bool),
                  "no_grad_requires_grad": Kind(bool), "kwargs": RAISED},
            what="checkpoint.no_grad_inputs")
    assert_equal(got["requires_grad"], False, what="output requires_grad")
    assert_equal(got["warned"], True,
                 what="a warning 'None of the inputs have requires_grad=True'")
    assert_equal(got["no_grad_requires_grad"], False, what="output requires_grad under no_grad")
    assert_raises_like(got["kwargs"], "ValueError", what="checkpoint(fn, x, unknown=1)",
                       contains=("Unexpected keyword arguments",))


def _torch_raising_segment(x, where):
    calls = []

    def seg(a):
        calls.append(1)
        mask = torch.rand(a.shape, dtype=a.dtype)
        if len(calls) == (1 if where == "forward" else 2):
            raise KeyError("boom")
        return a.sin() * mask

    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    error, state = None, None
    try:
        y = torch_checkpoint(seg, xt, use_reentrant=True, preserve_rng_state=True)
        torch.manual_seed(7)
        state = torch.get_rng_state()
        y.sum().backward()
    except KeyError as e:
        error = type(e).__name__
    put_back = state is None or torch.equal(state, torch.get_rng_state())
    x2 = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    torch_checkpoint(torch.sin, x2, use_reentrant=True).sum().backward()
    return {"error": error, "modes": [torch.is_grad_enabled(), torch.is_inference_mode_enabled()],
            "calls": len(calls), "rng_put_back": put_back, "x_grad": x2.grad.numpy()}


@task("3.4")
@settings(max_examples=examples(4))
@given(x=arrays(np.float64, st.integers(1, 4), elements=st.floats(-1.5, 1.5)),
       where=st.sampled_from(["forward", "recompute"]))
def test_raising_segment_reaches_the_caller_and_state_is_restored(submission, x, where):
    """A checkpointed function that raises, in the forward or only in backward's
    recomputation: the exception reaches the caller, grad mode is what it was, the random
    generator is put back (preserve_rng_state), and the next checkpoint and backward work
    normally, as in torch."""
    got = submission.call("checkpoint.raising_segment", x, where)
    expected = _torch_raising_segment(x, where)
    conform(got, {"error": RAISED, "modes": [Kind(bool), Kind(bool)], "calls": Kind(int),
                  "rng_put_back": Kind(bool), "again": RAISED,
                  "x_grad": Kind(None, np.ndarray)}, what="checkpoint.raising_segment")
    axis = ("after an exception in the checkpointed forward" if where == "forward"
            else "after an exception in backward's recomputation")
    case = (f"x = {literal(x)}; y = checkpoint(seg, x, preserve_rng_state=True), seg drawing "
            f"tt.rand and raising KeyError {'at once' if where == 'forward' else 'when recomputed'}"
            "; tt.manual_seed(s); y.sum().backward(); then checkpoint(sin, x2).sum().backward()")
    assert_raises_like(got["error"], expected["error"], what=f"the caller ({axis})", case=case)
    assert_equal(got["calls"], expected["calls"], what=f"calls of seg ({axis})", case=case)
    assert_equal(got["modes"], expected["modes"],
                 what=f"[is_grad_enabled, is_inference_mode_enabled] {axis}", case=case)
    assert_equal(got["rng_put_back"], expected["rng_put_back"],
                 what=f"the random generator put back as backward found it {axis}", case=case)
    assert_raises_like(got["again"], None, what=f"the next checkpoint and backward {axis}",
                       case=case)
    assert_close(got["x_grad"], expected["x_grad"], what=f"x2.grad {axis}", case=case)
