"""The single-process PyTorch computations the assignment-7 graders compare every rank
with (no torch.distributed: a data-parallel step is the full batch's step, a tensor- or
pipeline-parallel layer is the unsharded layer), and the data they send.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812 - the usual name
from torch import nn


# ----- the probes' MLP ------------------------------------------------------------------
class MLP(nn.Module):
    """Linear layers fc0, fc1, ... with tanh between them (the probes' model)."""

    def __init__(self, widths: list[int]) -> None:
        super().__init__()
        self.depth = len(widths) - 1
        for i in range(self.depth):
            setattr(self, f"fc{i}", nn.Linear(widths[i], widths[i + 1], dtype=torch.float64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i in range(self.depth):
            x = getattr(self, f"fc{i}")(x)
            if i < self.depth - 1:
                x = torch.tanh(x)
        return x


def mlp_weights(widths: list[int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Random float64 weights by name (uniform, scaled so tanh does not saturate)."""
    out = {}
    for i in range(len(widths) - 1):
        bound = 1.0 / math.sqrt(widths[i])
        out[f"fc{i}.weight"] = rng.uniform(-bound, bound, (widths[i + 1], widths[i])) * 1.5
        out[f"fc{i}.bias"] = rng.uniform(-0.5, 0.5, (widths[i + 1],))
    return out


def load(module: nn.Module, weights: dict[str, np.ndarray]) -> None:
    with torch.no_grad():
        for name, p in module.named_parameters():
            p.copy_(torch.from_numpy(np.array(weights[name])))


def ddp_train(widths: list[int], weights: dict[str, np.ndarray],
              batches: list[list[list[tuple[np.ndarray, np.ndarray]]]], lr: float,
              ) -> dict[str, Any]:
    """What every rank of DDP must compute, in one process: per step, the gradient of
    (1 / world) * sum over ranks and micro-batches of each micro-batch's mse loss (the
    average over ranks of gradients accumulated over micro-batches), then SGD.
    ``losses[r]`` are rank r's micro-batch losses in order."""
    model = MLP(widths)
    load(model, weights)
    world = len(batches[0][0])
    losses: list[list[float]] = [[] for _ in range(world)]
    step_grads, step_params = [], []
    for micro_batches in batches:
        model.zero_grad(set_to_none=True)
        total = 0.0
        for per_rank in micro_batches:
            for rank, (x, y) in enumerate(per_rank):
                loss = F.mse_loss(model(torch.from_numpy(x)), torch.from_numpy(y))
                losses[rank].append(loss.item())
                total = total + loss
        (total / world).backward()
        step_grads.append({n: p.grad.numpy().copy() for n, p in model.named_parameters()})
        with torch.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
        step_params.append({n: p.detach().numpy().copy() for n, p in model.named_parameters()})
    return {"losses": [np.array(v) for v in losses], "grads": step_grads, "params": step_params}


def bucket_assignment(sizes: list[int], cap: int) -> list[list[int]]:
    """PyTorch's rule (``compute_bucket_assignment_by_size``, one size limit) applied to
    the parameters in reverse registration order; indices in registration order."""
    import torch.distributed as dist  # the helper, no process group

    n = len(sizes)
    tensors = [torch.empty(size, dtype=torch.uint8) for size in reversed(sizes)]
    buckets, _ = dist._compute_bucket_assignment_by_size(tensors, [cap], [False] * n)
    return [[n - 1 - i for i in bucket] for bucket in buckets]
