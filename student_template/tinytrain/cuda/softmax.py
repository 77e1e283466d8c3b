"""Task 6.2: row softmax and log_softmax, forward and backward.

One program per row walks the row in blocks of BLOCK_N. The forward keeps a running
maximum m and a running sum s of exp(x - m) per lane: when a block raises m, the sum so far
is rescaled by exp(m_old - m_new) (the "online softmax"), so the statistics take one pass
over the row and the output a second; no exp ever sees a large positive argument, so
logits of +-1e4 are fine.
"""

from __future__ import annotations

import numpy as np

from ._runtime import launch, load_triton

triton = load_triton()
tl = triton.language

BLOCK = 128  # the wrappers' block (the grader launches the kernels with its own)


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_rows, n_cols, stride_xr, stride_xc, stride_yr, stride_yc,
                   LOG: tl.constexpr, BLOCK_N: tl.constexpr):
    """y[r] = softmax(x[r]) (LOG: log_softmax) for each row r of x (n_rows, n_cols), any
    strides; computed in float32, stored in y's dtype.

    Grid: (n_rows,); the program of row r loops over the row in blocks of BLOCK_N (which
    may be smaller than n_cols): one pass with an online maximum and sum, one pass that
    writes y."""
    # HINT: masked lanes load -inf (other=float("-inf")); keep per-lane m and s; while a
    # HINT: lane's m is still -inf, subtract 0 instead (exp(-inf - -inf) is NaN)
    # HINT: at the end: row max M = tl.max(m, 0), total = tl.sum(s * tl.exp(m - M), 0)
    raise NotImplementedError("task 6.2: Row softmax and log_softmax, forward and backward, with an online max and sum")


@triton.jit
def softmax_backward_kernel(y_ptr, dy_ptr, dx_ptr, n_rows, n_cols, stride_yr, stride_yc,
                            stride_dyr, stride_dyc, stride_dxr, stride_dxc,
                            LOG: tl.constexpr, BLOCK_N: tl.constexpr):
    """The input gradient of each row from the saved output y and the output gradient dy:
    softmax: dx = y * (dy - sum(dy * y)); log_softmax (y the log-probabilities):
    dx = dy - exp(y) * sum(dy). Grid: (n_rows,), blocks of BLOCK_N as in softmax_kernel."""
    raise NotImplementedError("task 6.2: Row softmax and log_softmax, forward and backward, with an online max and sum")


def _rows(x: np.ndarray, dim: int) -> np.ndarray:
    """``x`` with ``dim`` last, as (rows, n) (a view where NumPy can make one)."""
    moved = np.moveaxis(x, dim, -1)
    return moved.reshape(-1, moved.shape[-1]) if moved.ndim != 2 else moved


def _strides(a: np.ndarray) -> tuple[int, ...]:
    return tuple(s // a.itemsize for s in a.strides)


def _back(y2: np.ndarray, like: np.ndarray, dim: int) -> np.ndarray:
    return np.moveaxis(y2.reshape(np.moveaxis(like, dim, -1).shape), -1, dim)


def softmax(x: np.ndarray, dim: int = -1, log: bool = False) -> np.ndarray:
    """softmax (or log_softmax) of ``x`` along ``dim``, by ``softmax_kernel``."""
    raise NotImplementedError("task 6.2: Row softmax and log_softmax, forward and backward, with an online max and sum")


def softmax_backward(y: np.ndarray, grad: np.ndarray, dim: int = -1,
                     log: bool = False) -> np.ndarray:
    """The input gradient of softmax (log_softmax) along ``dim`` from its output ``y`` and
    the output gradient, by ``softmax_backward_kernel``."""
    raise NotImplementedError("task 6.2: Row softmax and log_softmax, forward and backward, with an online max and sum")
