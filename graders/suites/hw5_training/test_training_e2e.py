"""Task 5.14 (integration): end to end. The same GPT trained for a few steps in tinytrain
(the submission's model, backward, configure_optimizers and AdamW) and in PyTorch, from
identical float64 weights on identical batches: the loss must match torch's at every step,
and the weights at the end. The oracle trains live (no stored reference files).

Tolerance. Both sides evaluate the same float64 formulas; only the order of floating-point
sums differs (BLAS blocking, NumPy's pairwise sums, torch's gradient accumulation), so
values agree to about 1e-16 relative per operation. Measured on the reference over 12
runs of these cases: losses within 5e-16 relative, weights within 5e-11 absolute after 8
steps. Weights drift more than losses because Adam divides by sqrt(v) + eps: a gradient
entry of the size of eps (1e-8) turns rounding noise into update noise amplified by up to
lr / eps. The losses must therefore agree to rtol 1e-9 (atol 1e-12), the weights to
torch.testing's float64 default (1e-7, 1e-7): a thousand times the noise, and a thousand
times below any real mistake (a LayerNorm with the unbiased variance, a missing causal
mask, Adam without bias correction or AdamW decaying inside the gradient all move the
loss by 1e-3 or more within the first three steps).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from graders.checks import assert_close, assert_equal
from graders.checks.structure import Kind, ListOf, conform
from graders.oracle import gpt as oracle
from graders.suites._seed import case_rng, case_seed, grading_seed
from graders.suites._support import task

LOSS_TOLERANCE = (1e-9, 1e-12)  # (rtol, atol); see the module docstring
STEPS, BATCH = 8, (4, 8)
OPTIONS = {"weight_decay": 0.1, "learning_rate": 3e-3, "betas": [0.9, 0.95]}
CASES = {
    "tied head": oracle.config(),
    "untied head, no biases, exact GELU": oracle.config(tie_weights=False, bias=False,
                                                        gelu_approximate="none"),
}


def options(name: str) -> dict[str, Any]:
    """AdamW's hyperparameters, drawn from the grading seed (``OPTIONS`` at seed 0)."""
    if grading_seed() == 0:
        return OPTIONS
    rng = case_rng(0, "5.14 options", name)
    return {"weight_decay": round(float(rng.uniform(0.01, 0.2)), 3),
            "learning_rate": round(float(rng.uniform(1e-3, 5e-3)), 5),
            "betas": [round(float(rng.uniform(0.8, 0.95)), 3), round(float(rng.uniform(0.9, 0.99)), 3)]}


def batches(seed: int, vocab: int, key: str = "") -> list[list[np.ndarray]]:
    """Counting sequences (next token = token + 1 mod vocab) with 30% noise tokens."""
    rng = case_rng(seed, "5.14 batches", key)
    out = []
    for _ in range(STEPS):
        idx = (rng.integers(0, vocab, (BATCH[0], 1)) + np.arange(BATCH[1])) % vocab
        idx = np.where(rng.random(BATCH) < 0.3, rng.integers(0, vocab, BATCH), idx)
        out.append([idx, (idx + 1) % vocab])
    return out


def _options_source(options: dict[str, Any]) -> str:
    return ", ".join(f"{k}={tuple(v) if isinstance(v, list) else v!r}"
                     for k, v in options.items())


@task("5.14")
@pytest.mark.parametrize("name", list(CASES))
def test_param_groups_match_torch(submission, name):
    """configure_optimizers returns an AdamW with two groups, as nanoGPT's: the weights
    with 2 or more dims decay, the biases and LayerNorm weights do not; each parameter
    once (a tied weight too), in named_parameters() order."""
    cfg, opts = CASES[name], options(name)
    model, weights = oracle.gpt(cfg, case_seed(0, "5.14 groups", name))
    expected = oracle.param_groups(model, opts)
    got = submission.call("gpt.param_groups", cfg, weights, opts, timeout=30)
    conform(got, ListOf(Kind(dict)), what="gpt.param_groups")
    what = f"model.configure_optimizers({_options_source(opts)})"
    assert_equal(len(got), len(expected), what=f"{what}: number of parameter groups",
                 case=oracle.describe(cfg))
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        assert_equal(g, e, what=f"{what}: param_groups[{k}] (parameter names in order, and "
                                "hyperparameters)", case=oracle.describe(cfg))


@task("5.14")
@pytest.mark.parametrize("name", list(CASES))
def test_training_matches_torch(submission, name):
    """Eight AdamW steps (zero_grad, forward, backward, step) from torch's weights on the
    same batches: the loss of every step, then every weight, as PyTorch's."""
    cfg, opts = CASES[name], options(name)
    data = batches(1, cfg["vocab_size"], name)
    model, weights = oracle.gpt(cfg, case_seed(0, "5.14 train", name))
    expected = oracle.train(model, data, opts)
    got = submission.call("gpt.train", cfg, weights, data, opts, timeout=30)
    conform(got, {"losses": Kind(np.ndarray), "params": Kind(dict)}, what="gpt.train")
    what = (f"{oracle.describe(cfg, BATCH)}, {STEPS} steps of opt = model.configure_optimizers("
            f"{_options_source(opts)}) on counting sequences (next token = token + 1)")
    rtol, atol = LOSS_TOLERANCE
    losses = np.asarray(got["losses"], dtype=np.float64)
    assert_equal(losses.shape, expected["losses"].shape, what="number of losses", case=what)
    for k in range(STEPS):
        assert_close(losses[k:k + 1], expected["losses"][k:k + 1], rtol=rtol, atol=atol,
                     what=f"loss at step {k + 1} (losses so far: got {losses[:k + 1].round(6)}, "
                          f"PyTorch {expected['losses'][:k + 1].round(6)})", case=what)
    for key, value in expected["params"].items():
        assert_close(got["params"].get(key), value, what=f"{key} after {STEPS} steps", case=what)
