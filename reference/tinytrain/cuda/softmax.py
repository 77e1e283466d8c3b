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
    # BEGIN SOLUTION 6.2
    # HINT: masked lanes load -inf (other=float("-inf")); keep per-lane m and s; while a
    # HINT: lane's m is still -inf, subtract 0 instead (exp(-inf - -inf) is NaN)
    # HINT: at the end: row max M = tl.max(m, 0), total = tl.sum(s * tl.exp(m - M), 0)
    row = tl.program_id(0)
    x_row = x_ptr + row * stride_xr
    m = tl.full((BLOCK_N,), float("-inf"), tl.float32)
    s = tl.zeros((BLOCK_N,), tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols * stride_xc, mask=cols < n_cols, other=float("-inf"))
        x = x.to(tl.float32)
        m_new = tl.maximum(m, x)
        shift = tl.where(m_new > float("-inf"), m_new, 0.0)  # no -inf - -inf (NaN)
        s = s * tl.exp(m - shift) + tl.exp(x - shift)
        m = m_new
    row_max = tl.max(m, 0)
    total = tl.sum(tl.where(m > float("-inf"), s * tl.exp(m - row_max), 0.0), 0)
    y_row = y_ptr + row * stride_yr
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        x = tl.load(x_row + cols * stride_xc, mask=mask, other=0.0).to(tl.float32)
        if LOG:
            y = x - row_max - tl.log(total)
        else:
            y = tl.exp(x - row_max) / total
        tl.store(y_row + cols * stride_yc, y.to(y_ptr.dtype.element_ty), mask=mask)
    # END SOLUTION


@triton.jit
def softmax_backward_kernel(y_ptr, dy_ptr, dx_ptr, n_rows, n_cols, stride_yr, stride_yc,
                            stride_dyr, stride_dyc, stride_dxr, stride_dxc,
                            LOG: tl.constexpr, BLOCK_N: tl.constexpr):
    """The input gradient of each row from the saved output y and the output gradient dy:
    softmax: dx = y * (dy - sum(dy * y)); log_softmax (y the log-probabilities):
    dx = dy - exp(y) * sum(dy). Grid: (n_rows,), blocks of BLOCK_N as in softmax_kernel."""
    # BEGIN SOLUTION 6.2
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK_N,), tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        dy = tl.load(dy_ptr + row * stride_dyr + cols * stride_dyc, mask=mask, other=0.0)
        if LOG:
            acc += dy.to(tl.float32)
        else:
            y = tl.load(y_ptr + row * stride_yr + cols * stride_yc, mask=mask, other=0.0)
            acc += dy.to(tl.float32) * y.to(tl.float32)
    total = tl.sum(acc, 0)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        y = tl.load(y_ptr + row * stride_yr + cols * stride_yc, mask=mask, other=0.0)
        dy = tl.load(dy_ptr + row * stride_dyr + cols * stride_dyc, mask=mask, other=0.0)
        y, dy = y.to(tl.float32), dy.to(tl.float32)
        if LOG:
            dx = dy - tl.exp(y) * total
        else:
            dx = y * (dy - total)
        tl.store(dx_ptr + row * stride_dxr + cols * stride_dxc, dx.to(dx_ptr.dtype.element_ty),
                 mask=mask)
    # END SOLUTION


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
    # BEGIN SOLUTION 6.2
    x2 = _rows(x, dim)
    y2 = np.empty(x2.shape, x.dtype)
    rows, cols = x2.shape
    launch(softmax_kernel, (rows,), x2, y2, rows, cols, *_strides(x2), *_strides(y2), LOG=log,
           BLOCK_N=BLOCK)
    return _back(y2, x, dim)
    # END SOLUTION


def softmax_backward(y: np.ndarray, grad: np.ndarray, dim: int = -1,
                     log: bool = False) -> np.ndarray:
    """The input gradient of softmax (log_softmax) along ``dim`` from its output ``y`` and
    the output gradient, by ``softmax_backward_kernel``."""
    # BEGIN SOLUTION 6.2
    y2, dy2 = _rows(y, dim), _rows(grad, dim)
    dx2 = np.empty(y2.shape, grad.dtype)
    rows, cols = y2.shape
    launch(softmax_backward_kernel, (rows,), y2, dy2, dx2, rows, cols, *_strides(y2),
           *_strides(dy2), *_strides(dx2), LOG=log, BLOCK_N=BLOCK)
    return _back(dx2, y, dim)
    # END SOLUTION
