"""Operators behind the layers: embedding (task 5.8), layer_norm (task 5.9) and dropout
(task 5.10), each a Function with a hand-written backward."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from .. import random as tt_random
from ..autograd.function import BackwardNode, Function
from ..tensor import Tensor


class Embedding(Function):
    """Rows of ``weight`` picked by integer ``indices``: the output has shape
    ``indices.shape + (embedding_dim,)``. The row ``padding_idx`` gets no gradient."""

    @staticmethod
    def forward(ctx: BackwardNode, indices: Tensor, weight: Tensor,
                padding_idx: int | None) -> np.ndarray:
        # HINT: PyTorch raises IndexError("index out of range in self") for an index < 0 or
        # HINT: >= num_embeddings (NumPy would wrap negative ones around); np.take copies
        raise NotImplementedError("task 5.8: Linear and Embedding: PyTorch's initialisation, the embedding operator")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[None, np.ndarray]:
        # HINT: a row picked several times gets the sum of its gradients: np.add.at adds at
        # HINT: repeated indices (grad_weight[idx] += g keeps only one of them)
        raise NotImplementedError("task 5.8: Linear and Embedding: PyTorch's initialisation, the embedding operator")


class LayerNorm(Function):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last
    ``len(normalized_shape)`` dims, with the biased variance (divided by N)."""

    autocast_policy = "fp32"  # PyTorch's CUDA autocast runs layer_norm in float32

    @staticmethod
    def forward(ctx: BackwardNode, input: Tensor, normalized_shape: tuple[int, ...],
                weight: Tensor | None, bias: Tensor | None, eps: float) -> np.ndarray:
        # HINT: save x_hat = (x - mean) / std and 1 / std: backward needs nothing else
        # HINT: (besides weight)
        raise NotImplementedError("task 5.9: LayerNorm: forward and a hand-written backward")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        # HINT: with g = grad * weight and means over the normalised dims:
        # HINT: dx = (g - mean(g) - x_hat * mean(g * x_hat)) / std
        # HINT: weight and bias gradients sum over the other (batch) dims
        raise NotImplementedError("task 5.9: LayerNorm: forward and a hand-written backward")


class Dropout(Function):
    """Inverted dropout in training: each element is zeroed with probability ``p`` and the
    others are scaled by ``1 / (1 - p)``, so the expected value is unchanged."""

    @staticmethod
    def forward(ctx: BackwardNode, input: Tensor, p: float) -> np.ndarray:
        # HINT: draw from tinytrain's global generator (tt_random.default_generator()), so
        # HINT: tt.manual_seed fixes the mask; p == 1 drops everything (no 1 / 0 scale)
        raise NotImplementedError("task 5.10: Dropout: inverted scaling, train versus eval")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray, None]:
        raise NotImplementedError("task 5.10: Dropout: inverted scaling, train versus eval")


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None) -> Tensor:
    """The rows of ``weight`` (num_embeddings, embedding_dim) at the integer ``input``
    indices; ``padding_idx`` (may be negative) names a row that receives no gradient."""
    if input.dtype not in (dtypes.int64, dtypes.int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {input.dtype.name} instead (while checking arguments "
            "for embedding)"
        )
    return Embedding.apply(input, weight, _padding_index(padding_idx, weight.shape[0]))


def _padding_index(padding_idx: int | None, num_embeddings: int) -> int | None:
    """``padding_idx`` as a row number in ``[0, num_embeddings)`` (negative counts back)."""
    if padding_idx is None:
        return None
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx % num_embeddings


def layer_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Layer normalisation over the trailing dims ``normalized_shape`` (an int or a
    tuple), with optional elementwise ``weight`` and ``bias`` of that shape."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if len(shape) > input.ndim or input.shape[input.ndim - len(shape):] != shape:
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape "
            f"[*, {', '.join(str(n) for n in shape)}], but got input of size{list(input.shape)}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.shape != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but "
                               f"got {name} of shape {list(t.shape)} and normalized_shape = "
                               f"{list(shape)}")
    return LayerNorm.apply(input, shape, weight, bias, eps)


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``
    when ``training``; the identity (``input`` itself) otherwise or when ``p == 0``."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if inplace:
        raise RuntimeError("tinytrain: dropout(inplace=True) is not supported")
    if not training or p == 0:
        return input
    return Dropout.apply(input, p)
