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
    # BEGIN SOLUTION 6.4
    row = tl.program_id(0)
    target = tl.load(targets_ptr + row)
    ignored = target == ignore_index
    x_row = logits_ptr + row * stride_lr
    m = tl.full((BLOCK_N,), float("-inf"), tl.float32)
    s = tl.zeros((BLOCK_N,), tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols * stride_lc, mask=cols < n_cols, other=float("-inf"))
        x = x.to(tl.float32)
        m_new = tl.maximum(m, x)
        shift = tl.where(m_new > float("-inf"), m_new, 0.0)  # no -inf - -inf (NaN)
        s = s * tl.exp(m - shift) + tl.exp(x - shift)
        m = m_new
    row_max = tl.max(m, 0)
    lse = row_max + tl.log(tl.sum(tl.where(m > float("-inf"), s * tl.exp(m - row_max), 0.0), 0))
    # an ignored row reads column 0 instead (the 3.9.0 interpreter rejects a scalar mask)
    target_logit = tl.load(x_row + tl.where(ignored, 0, target) * stride_lc)
    loss = tl.where(ignored, 0.0, lse - target_logit.to(tl.float32))
    tl.store(loss_ptr + row, loss)
    scale = tl.where(ignored, 0.0, grad_scale)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        x = tl.load(x_row + cols * stride_lc, mask=mask, other=0.0).to(tl.float32)
        grad = (tl.exp(x - lse) - tl.where(cols == target, 1.0, 0.0)) * scale
        tl.store(dlogits_ptr + row * stride_dr + cols * stride_dc,
                 grad.to(dlogits_ptr.dtype.element_ty), mask=mask)
    # END SOLUTION


def cross_entropy(logits: np.ndarray, targets: np.ndarray, ignore_index: int = -100,
                  grad_scale: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per-row losses (float32) and the gradient of ``grad_scale * sum(losses)`` for logits
    (rows, classes) and int64 targets (rows,), by ``cross_entropy_kernel``. Without
    ``grad_scale`` it is 1 / (number of rows not ignored): the gradient of the mean loss."""
    # BEGIN SOLUTION 6.4
    rows, cols = logits.shape
    targets = np.ascontiguousarray(targets, np.int64)
    if grad_scale is None:
        grad_scale = 1.0 / max(int((targets != ignore_index).sum()), 1)
    loss = np.empty(rows, np.float32)
    dlogits = np.empty((rows, cols), logits.dtype)
    item = logits.itemsize
    launch(cross_entropy_kernel, (rows,), logits, targets, loss, dlogits, rows, cols,
           logits.strides[0] // item, logits.strides[1] // item, cols, 1, ignore_index,
           float(grad_scale), BLOCK_N=BLOCK)
    return loss, dlogits
    # END SOLUTION
