"""Task 6.4 (second half): fused cross-entropy, the loss and its gradient in one kernel.

One program per row walks the logits with an online maximum and sum (as the softmax of
6.2) to get logsumexp, reads the target's logit, writes the row's loss, then walks the
row again writing grad_scale * (softmax - onehot(target)): the probabilities are never
stored, so the (rows, vocabulary) softmax never exists in memory.
"""

from __future__ import annotations

import numpy as np

from ._runtime import launch, load_triton

triton = load_triton()
tl = triton.language

BLOCK = 128  # the wrapper's block (the grader launches the kernel with its own)


@triton.jit
def cross_entropy_kernel(logits_ptr, targets_ptr, loss_ptr, dlogits_ptr, n_rows, n_cols,
                         stride_lr, stride_lc, stride_dr, stride_dc, ignore_index, grad_scale,
                         BLOCK_N: tl.constexpr):
    """For row r of logits (n_rows, n_cols), any strides, with target t = targets[r]
    (int64): loss[r] = logsumexp(logits[r]) - logits[r, t] (float32), and
    dlogits[r] = grad_scale * (softmax(logits[r]) - onehot(t)) in dlogits' dtype; a row
    whose target is ignore_index gets loss 0 and a zero gradient (its target is not a
    column: never read logits[r, t] then).

    Grid: (n_rows,); blocks of BLOCK_N (smaller than n_cols is fine) with an online max and
    sum, as softmax_kernel."""
    raise NotImplementedError("task 6.4: Fused LayerNorm (forward, backward, dW/db across rows) and fused cross-entropy")


def cross_entropy(logits: np.ndarray, targets: np.ndarray, ignore_index: int = -100,
                  grad_scale: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per-row losses (float32) and the gradient of ``grad_scale * sum(losses)`` for logits
    (rows, classes) and int64 targets (rows,), by ``cross_entropy_kernel``. Without
    ``grad_scale`` it is 1 / (number of rows not ignored): the gradient of the mean loss."""
    raise NotImplementedError("task 6.4: Fused LayerNorm (forward, backward, dW/db across rows) and fused cross-entropy")
