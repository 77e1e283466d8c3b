"""``tt.nn.functional``: the operators PyTorch keeps in ``torch.nn.functional``."""

from __future__ import annotations

import math

import numpy as np

from ..ops import (
    cross_entropy,
    dropout,
    embedding,
    gelu,
    hardtanh,
    layer_norm,
    leaky_relu,
    linear,
    log_softmax,
    matmul,
    mse_loss,
    relu,
    sigmoid,
    softmax,
    tanh,
    where,
)
from ..tensor import Tensor

__all__ = [
    "cross_entropy", "dropout", "embedding", "gelu", "hardtanh", "layer_norm", "leaky_relu",
    "linear", "log_softmax", "mse_loss", "relu", "scaled_dot_product_attention", "sigmoid",
    "softmax", "tanh",
]


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 is_causal: bool = False, scale: float | None = None) -> Tensor:
    """softmax(query @ key^T * scale, future masked with ``is_causal``) @ value for
    (batch, heads, T, D) tensors of one shape (scale 1/sqrt(D) by default); on the cuda
    device the FlashAttention kernels of assignment 6 compute it."""
    if query.ndim != 4 or key.shape != query.shape or value.shape != query.shape:
        raise RuntimeError("tinytrain's scaled_dot_product_attention takes query, key and "
                           "value of one (batch, heads, T, D) shape")
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    if query.is_cuda:
        from ..cuda.device import flash_sdpa

        return flash_sdpa(query, key, value, is_causal, scale)
    scores = matmul(query, key.transpose(-2, -1)) * scale
    if is_causal:
        steps = query.shape[-2]
        future = Tensor(np.triu(np.ones((steps, steps), dtype=bool), k=1))
        scores = where(future, float("-inf"), scores)
    return matmul(softmax(scores, -1), value)
