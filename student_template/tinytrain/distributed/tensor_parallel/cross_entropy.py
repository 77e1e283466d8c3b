"""Cross entropy over logits whose vocabulary dim is split over the ranks (task 7.3),
after Megatron-LM's ``vocab_parallel_cross_entropy``: no rank ever holds the whole
logits. Three all-reduces over small tensors (one value per token): the maximum logit
(for stability), the sum of the exponentials, and the target's logit (held by one rank).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...autograd.function import BackwardNode, Function
from ...tensor import Tensor
from ..collectives import api as dist


class _VocabParallelCrossEntropy(Function):
    opmath = False

    @staticmethod
    def forward(ctx: BackwardNode, logits: Tensor, target: Tensor, group: Any) -> np.ndarray:
        # HINT: loss = log(sum_j exp(x_j - m)) - (x_target - m), with m the largest logit
        # HINT: over all ranks; each sum is a local sum all-reduced over the ranks
        raise NotImplementedError("task 7.3: Tensor parallelism: conjugate operators, column/row-parallel Linear, heads split, vocabulary-parallel embedding and cross entropy")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray, None, None]:
        # HINT: d loss / d x_j = softmax_j - [j is the target]: no communication
        raise NotImplementedError("task 7.3: Tensor parallelism: conjugate operators, column/row-parallel Linear, heads split, vocabulary-parallel embedding and cross entropy")


def vocab_parallel_cross_entropy(logits: Tensor, target: Tensor, group: Any = None) -> Tensor:
    """Per-token cross entropy (shape of ``target``) of ``logits`` (..., vocab / world):
    this rank's part of the vocabulary (rank r holds classes [r*v, (r+1)*v))."""
    return _VocabParallelCrossEntropy.apply(logits, target, group)
