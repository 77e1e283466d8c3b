"""The MLP of ``graders.probes.memory`` in torch, and its inputs."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch


def mlp_inputs(seed: int, batch: int = 32, width: int = 64, blocks: int = 3) -> tuple[
        np.ndarray, list[np.ndarray]]:
    """An input and the weights of ``blocks`` blocks (W1, b1, W2, b2 each), float64."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, width))
    weights = []
    for _ in range(blocks):
        for _ in range(2):
            weights.append(rng.standard_normal((width, width)) / np.sqrt(width))
            weights.append(rng.standard_normal(width) * 0.1)
    return x, weights


def mlp_grads(x: np.ndarray, weights: list[np.ndarray]) -> list[np.ndarray]:
    """Gradients of sum(MLP(x)) for x and every weight: blocks h -> tanh(sin(h W1 + b1) W2
    + b2)."""
    xt = torch.tensor(x, requires_grad=True)
    params = [torch.tensor(w, requires_grad=True) for w in weights]
    h: Any = xt
    for i in range(0, len(params), 4):
        w1, b1, w2, b2 = params[i:i + 4]
        h = torch.tanh(torch.sin(h @ w1 + b1) @ w2 + b2)
    h.sum().backward()
    return [xt.grad.numpy()] + [p.grad.numpy() for p in params]


def run_template(grads: list[Any]) -> dict[str, Any]:
    """The structure of ``graders.probes.memory.mlp``'s answer (for
    ``graders.checks.structure.conform``): its byte counts, file counts (numbers or None),
    calls of the blocks, and one gradient per tensor (an array or None where ``grads``
    has an array, compared later; anything where it has None)."""
    from ..checks.structure import Kind

    count = Kind(None, int)
    return {"live_bytes": Kind(int), "traced_bytes": Kind(int), "files_after_forward": count,
            "files_after_backward": count, "block_calls": [Kind(int), Kind(int)],
            "grads": [None if g is None else Kind(None, np.ndarray) for g in grads],
            "activation_bytes": Kind(int)}
