"""Kernels the framework gives (not homework): a column sum that finishes per-tile partial
sums (the bias gradient of 6.1, dW/db reductions in the device ops), and the plain
elementwise and indexing kernels the ``cuda`` device needs besides the homework ones."""

from __future__ import annotations

import numpy as np

from ._runtime import cdiv, launch, load_triton

triton = load_triton()
tl = triton.language

# One tile size for the given kernels: large tiles mean few programs, which is what costs
# time under the interpreter; on a GPU these kernels are memory-bound anyway.
_BLOCK = 1024
_ROWS, _COLS = 16, 64


@triton.jit
def sum_rows_kernel(x_ptr, out_ptr, n_rows, n_cols, stride_r, stride_c,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """out[j] = sum over i of x[i, j] (accumulated in float32); grid (cdiv(n_cols, BLOCK_N),)."""
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in range(0, n_rows, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
        tile = tl.load(x_ptr + rows[:, None] * stride_r + cols[None, :] * stride_c, mask=mask,
                       other=0.0)
        acc += tl.sum(tile.to(tl.float32), axis=0)
    tl.store(out_ptr + cols, acc.to(out_ptr.dtype.element_ty), mask=cols < n_cols)


def sum_rows(x: np.ndarray, dtype: np.dtype | None = None) -> np.ndarray:
    """The column sums of a 2-D array, by ``sum_rows_kernel``."""
    rows, cols = x.shape
    out = np.zeros(cols, dtype or x.dtype)
    item = x.itemsize
    launch(sum_rows_kernel, (cdiv(cols, _COLS),), x, out, rows, cols, x.strides[0] // item,
           x.strides[1] // item, BLOCK_M=_ROWS, BLOCK_N=_COLS)
    return out


# ----- elementwise ops with broadcasting (strides of 0), up to 4 dims -----------------
@triton.jit
def _offsets(i, s0, s1, s2, s3, n1, n2, n3):
    i3 = i % n3
    rest = i // n3
    i2 = rest % n2
    rest = rest // n2
    i1 = rest % n1
    i0 = rest // n1
    return i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3


@triton.jit
def binary_kernel(a_ptr, b_ptr, out_ptr, n_elements, n1, n2, n3,
                  sa0, sa1, sa2, sa3, sb0, sb1, sb2, sb3,
                  OP: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    """out (contiguous, 4-D (n0, n1, n2, n3)) = a OP b, a and b read through their
    (broadcast) strides; OP 0 add, 1 sub, 2 mul, 3 div. Computes in float32."""
    i = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = i < n_elements
    a = tl.load(a_ptr + _offsets(i, sa0, sa1, sa2, sa3, n1, n2, n3), mask=mask).to(tl.float32)
    b = tl.load(b_ptr + _offsets(i, sb0, sb1, sb2, sb3, n1, n2, n3), mask=mask).to(tl.float32)
    if OP == 0:
        r = a + b
    elif OP == 1:
        r = a - b
    elif OP == 2:
        r = a * b
    else:
        r = a / b
    tl.store(out_ptr + i, r.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def where_kernel(c_ptr, a_ptr, b_ptr, out_ptr, n_elements, n1, n2, n3,
                 sc0, sc1, sc2, sc3, sa0, sa1, sa2, sa3, sb0, sb1, sb2, sb3,
                 BLOCK_SIZE: tl.constexpr):
    """out = where(c, a, b) with broadcast strides (c int8: 0 or 1)."""
    i = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = i < n_elements
    c = tl.load(c_ptr + _offsets(i, sc0, sc1, sc2, sc3, n1, n2, n3), mask=mask)
    a = tl.load(a_ptr + _offsets(i, sa0, sa1, sa2, sa3, n1, n2, n3), mask=mask)
    b = tl.load(b_ptr + _offsets(i, sb0, sb1, sb2, sb3, n1, n2, n3), mask=mask)
    tl.store(out_ptr + i, tl.where(c != 0, a, b).to(out_ptr.dtype.element_ty), mask=mask)


_OPS = {"add": 0, "sub": 1, "mul": 2, "div": 3}


def _strides4(a: np.ndarray, shape: tuple[int, ...]) -> list[int]:
    """Element strides of ``a`` broadcast to ``shape`` (padded to 4 dims)."""
    view = np.broadcast_to(a, shape)
    strides = [s // a.itemsize for s in view.strides]
    return [0] * (4 - len(strides)) + strides


def _shape4(shape: tuple[int, ...]) -> list[int]:
    return [1] * (4 - len(shape)) + list(shape)


def _fold(shape: tuple[int, ...], *arrays: np.ndarray) -> tuple[tuple[int, ...], list]:
    """More than 4 dims: merge leading dims (through copies where needed)."""
    if len(shape) <= 4:
        return shape, list(arrays)
    lead = int(np.prod(shape[:-3]))
    new_shape = (lead, *shape[-3:])
    return new_shape, [np.broadcast_to(a, shape).reshape(new_shape) for a in arrays]


def binary(op: str, a: np.ndarray, b: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``a op b`` (NumPy broadcasting) into a new contiguous array of ``dtype``."""
    shape = np.broadcast_shapes(a.shape, b.shape)
    out = np.empty(shape, dtype)
    if out.size == 0:
        return out
    folded, (a, b) = _fold(shape, a, b)
    n = _shape4(folded)
    launch(binary_kernel, (cdiv(out.size, _BLOCK),), a, b, out, out.size, n[1], n[2], n[3],
           *_strides4(a, folded), *_strides4(b, folded), OP=_OPS[op], BLOCK_SIZE=_BLOCK)
    return out


def where(condition: np.ndarray, a: np.ndarray, b: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``where(condition, a, b)`` (NumPy broadcasting) into a new array of ``dtype``."""
    shape = np.broadcast_shapes(condition.shape, a.shape, b.shape)
    out = np.empty(shape, dtype)
    if out.size == 0:
        return out
    c = condition.astype(np.int8)
    folded, (c, a, b) = _fold(shape, c, a, b)
    n = _shape4(folded)
    launch(where_kernel, (cdiv(out.size, _BLOCK),), c, a, b, out, out.size, n[1], n[2], n[3],
           *_strides4(c, folded), *_strides4(a, folded), *_strides4(b, folded),
           BLOCK_SIZE=_BLOCK)
    return out


def sum_to_shape(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum ``grad`` over the dims that broadcasting added or stretched, back to ``shape``
    (a broadcast op's gradient), with ``sum_rows_kernel``."""
    if grad.shape == tuple(shape):
        return grad
    lead = grad.ndim - len(shape)
    keep = [i for i in range(grad.ndim)
            if i >= lead and shape[i - lead] == grad.shape[i]]
    reduce = [i for i in range(grad.ndim) if i not in keep]
    moved = np.ascontiguousarray(np.transpose(grad, reduce + keep))
    rows = int(np.prod([grad.shape[i] for i in reduce]))
    cols = int(np.prod([grad.shape[i] for i in keep]))
    summed = sum_rows(moved.reshape(rows, cols), grad.dtype)
    return summed.reshape(shape)


# ----- embedding: gather rows, and add gradient rows back (atomically) ------------------
@triton.jit
def gather_rows_kernel(idx_ptr, w_ptr, out_ptr, n_idx, n_cols, stride_w,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """out[i, :] = w[idx[i], :]; grid (cdiv(n_idx, BLOCK_M), cdiv(n_cols, BLOCK_N))."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    idx = tl.load(idx_ptr + rows, mask=rows < n_idx, other=0)
    mask = (rows[:, None] < n_idx) & (cols[None, :] < n_cols)
    vals = tl.load(w_ptr + idx[:, None] * stride_w + cols[None, :], mask=mask)
    tl.store(out_ptr + rows[:, None] * n_cols + cols[None, :], vals, mask=mask)


@triton.jit
def scatter_add_rows_kernel(idx_ptr, src_ptr, out_ptr, n_idx, n_cols,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """out[idx[i], :] += src[i, :] (float32 atomics: repeated indices add up)."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    idx = tl.load(idx_ptr + rows, mask=rows < n_idx, other=0)
    mask = (rows[:, None] < n_idx) & (cols[None, :] < n_cols)
    vals = tl.load(src_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask, other=0.0)
    tl.atomic_add(out_ptr + idx[:, None] * n_cols + cols[None, :], vals.to(tl.float32),
                  mask=mask)


def gather_rows(weight: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``weight[index]`` for a 2-D weight with contiguous rows."""
    flat = np.ascontiguousarray(index.reshape(-1), dtype=np.int64)
    cols = weight.shape[1]
    out = np.empty((flat.size, cols), weight.dtype)
    weight = np.ascontiguousarray(weight)
    launch(gather_rows_kernel, (cdiv(flat.size, _ROWS), cdiv(cols, _COLS)), flat, weight, out,
           flat.size, cols, cols, BLOCK_M=_ROWS, BLOCK_N=_COLS)
    return out.reshape(*index.shape, cols)


def scatter_add_rows(grad: np.ndarray, index: np.ndarray, num_rows: int) -> np.ndarray:
    """The gradient of ``weight[index]``: rows of ``grad`` added into a zero weight."""
    flat = np.ascontiguousarray(index.reshape(-1), dtype=np.int64)
    cols = grad.shape[-1]
    src = np.ascontiguousarray(grad.reshape(flat.size, cols))
    out = np.zeros((num_rows, cols), np.float32)
    launch(scatter_add_rows_kernel, (cdiv(flat.size, _ROWS), cdiv(cols, _COLS)), flat, src,
           out, flat.size, cols, BLOCK_M=_ROWS, BLOCK_N=_COLS)
    return out.astype(grad.dtype)
