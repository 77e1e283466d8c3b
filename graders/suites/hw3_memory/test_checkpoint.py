"""Task 3.4: activation checkpointing (tt.utils.checkpoint.checkpoint)."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.checkpoint import checkpoint as torch_checkpoint

from graders.checks import assert_close, assert_equal, assert_raises_like
from graders.oracle import memory as oracle
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
    names = ["x"] + [f"{n}{i // 4}" for i, n in enumerate(["W1_", "b1_", "W2_", "b2_"] * 3)]
    for name, g, p, e in zip(names, got["grads"], plain["grads"], expected):
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


def _torch_segments(x, k):
    xt = torch.tensor(x, requires_grad=True)
    w = torch.tensor(np.linspace(0.5, 1.5, x.shape[-1]), requires_grad=True)

    def segment(a, scale, b):
        return (a * w).sin() * scale, (b * a).exp()

    b = torch.tensor(x[::-1].copy(), requires_grad=True)
    y1, y2 = torch_checkpoint(segment, xt, k, b, use_reentrant=True)
    (y1.sum() + 2 * y2.sum()).backward()
    return [xt.grad.numpy(), w.grad.numpy(), b.grad.numpy()], [y1.detach().numpy(),
                                                               y2.detach().numpy()]


@task("3.4")
@settings(max_examples=examples(5))
@given(x=st.lists(st.floats(-1, 1), min_size=3, max_size=5).map(np.array),
       k=st.sampled_from([0.5, -2.0]))
def test_checkpoint_segment_like_torch(submission, x, k):
    """A segment with two outputs, a number among its arguments and a parameter it uses
    from outside (which gets its gradient through the recomputation): torch's values and
    gradients."""
    got = submission.call("checkpoint.segment", x, k)
    grads, outputs = _torch_segments(x, k)
    case = ("def segment(a, scale, b): return (a * w).sin() * scale, (b * a).exp()\n"
            "y1, y2 = checkpoint(segment, x, k, b); (y1.sum() + 2 * y2.sum()).backward()")
    for name, g, e in zip(["y1", "y2"], got["outputs"], outputs):
        assert_close(g, e, what=name, case=case)
    for name, g, e in zip(["x.grad", "w.grad", "b.grad"], got["grads"], grads):
        assert_close(g, e, what=name, case=case)
    assert_equal(got["calls"], 2, what="calls of segment (forward, then recomputation)",
                 case=case)
    assert_equal(got["recorded_in_forward"], False,
                 what="the segment's ops were recorded in the forward (they must not be)",
                 case=case)


@task("3.4")
def test_checkpoint_replays_random_numbers(submission):
    """Random ops inside the segment draw the same numbers when it is recomputed, and the
    generator continues afterwards as if there had been no recomputation."""
    got = submission.call("checkpoint.random_segment")
    assert_close(got["grad"], got["mask"], what="x.grad of sum(x * (tt.rand(n) > .5)) "
                 "under checkpoint: the mask of the forward")
    assert_close(got["next_draw"], got["next_draw_plain"],
                 what="tt.rand after backward vs the same run without checkpoint")


@task("3.4")
def test_checkpoint_without_inputs_requiring_grad(submission):
    """As torch (reentrant): when no input requires grad the output does not either, and a
    warning says so; under no_grad the segment just runs."""
    got = submission.call("checkpoint.no_grad_inputs")
    assert_equal(got["requires_grad"], False, what="output requires_grad")
    assert_equal(got["warned"], True,
                 what="a warning 'None of the inputs have requires_grad=True'")
    assert_equal(got["no_grad_requires_grad"], False, what="output requires_grad under no_grad")
    assert_raises_like(got["kwargs"], "ValueError", what="checkpoint(fn, x, unknown=1)",
                       contains=("Unexpected keyword arguments",))
