"""Task 5.12: causal multi-head self-attention against a PyTorch twin with the same
weights (``graders.oracle.gpt.CausalSelfAttention``): output, the gradient of every
weight and of the input; and causality (no position sees a later one)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graders.checks import assert_close
from graders.checks.structure import Kind, Shaped, conform
from graders.oracle import gpt as oracle
from graders.suites._support import examples, task

DTYPES = {"float64": torch.float64, "float32": torch.float32}


VARIANTS = ["one head", "several heads", "no biases", "float32"]


@st.composite
def _cases(draw: Any, variant: str = "") -> dict[str, Any]:
    """A layer (1 to 4 heads of size 1 to 5, no dropout: Dropout is task 5.10's) and an
    input; ``variant`` fixes one feature."""
    n_head = 1 if variant == "one head" else draw(st.integers(2, 4))
    cfg = oracle.config(n_head=n_head, n_embd=n_head * draw(st.integers(1, 5)),
                        bias=variant != "no biases")
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return {"cfg": cfg, "seed": int(rng.integers(2**31)), "rng": rng,
            "batch": draw(st.integers(1, 3)), "steps": draw(st.integers(1, 6)),
            "dtype": "float32" if variant == "float32" else "float64"}


def _describe(case: dict[str, Any], dtype: str) -> str:
    cfg = case["cfg"]
    options = ", ".join(f"{k}={cfg[k]!r}" for k in ("n_embd", "n_head", "bias"))
    return (f"tt.models.CausalSelfAttention(GPTConfig({options})) with PyTorch's weights, "
            f"on a {dtype} input of shape ({case['batch']}, {case['steps']}, {cfg['n_embd']})")


@task("5.12")
@pytest.mark.parametrize("variant", VARIANTS)
@settings(max_examples=examples(12))
@given(data=st.data())
def test_attention_matches_torch(submission, variant, data):
    """Output, the gradient of every weight and of the input, as PyTorch's
    softmax(q k^T / sqrt(head_size) + causal mask) v per head, the heads concatenated and
    projected (float64 unless the variant says float32)."""
    case = data.draw(_cases(variant), label="case")
    cfg, rng, dtype = case["cfg"], case["rng"], case["dtype"]
    module, weights = oracle.attention(cfg, case["seed"], DTYPES[dtype])
    shape = (case["batch"], case["steps"], cfg["n_embd"])
    x = rng.uniform(-1.0, 1.0, shape).astype(dtype)
    grad_output = rng.uniform(-1.0, 1.0, shape).astype(dtype)
    expected = oracle.attention_run(module, x, grad_output)
    got = submission.call("gpt.attention", cfg, weights, x, grad_output)
    conform(got, {"output": Kind(np.ndarray), "grads": Kind(dict),
                  "input_grad": Kind(None, np.ndarray)}, what="gpt.attention")
    what = _describe(case, dtype)
    assert_close(got["output"], expected["output"], what="output", case=what)
    for name, value in expected["grads"].items():
        assert_close(got["grads"].get(name), value, what=f"gradient of {name}", case=what)
    assert_close(got["input_grad"], expected["input_grad"], what="gradient of the input",
                 case=what)


@task("5.12")
@settings(max_examples=examples(15))
@given(case=_cases(), data=st.data())
def test_attention_is_causal(submission, case, data):
    """Changing the input at positions >= t leaves the outputs at positions < t exactly as
    they were, and out[:, :t] has no gradient with respect to positions >= t."""
    cfg, rng = case["cfg"], case["rng"]
    steps = max(case["steps"], 2)
    t = data.draw(st.integers(1, steps - 1), label="t")
    module, weights = oracle.attention(cfg, case["seed"])
    shape = (case["batch"], steps, cfg["n_embd"])
    x = rng.uniform(-1.0, 1.0, shape)
    x_changed = x.copy()
    x_changed[:, t:] = rng.uniform(-1.0, 1.0, x_changed[:, t:].shape)
    got = submission.call("gpt.attention_causality", cfg, weights, x, x_changed, t)
    conform(got, {"output": Shaped(shape), "output_changed": Shaped(shape),
                  "input_grad": Shaped(shape)}, what="gpt.attention_causality")
    what = f"{_describe({**case, 'steps': steps}, 'float64')}; x_changed differs from x " \
           f"at positions >= {t}"
    assert_close(got["output_changed"][:, :t], got["output"][:, :t], rtol=0, atol=1e-12,
                 what=f"outputs at positions < {t} for x_changed versus x (a position must "
                      "not attend to later ones: mask scores above the diagonal with -inf "
                      "before the softmax)", case=what)
    assert_close(got["input_grad"][:, t:], np.zeros_like(x[:, t:]), rtol=0, atol=0,
                 what=f"gradient of out[:, :{t}].sum() with respect to the input at "
                      f"positions >= {t}", case=what)
    # the outputs and gradient compared above are the layer's own: they must be torch's
    inputs = torch.from_numpy(x.copy()).requires_grad_(True)
    out = module(inputs)
    out[:, :t].sum().backward()
    assert_close(got["output"], out.detach().numpy(), what="output for x", case=what)
    assert_close(got["input_grad"], inputs.grad.numpy(), case=what,
                 what=f"gradient of out[:, :{t}].sum() with respect to the input")
