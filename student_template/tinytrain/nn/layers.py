"""Layers with parameters or modes: Linear, Embedding, LayerNorm, Dropout.

Each creates its parameters in ``__init__`` and fills them in ``reset_parameters`` with
PyTorch's default initialisation (drawn from tinytrain's generator, so ``tt.manual_seed``
fixes them); ``forward`` calls the operator in ``tt.nn.functional``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from ..ops.layers import _padding_index
from ..tensor import Tensor
from . import functional as F  # noqa: N812 - PyTorch's usual name
from . import init
from .module import Module
from .parameter import Parameter


def _parameter(shape: tuple[int, ...], dtype: Any) -> Parameter:
    """An uninitialised (zero) parameter of the given dtype (default: the default dtype)."""
    np_dtype = dtypes.to_numpy_dtype(dtype) or dtypes.get_default_dtype().np
    return Parameter(Tensor(np.zeros(shape, np_dtype)))


class Linear(Module):
    """``y = x @ weight.T + bias``; weight (out_features, in_features), bias
    (out_features,).

    Initialisation (PyTorch's): weight ~ kaiming_uniform_(a=sqrt(5)), which is
    U(-1/sqrt(in_features), 1/sqrt(in_features)), and bias ~ the same uniform.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 dtype: Any = None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = _parameter((out_features, in_features), dtype)
        if bias:
            self.bias = _parameter((out_features,), dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw weight and bias again from PyTorch's default distributions."""
        # HINT: PyTorch calls init.kaiming_uniform_(weight, a=math.sqrt(5)); the bias is
        # HINT: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (0 when fan_in is 0)
        raise NotImplementedError("task 5.8: Linear and Embedding: PyTorch's initialisation, the embedding operator")

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Embedding(Module):
    """A lookup table: ``forward(indices)`` returns ``weight[indices]``.

    Initialisation: weight ~ N(0, 1), and the row ``padding_idx`` (if given) zeros; that
    row also receives no gradient.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int,
                 padding_idx: int | None = None, dtype: Any = None) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = _padding_index(padding_idx, num_embeddings)
        self.weight = _parameter((num_embeddings, embedding_dim), dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        raise NotImplementedError("task 5.8: Linear and Embedding: PyTorch's initialisation, the embedding operator")

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        return text if self.padding_idx is None else text + f", padding_idx={self.padding_idx}"


class LayerNorm(Module):
    """Normalise over the trailing dims ``normalized_shape``; with
    ``elementwise_affine``, a weight (ones) and, unless ``bias=False``, a bias (zeros)."""

    def __init__(self, normalized_shape: int | tuple[int, ...] | list[int], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True, dtype: Any = None) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = _parameter(self.normalized_shape, dtype)
            if bias:
                self.bias = _parameter(self.normalized_shape, dtype)
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class Dropout(Module):
    """In training mode, zero each element with probability ``p`` and scale the others by
    ``1 / (1 - p)``; in eval mode (``.eval()``), the identity."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"
