"""Task 5.13 (integration): the GPT model against a PyTorch twin with the same weights
(``graders.oracle.gpt.GPT``): logits, loss and the gradient of every weight, tied or untied
head, with or without biases, exact or tanh GELU. It runs every layer of the model, so a
bug in any of them (tasks 5.8-5.12) shows here too."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graders.checks import assert_close, assert_equal
from graders.checks.structure import Kind, Shaped, conform
from graders.oracle import gpt as oracle
from graders.suites._support import examples, task

VARIANTS = ["tied head", "untied head", "no biases", "exact GELU"]


@st.composite
def gpt_cases(draw: Any, variant: str = "") -> dict[str, Any]:
    """A model (1 or 2 blocks, 1 to 3 heads, tanh GELU, biases, tied head unless the
    ``variant`` says otherwise), a batch of token indices and targets."""
    n_head = draw(st.integers(1, 3))
    cfg = oracle.config(
        vocab_size=draw(st.integers(3, 20)), block_size=draw(st.integers(2, 8)),
        n_layer=draw(st.integers(1, 2)), n_head=n_head,
        n_embd=n_head * draw(st.sampled_from([2, 4, 8])), bias=variant != "no biases",
        tie_weights=variant != "untied head",
        gelu_approximate="none" if variant == "exact GELU" else "tanh")
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    steps = draw(st.integers(1, cfg["block_size"]))
    shape = (draw(st.integers(1, 3)), steps)
    idx = rng.integers(0, cfg["vocab_size"], shape)
    targets = rng.integers(0, cfg["vocab_size"], shape)
    targets[rng.random(shape) < 0.2] = -100  # ignored positions
    targets.flat[0] = 0  # at least one counts
    return {"cfg": cfg, "seed": int(rng.integers(2**31)), "idx": idx, "targets": targets,
            "rng": rng}


@task("5.13")
@pytest.mark.parametrize("variant", VARIANTS)
@settings(max_examples=examples(10))
@given(data=st.data())
def test_gpt_matches_torch(submission, variant, data):
    """logits (B, T, vocab) and the mean cross entropy (targets -100 ignored), the
    gradient of the loss for every weight (a tied weight gets both uses), and
    model(idx) without targets returns (logits, None)."""
    case = data.draw(gpt_cases(variant), label="case")
    cfg = case["cfg"]
    model, weights = oracle.gpt(cfg, case["seed"])
    expected = oracle.gpt_forward(model, case["idx"], case["targets"])
    got = submission.call("gpt.gpt_forward", cfg, weights, case["idx"], case["targets"],
                          timeout=30)
    conform(got, {"logits": Kind(np.ndarray), "loss": Kind(np.ndarray), "grads": Kind(dict),
                  "logits_without_targets": Kind(np.ndarray),
                  "loss_without_targets": Kind(None, np.ndarray)}, what="gpt.gpt_forward")
    what = oracle.describe(cfg, case["idx"].shape)
    assert_close(got["logits"], expected["logits"], what="logits", case=what)
    assert_close(got["loss"], expected["loss"], what="loss", case=what)
    for name, value in expected["grads"].items():
        assert_close(got["grads"].get(name), value, what=f"gradient of {name}", case=what)
    assert_close(got["logits_without_targets"], expected["logits"],
                 what="logits of model(idx) (no targets)", case=what)
    assert_equal(got["loss_without_targets"], None, what="loss of model(idx) (no targets)",
                 case=what)


@task("5.13")
@settings(max_examples=examples(10))
@given(case=gpt_cases(), data=st.data())
def test_gpt_is_causal(submission, case, data):
    """Changing the tokens at positions >= t leaves the logits at positions < t
    unchanged: the model only looks back."""
    cfg, rng = case["cfg"], case["rng"]
    idx = case["idx"]
    if idx.shape[1] < 2:
        idx = rng.integers(0, cfg["vocab_size"], (idx.shape[0], 2))
        cfg = {**cfg, "block_size": max(cfg["block_size"], 2)}
    model, weights = oracle.gpt(cfg, case["seed"])
    t = data.draw(st.integers(1, idx.shape[1] - 1), label="t")
    changed = idx.copy()
    changed[:, t:] = (idx[:, t:] + 1) % cfg["vocab_size"]
    got = submission.call("gpt.gpt_logits", cfg, weights, [idx, changed], timeout=30)
    shape = (*idx.shape, cfg["vocab_size"])
    conform(got, [Shaped(shape), Shaped(shape)], what="gpt.gpt_logits")
    what = oracle.describe(cfg, idx.shape)
    assert_close(got[1][:, :t], got[0][:, :t], rtol=0, atol=1e-12,
                 what=f"logits at positions < {t} after changing the tokens at positions "
                      f">= {t}", case=what)
    # the logits compared above are the model's own: they must be torch's
    assert_close(got[0], oracle.gpt_forward(model, idx, idx)["logits"], what="logits",
                 case=what)
