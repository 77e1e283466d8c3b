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
    # BEGIN SOLUTION 6.4
    # HINT: masked lanes must not count: load them as 0 and zero x - mean there too
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_xr + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, 0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, 0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = diff * rstd * w + b
    tl.store(y_ptr + row * stride_yr + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    # END SOLUTION


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
    # BEGIN SOLUTION 6.4
    # HINT: a row past n_rows must add nothing: fold it into the block masks as
    # HINT: (cols * 0 + row) < n_rows (under the 3.9.0 interpreter, block_mask & scalar_mask
    # HINT: is an int32 block that tl.load rejects, and so is a scalar mask); for its
    # HINT: scalar mean and rstd load row min(row, n_rows - 1)
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    dw = tl.zeros((BLOCK_N,), tl.float32)
    db = tl.zeros((BLOCK_N,), tl.float32)
    for i in range(ROWS_PER_PROGRAM):
        row = pid * ROWS_PER_PROGRAM + i
        mask = col_mask & ((cols * 0 + row) < n_rows)
        x = tl.load(x_ptr + row * stride_xr + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * stride_dyr + cols, mask=mask, other=0.0).to(tl.float32)
        mean = tl.load(mean_ptr + tl.minimum(row, n_rows - 1))
        rstd = tl.load(rstd_ptr + tl.minimum(row, n_rows - 1))
        xhat = tl.where(mask, (x - mean) * rstd, 0.0)
        g = w * dy
        c1 = tl.sum(xhat * g, 0) / n_cols
        c2 = tl.sum(g, 0) / n_cols
        dx = (g - (xhat * c1 + c2)) * rstd
        tl.store(dx_ptr + row * stride_dxr + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
        dw += dy * xhat
        db += dy
    tl.store(dw_partial_ptr + pid * n_cols + cols, dw, mask=col_mask)
    tl.store(db_partial_ptr + pid * n_cols + cols, db, mask=col_mask)
    # END SOLUTION


@triton.jit
def layer_norm_dwdb_kernel(dw_partial_ptr, db_partial_ptr, dw_ptr, db_ptr, n_partials, n_cols,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """The reduction across rows: dw[j] = sum over p of dw_partial[p, j], db likewise
    (partials float32 contiguous (n_partials, n_cols); sums in float32, stored in dw's and
    db's dtype). Grid: (cdiv(n_cols, BLOCK_N),); loop over the partial rows BLOCK_M at a
    time."""
    # BEGIN SOLUTION 6.4
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc_w = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    acc_b = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for start in range(0, n_partials, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        mask = (rows[:, None] < n_partials) & (cols[None, :] < n_cols)
        offsets = rows[:, None] * n_cols + cols[None, :]
        acc_w += tl.load(dw_partial_ptr + offsets, mask=mask, other=0.0)
        acc_b += tl.load(db_partial_ptr + offsets, mask=mask, other=0.0)
    tl.store(dw_ptr + cols, tl.sum(acc_w, 0).to(dw_ptr.dtype.element_ty), mask=cols < n_cols)
    tl.store(db_ptr + cols, tl.sum(acc_b, 0).to(db_ptr.dtype.element_ty), mask=cols < n_cols)
    # END SOLUTION


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
    # BEGIN SOLUTION 6.4
    x2 = _contiguous_rows(x)
    rows, cols = x2.shape
    y = np.empty((rows, cols), x.dtype)
    mean, rstd = np.empty(rows, np.float32), np.empty(rows, np.float32)
    launch(layer_norm_kernel, (rows,), x2, np.ascontiguousarray(weight),
           np.ascontiguousarray(bias), y, mean, rstd, rows, cols, x2.strides[0] // x2.itemsize,
           cols, eps, BLOCK_N=_block(cols))
    return y.reshape(x.shape), mean.reshape(x.shape[:-1]), rstd.reshape(x.shape[:-1])
    # END SOLUTION


def layer_norm_backward(x: np.ndarray, weight: np.ndarray, mean: np.ndarray, rstd: np.ndarray,
                        grad: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dx, dweight, dbias) of LayerNorm over the last dim, by the two backward kernels."""
    # BEGIN SOLUTION 6.4
    x2, dy2 = _contiguous_rows(x), _contiguous_rows(grad)
    rows, cols = x2.shape
    programs = cdiv(rows, ROWS_PER_PROGRAM)
    dx = np.empty((rows, cols), grad.dtype)
    dw_partial = np.empty((programs, cols), np.float32)
    db_partial = np.empty((programs, cols), np.float32)
    launch(layer_norm_backward_kernel, (programs,), x2, np.ascontiguousarray(weight),
           np.ascontiguousarray(mean, np.float32).reshape(-1),
           np.ascontiguousarray(rstd, np.float32).reshape(-1), dy2, dx, dw_partial, db_partial,
           rows, cols, x2.strides[0] // x2.itemsize, dy2.strides[0] // dy2.itemsize, cols,
           ROWS_PER_PROGRAM=ROWS_PER_PROGRAM, BLOCK_N=_block(cols))
    dw, db = np.empty(cols, weight.dtype), np.empty(cols, weight.dtype)
    launch(layer_norm_dwdb_kernel, (cdiv(cols, DWDB_BLOCK_N),), dw_partial, db_partial, dw, db,
           programs, cols, BLOCK_M=DWDB_BLOCK_M, BLOCK_N=DWDB_BLOCK_N)
    return dx.reshape(x.shape), dw, db
    # END SOLUTION
