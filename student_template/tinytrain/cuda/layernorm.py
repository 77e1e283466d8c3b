"""Task 6.4 (first half): fused LayerNorm, forward and backward.

The forward normalises one row per program (the whole row in one block), and saves the
row's mean and 1/std for the backward. The backward computes dx row by row and, for the
weight and bias gradients that sum over all rows, each program adds up its rows' share
into one row of a partial buffer; a second kernel sums the partial rows (the reduction
across rows), so no two programs ever write the same element.
"""

from __future__ import annotations

import numpy as np

from ._runtime import cdiv, launch, load_triton

triton = load_triton()
tl = triton.language

ROWS_PER_PROGRAM = 8  # the wrappers' (the grader launches the kernels with its own)
DWDB_BLOCK_M, DWDB_BLOCK_N = 16, 64


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, n_rows, n_cols,
                      stride_xr, stride_yr, eps, BLOCK_N: tl.constexpr):
    """y = (x - mean) * rstd * w + b over each row of x (n_rows, n_cols), rows contiguous
    (column stride 1, row stride stride_xr); mean and rstd = 1 / sqrt(var + eps) (biased
    variance) saved per row in float32. Computed in float32, y stored in its dtype.

    Grid: (n_rows,); BLOCK_N >= n_cols (one block holds the row)."""
    # HINT: masked lanes must not count: load them as 0 and zero x - mean there too
    raise NotImplementedError("task 6.4: Fused LayerNorm (forward, backward, dW/db across rows) and fused cross-entropy")


@triton.jit
def layer_norm_backward_kernel(x_ptr, w_ptr, mean_ptr, rstd_ptr, dy_ptr, dx_ptr,
                               dw_partial_ptr, db_partial_ptr, n_rows, n_cols, stride_xr,
                               stride_dyr, stride_dxr, ROWS_PER_PROGRAM: tl.constexpr,
                               BLOCK_N: tl.constexpr):
    """dx for rows [pid * ROWS_PER_PROGRAM, (pid + 1) * ROWS_PER_PROGRAM) (fewer in the
    last program): with xhat = (x - mean) * rstd and g = w * dy,
    dx = rstd * (g - mean(g) - xhat * mean(g * xhat)); and this program's share of the
    parameter gradients: dw_partial[pid, :] = sum over its rows of dy * xhat,
    db_partial[pid, :] = sum of dy (float32, contiguous (n_programs, n_cols) buffers).

    Grid: (cdiv(n_rows, ROWS_PER_PROGRAM),); BLOCK_N >= n_cols; rows contiguous."""
    # HINT: a row past n_rows must add nothing: fold it into the block masks as
    # HINT: (cols * 0 + row) < n_rows (under the 3.9.0 interpreter, block_mask & scalar_mask
    # HINT: is an int32 block that tl.load rejects, and so is a scalar mask); for its
    # HINT: scalar mean and rstd load row min(row, n_rows - 1)
    raise NotImplementedError("task 6.4: Fused LayerNorm (forward, backward, dW/db across rows) and fused cross-entropy")


@triton.jit
def layer_norm_dwdb_kernel(dw_partial_ptr, db_partial_ptr, dw_ptr, db_ptr, n_partials, n_cols,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """The reduction across rows: dw[j] = sum over p of dw_partial[p, j], db likewise
    (partials float32 contiguous (n_partials, n_cols); sums in float32, stored in dw's and
    db's dtype). Grid: (cdiv(n_cols, BLOCK_N),); loop over the partial rows BLOCK_M at a
    time."""
    raise NotImplementedError("task 6.4: Fused LayerNorm (forward, backward, dW/db across rows) and fused cross-entropy")


def _block(n: int) -> int:
    return max(16, 1 << (max(n, 1) - 1).bit_length())


def _contiguous_rows(x: np.ndarray) -> np.ndarray:
    """(*, n) as (rows, n) with unit column stride (a copy when needed)."""
    x2 = x.reshape(-1, x.shape[-1])
    return x2 if x2.strides[1] == x2.itemsize else np.ascontiguousarray(x2)


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float = 1e-5
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LayerNorm over the last dim of ``x`` by ``layer_norm_kernel``: (y, mean, rstd),
    mean and rstd float32 of shape x.shape[:-1]."""
    raise NotImplementedError("task 6.4: Fused LayerNorm (forward, backward, dW/db across rows) and fused cross-entropy")


def layer_norm_backward(x: np.ndarray, weight: np.ndarray, mean: np.ndarray, rstd: np.ndarray,
                        grad: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dx, dweight, dbias) of LayerNorm over the last dim, by the two backward kernels."""
    raise NotImplementedError("task 6.4: Fused LayerNorm (forward, backward, dW/db across rows) and fused cross-entropy")
