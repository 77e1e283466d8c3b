"""Task 6.1: elementwise kernels. A vector add whose last program masks the tail, then
bias + GELU fused into one kernel forward (one read of x, one write of y) and backward.

Kernels compute in float32 and round once when they store; tensors are passed as
pointers to their first element plus strides counted in elements.
"""

from __future__ import annotations

import numpy as np

from ._common import sum_rows
from ._runtime import cdiv, launch, load_triton

triton = load_triton()
tl = triton.language

# tile sizes the wrappers launch with (the grader launches the kernels with its own)
ADD_BLOCK = 1024
GELU_BLOCK_M, GELU_BLOCK_N = 16, 64

# constants a kernel reads must be constexpr (plain globals do not compile)
_SQRT1_2 = tl.constexpr(0.7071067811865476)  # 1 / sqrt(2)
_INV_SQRT_2PI = tl.constexpr(0.3989422804014327)  # 1 / sqrt(2 pi)
_TANH_BETA = tl.constexpr(0.7978845608028654)  # sqrt(2 / pi)
_TANH_KAPPA = tl.constexpr(0.044715)


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """out[i] = x[i] + y[i] for 0 <= i < n_elements (contiguous 1-D buffers).

    Grid: (cdiv(n_elements, BLOCK_SIZE),); program p handles elements
    [p * BLOCK_SIZE, (p + 1) * BLOCK_SIZE); the last one may run past n_elements."""
    # BEGIN SOLUTION 6.1
    # HINT: offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE); mask = offsets < n_elements
    # HINT: every load and store past the end must be masked (the tail of the last program)
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
    # END SOLUTION


@triton.jit
def gelu_forward(z, TANH: tl.constexpr):
    """GELU of a float32 block: z * Phi(z), or with TANH its tanh approximation."""
    # BEGIN SOLUTION 6.1
    # HINT: exact: 0.5 * z * (1 + erf(z / sqrt(2))) (tl.math.erf);
    # HINT: tanh: 0.5 * z * (1 + tanh(sqrt(2 / pi) * (z + 0.044715 * z ** 3))); Triton has
    # HINT: no tanh: tanh(u) = 1 - 2 / (exp(2u) + 1) (exp overflowing to inf gives 1).
    # HINT: Write tensor * constant, not constant * tensor: under the 3.9.0 interpreter a
    # HINT: tl.constexpr on the left of a tensor gives a value tl functions reject.
    if TANH:
        u = (z + z * z * z * _TANH_KAPPA) * _TANH_BETA
        t = 1.0 - 2.0 / (tl.exp(u * 2.0) + 1.0)
        out = 0.5 * z * (1.0 + t)
    else:
        out = 0.5 * z * (1.0 + tl.math.erf(z * _SQRT1_2))
    return out
    # END SOLUTION


@triton.jit
def gelu_derivative(z, TANH: tl.constexpr):
    """d gelu(z) / dz of a float32 block."""
    # BEGIN SOLUTION 6.1
    # HINT: exact: Phi(z) + z * phi(z), phi the normal density exp(-z^2 / 2) / sqrt(2 pi)
    if TANH:
        u = (z + z * z * z * _TANH_KAPPA) * _TANH_BETA
        t = 1.0 - 2.0 / (tl.exp(u * 2.0) + 1.0)
        d_inner = (1.0 + z * z * _TANH_KAPPA * 3.0) * _TANH_BETA
        out = 0.5 * (1.0 + t) + 0.5 * z * (1.0 - t * t) * d_inner
    else:
        cdf = 0.5 * (1.0 + tl.math.erf(z * _SQRT1_2))
        out = cdf + z * tl.exp(-0.5 * z * z) * _INV_SQRT_2PI
    return out
    # END SOLUTION


@triton.jit
def bias_gelu_kernel(x_ptr, b_ptr, y_ptr, n_rows, n_cols,
                     stride_xr, stride_xc, stride_yr, stride_yc,
                     TANH: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """y[i, j] = gelu(x[i, j] + b[j]) for x, y (n_rows, n_cols) with any strides and b
    (n_cols,) contiguous; computed in float32, stored in y's dtype.

    Grid: (cdiv(n_rows, BLOCK_M), cdiv(n_cols, BLOCK_N)); program (pm, pn) handles one
    BLOCK_M x BLOCK_N tile."""
    # BEGIN SOLUTION 6.1
    # HINT: rows = pm * BLOCK_M + tl.arange(0, BLOCK_M); a 2-D tile is rows[:, None], cols[None, :]
    # HINT: x.to(tl.float32) before the math; y_ptr.dtype.element_ty is the dtype to store
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * stride_xr + cols[None, :] * stride_xc, mask=mask)
    b = tl.load(b_ptr + cols, mask=cols < n_cols)
    y = gelu_forward(x.to(tl.float32) + b.to(tl.float32)[None, :], TANH)
    tl.store(y_ptr + rows[:, None] * stride_yr + cols[None, :] * stride_yc,
             y.to(y_ptr.dtype.element_ty), mask=mask)
    # END SOLUTION


@triton.jit
def bias_gelu_backward_kernel(x_ptr, b_ptr, dy_ptr, dx_ptr, db_partial_ptr, n_rows, n_cols,
                              stride_xr, stride_xc, stride_dyr, stride_dyc,
                              stride_dxr, stride_dxc,
                              TANH: tl.constexpr, BLOCK_M: tl.constexpr,
                              BLOCK_N: tl.constexpr):
    """dx = dy * gelu'(x + b), and this tile's share of the bias gradient:
    db_partial[pm, j] = sum of dx[i, j] over the tile's rows i (float32, a contiguous
    (cdiv(n_rows, BLOCK_M), n_cols) buffer; the wrapper sums it over pm).

    Grid: (cdiv(n_rows, BLOCK_M), cdiv(n_cols, BLOCK_N)), tiles as in bias_gelu_kernel."""
    # BEGIN SOLUTION 6.1
    # HINT: sum the float32 dx of valid rows only (masked rows must add 0)
    pm = tl.program_id(0)
    rows = pm * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * stride_xr + cols[None, :] * stride_xc, mask=mask)
    dy = tl.load(dy_ptr + rows[:, None] * stride_dyr + cols[None, :] * stride_dyc, mask=mask)
    b = tl.load(b_ptr + cols, mask=cols < n_cols)
    z = x.to(tl.float32) + b.to(tl.float32)[None, :]
    dx = dy.to(tl.float32) * gelu_derivative(z, TANH)
    dx = tl.where(mask, dx, 0.0)
    tl.store(dx_ptr + rows[:, None] * stride_dxr + cols[None, :] * stride_dxc,
             dx.to(dx_ptr.dtype.element_ty), mask=mask)
    tl.store(db_partial_ptr + pm * n_cols + cols, tl.sum(dx, axis=0), mask=cols < n_cols)
    # END SOLUTION


def _strides(a: np.ndarray) -> tuple[int, ...]:
    return tuple(s // a.itemsize for s in a.strides)


def add(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x + y`` for two arrays of one shape and dtype, by ``add_kernel``."""
    # BEGIN SOLUTION 6.1
    # HINT: add_kernel takes contiguous buffers: np.ascontiguousarray; launch(kernel, grid, ...)
    x, y = np.ascontiguousarray(x), np.ascontiguousarray(y)
    out = np.empty_like(x)
    launch(add_kernel, (cdiv(x.size, ADD_BLOCK),), x, y, out, x.size, BLOCK_SIZE=ADD_BLOCK)
    return out
    # END SOLUTION


def _as_rows(x: np.ndarray) -> np.ndarray:
    """(*, n) as a 2-D (rows, n) array (a view where NumPy can make one)."""
    return x.reshape(-1, x.shape[-1]) if x.ndim != 2 else x


def bias_gelu(x: np.ndarray, bias: np.ndarray, approximate: str = "none") -> np.ndarray:
    """``gelu(x + bias)`` for x (*, n) and bias (n,), by ``bias_gelu_kernel``."""
    # BEGIN SOLUTION 6.1
    x2 = _as_rows(x)
    bias = np.ascontiguousarray(bias)
    y = np.empty(x2.shape, x.dtype)
    rows, cols = x2.shape
    launch(bias_gelu_kernel, (cdiv(rows, GELU_BLOCK_M), cdiv(cols, GELU_BLOCK_N)), x2, bias, y,
           rows, cols, *_strides(x2), *_strides(y), TANH=approximate == "tanh",
           BLOCK_M=GELU_BLOCK_M, BLOCK_N=GELU_BLOCK_N)
    return y.reshape(x.shape)
    # END SOLUTION


def bias_gelu_backward(x: np.ndarray, bias: np.ndarray, grad: np.ndarray,
                       approximate: str = "none") -> tuple[np.ndarray, np.ndarray]:
    """The gradients (dx, dbias) of ``gelu(x + bias)`` given the output's gradient, by
    ``bias_gelu_backward_kernel`` and a sum of its partial bias gradients (``sum_rows``)."""
    # BEGIN SOLUTION 6.1
    x2, dy = _as_rows(x), _as_rows(grad)
    bias = np.ascontiguousarray(bias)
    rows, cols = x2.shape
    dx = np.empty(x2.shape, grad.dtype)
    partial = np.empty((cdiv(rows, GELU_BLOCK_M), cols), np.float32)
    launch(bias_gelu_backward_kernel, (cdiv(rows, GELU_BLOCK_M), cdiv(cols, GELU_BLOCK_N)),
           x2, bias, dy, dx, partial, rows, cols, *_strides(x2), *_strides(dy), *_strides(dx),
           TANH=approximate == "tanh", BLOCK_M=GELU_BLOCK_M, BLOCK_N=GELU_BLOCK_N)
    return dx.reshape(x.shape), sum_rows(partial, bias.dtype)
    # END SOLUTION
