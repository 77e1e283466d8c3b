"""Task 6.5: FlashAttention-2, forward and backward.

Attention over (batch, heads, n_ctx, head_dim) tensors that share one set of strides.
The forward gives each program BLOCK_M query rows and streams the keys and values in
blocks of BLOCK_N with an online softmax: running row maxima m and sums l, the output
accumulator rescaled when m grows; the (n_ctx, n_ctx) score matrix never exists. It saves
the logsumexp of each row's scaled scores, from which the backward recomputes the
probabilities block by block: one kernel per key block accumulates dK and dV over the
query blocks, one per query block accumulates dQ over the key blocks, after a small kernel
computes delta = rowsum(dO * O).
"""

from __future__ import annotations

import math

import numpy as np

from ._runtime import cdiv, launch, load_triton

triton = load_triton()
tl = triton.language

BLOCK_M, BLOCK_N = 16, 16  # the wrappers' tiles (the grader launches with its own)
_LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def flash_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, stride_z, stride_h, stride_t,
                           stride_d, n_heads, n_ctx, sm_scale, CAUSAL: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                           HEAD_DIM: tl.constexpr):
    """o = softmax(q @ k^T * sm_scale) @ v for q, k, v, o of shape (Z, n_heads, n_ctx,
    HEAD_DIM) sharing strides (stride_z, stride_h, stride_t, stride_d); with CAUSAL query
    i sees keys j <= i only. lse[z * n_heads + h, i] = logsumexp of row i's scaled (and
    masked) scores, natural log, float32, contiguous (Z * n_heads, n_ctx). Scores and
    softmax statistics in float32; P is cast to v's dtype for P @ V (tensor cores in
    float16; input_precision="ieee" for float32).

    Grid: (cdiv(n_ctx, BLOCK_M), Z * n_heads); program (i, zh) computes query rows
    [i * BLOCK_M, (i + 1) * BLOCK_M) of head zh, looping over key blocks of BLOCK_N (with
    CAUSAL, only up to its last query row)."""
    # BEGIN SOLUTION 6.5
    # HINT: work in base 2: qk * (sm_scale * log2(e)) with tl.exp2, lse = (m + log2(l)) / log2(e)
    # HINT: mask scores of keys past n_ctx (and in the future, with CAUSAL) to -inf; a row
    # HINT: whose maximum is still -inf must not compute -inf - -inf (subtract 0 instead)
    start_m = tl.program_id(0)
    zh = tl.program_id(1)
    base = (zh // n_heads) * stride_z + (zh % n_heads) * stride_h
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + offs_m[:, None] * stride_t + offs_d[None, :] * stride_d,
                mask=offs_m[:, None] < n_ctx, other=0.0)
    m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    qk_scale = sm_scale * _LOG2E
    hi = n_ctx
    if CAUSAL:
        hi = tl.minimum((start_m + 1) * BLOCK_M, n_ctx)
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n
        kt = tl.load(k_ptr + base + cols[None, :] * stride_t + offs_d[:, None] * stride_d,
                     mask=cols[None, :] < n_ctx, other=0.0)
        if q_ptr.dtype.element_ty == tl.float32:
            qk = tl.dot(q, kt, input_precision="ieee")
        else:
            qk = tl.dot(q, kt)
        valid = (offs_m[:, None] * 0 + cols[None, :]) < n_ctx
        if CAUSAL:
            valid = valid & (offs_m[:, None] >= cols[None, :])
        qk = tl.where(valid, qk * qk_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        shift = tl.where(m_new > float("-inf"), m_new, 0.0)
        p = tl.exp2(qk - shift[:, None])
        alpha = tl.exp2(m_i - shift)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + base + cols[:, None] * stride_t + offs_d[None, :] * stride_d,
                    mask=cols[:, None] < n_ctx, other=0.0)
        if q_ptr.dtype.element_ty == tl.float32:
            acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
        else:
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    o = acc / l_i[:, None]
    row_ok = offs_m < n_ctx
    tl.store(o_ptr + base + offs_m[:, None] * stride_t + offs_d[None, :] * stride_d,
             o.to(o_ptr.dtype.element_ty), mask=row_ok[:, None])
    tl.store(lse_ptr + zh * n_ctx + offs_m, (m_i + tl.log2(l_i)) / _LOG2E, mask=row_ok)
    # END SOLUTION


@triton.jit
def flash_attention_backward_preprocess_kernel(o_ptr, do_ptr, delta_ptr, stride_z, stride_h,
                                               stride_t, stride_d, n_heads, n_ctx,
                                               BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr):
    """delta[z * n_heads + h, i] = sum over d of o * do (float32, contiguous (Z * n_heads,
    n_ctx)). Grid: (cdiv(n_ctx, BLOCK_M), Z * n_heads)."""
    # BEGIN SOLUTION 6.5
    start_m = tl.program_id(0)
    zh = tl.program_id(1)
    base = (zh // n_heads) * stride_z + (zh % n_heads) * stride_h
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    offsets = base + offs_m[:, None] * stride_t + offs_d[None, :] * stride_d
    mask = offs_m[:, None] < n_ctx
    o = tl.load(o_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    do = tl.load(do_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(delta_ptr + zh * n_ctx + offs_m, tl.sum(o * do, 1), mask=offs_m < n_ctx)
    # END SOLUTION


@triton.jit
def flash_attention_backward_dkdv_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr,
                                         dk_ptr, dv_ptr, stride_z, stride_h, stride_t,
                                         stride_d, n_heads, n_ctx, sm_scale,
                                         CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr,
                                         BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    """dK and dV of key rows [j * BLOCK_N, (j + 1) * BLOCK_N) of head zh, looping over the
    query blocks of BLOCK_M that see them: with P = exp(q k^T * sm_scale - lse) (0 where
    masked), dP = dO v^T and dS = P * (dP - delta): dV = sum P^T dO, dK = sm_scale *
    sum dS^T q. dk and dv share q's layout. Grid: (cdiv(n_ctx, BLOCK_N), Z * n_heads)."""
    # BEGIN SOLUTION 6.5
    # HINT: with CAUSAL, query blocks before the key block's first row see none of it
    start_n = tl.program_id(0)
    zh = tl.program_id(1)
    base = (zh // n_heads) * stride_z + (zh % n_heads) * stride_h
    offs_n = start_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    kv_offsets = base + offs_n[:, None] * stride_t + offs_d[None, :] * stride_d
    kv_mask = offs_n[:, None] < n_ctx
    k = tl.load(k_ptr + kv_offsets, mask=kv_mask, other=0.0)
    v = tl.load(v_ptr + kv_offsets, mask=kv_mask, other=0.0)
    dk = tl.zeros((BLOCK_N, HEAD_DIM), tl.float32)
    dv = tl.zeros((BLOCK_N, HEAD_DIM), tl.float32)
    lo = 0
    if CAUSAL:
        lo = (start_n * BLOCK_N // BLOCK_M) * BLOCK_M
    for start_m in range(lo, n_ctx, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        q_offsets = base + offs_m[:, None] * stride_t + offs_d[None, :] * stride_d
        q_mask = offs_m[:, None] < n_ctx
        q = tl.load(q_ptr + q_offsets, mask=q_mask, other=0.0)
        do = tl.load(do_ptr + q_offsets, mask=q_mask, other=0.0)
        lse = tl.load(lse_ptr + zh * n_ctx + offs_m, mask=offs_m < n_ctx, other=0.0)
        delta = tl.load(delta_ptr + zh * n_ctx + offs_m, mask=offs_m < n_ctx, other=0.0)
        if q_ptr.dtype.element_ty == tl.float32:
            qk = tl.dot(q, tl.trans(k), input_precision="ieee")
            dp = tl.dot(do, tl.trans(v), input_precision="ieee")
        else:
            qk = tl.dot(q, tl.trans(k))
            dp = tl.dot(do, tl.trans(v))
        valid = (offs_m[:, None] < n_ctx) & (offs_n[None, :] < n_ctx)
        if CAUSAL:
            valid = valid & (offs_m[:, None] >= offs_n[None, :])
        p = tl.where(valid, tl.exp(qk * sm_scale - lse[:, None]), 0.0)
        ds = p * (dp - delta[:, None])
        if q_ptr.dtype.element_ty == tl.float32:
            dv += tl.dot(tl.trans(p), do, input_precision="ieee")
            dk += tl.dot(tl.trans(ds), q, input_precision="ieee")
        else:
            dv += tl.dot(tl.trans(p.to(do.dtype)), do)
            dk += tl.dot(tl.trans(ds.to(q.dtype)), q)
    tl.store(dk_ptr + kv_offsets, (dk * sm_scale).to(dk_ptr.dtype.element_ty), mask=kv_mask)
    tl.store(dv_ptr + kv_offsets, dv.to(dv_ptr.dtype.element_ty), mask=kv_mask)
    # END SOLUTION


@triton.jit
def flash_attention_backward_dq_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr,
                                       stride_z, stride_h, stride_t, stride_d, n_heads, n_ctx,
                                       sm_scale, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr,
                                       BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    """dQ of query rows [i * BLOCK_M, (i + 1) * BLOCK_M) of head zh: sm_scale * sum over
    the key blocks it sees of dS k (P, dS as in the dK/dV kernel). dq shares q's layout.
    Grid: (cdiv(n_ctx, BLOCK_M), Z * n_heads)."""
    # BEGIN SOLUTION 6.5
    start_m = tl.program_id(0)
    zh = tl.program_id(1)
    base = (zh // n_heads) * stride_z + (zh % n_heads) * stride_h
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q_offsets = base + offs_m[:, None] * stride_t + offs_d[None, :] * stride_d
    q_mask = offs_m[:, None] < n_ctx
    q = tl.load(q_ptr + q_offsets, mask=q_mask, other=0.0)
    do = tl.load(do_ptr + q_offsets, mask=q_mask, other=0.0)
    lse = tl.load(lse_ptr + zh * n_ctx + offs_m, mask=offs_m < n_ctx, other=0.0)
    delta = tl.load(delta_ptr + zh * n_ctx + offs_m, mask=offs_m < n_ctx, other=0.0)
    dq = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    hi = n_ctx
    if CAUSAL:
        hi = tl.minimum((start_m + 1) * BLOCK_M, n_ctx)
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_offsets = base + offs_n[:, None] * stride_t + offs_d[None, :] * stride_d
        kv_mask = offs_n[:, None] < n_ctx
        k = tl.load(k_ptr + kv_offsets, mask=kv_mask, other=0.0)
        v = tl.load(v_ptr + kv_offsets, mask=kv_mask, other=0.0)
        if q_ptr.dtype.element_ty == tl.float32:
            qk = tl.dot(q, tl.trans(k), input_precision="ieee")
            dp = tl.dot(do, tl.trans(v), input_precision="ieee")
        else:
            qk = tl.dot(q, tl.trans(k))
            dp = tl.dot(do, tl.trans(v))
        valid = (offs_m[:, None] < n_ctx) & (offs_n[None, :] < n_ctx)
        if CAUSAL:
            valid = valid & (offs_m[:, None] >= offs_n[None, :])
        p = tl.where(valid, tl.exp(qk * sm_scale - lse[:, None]), 0.0)
        ds = p * (dp - delta[:, None])
        if q_ptr.dtype.element_ty == tl.float32:
            dq += tl.dot(ds, k, input_precision="ieee")
        else:
            dq += tl.dot(ds.to(k.dtype), k)
    tl.store(dq_ptr + q_offsets, (dq * sm_scale).to(dq_ptr.dtype.element_ty), mask=q_mask)
    # END SOLUTION


def _strides(a: np.ndarray) -> tuple[int, ...]:
    return tuple(s // a.itemsize for s in a.strides)


def _same_layout(*arrays: np.ndarray) -> list[np.ndarray]:
    """The arrays with one shared set of strides (contiguous copies where they differ)."""
    if all(a.strides == arrays[0].strides for a in arrays):
        return list(arrays)
    return [np.ascontiguousarray(a) for a in arrays]


def flash_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool = False,
                    sm_scale: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(o, lse) of attention over (Z, H, T, D) arrays by ``flash_attention_kernel``; D a
    power of two >= 16."""
    # BEGIN SOLUTION 6.5
    z, h, t, d = q.shape
    q, k, v = _same_layout(q, k, v)
    scale = 1.0 / math.sqrt(d) if sm_scale is None else sm_scale
    o = np.empty_like(q)
    if o.strides != q.strides:  # empty_like keeps the order of the dims, not a view's gaps
        q, k, v = (np.ascontiguousarray(a) for a in (q, k, v))
        o = np.empty_like(q)
    lse = np.empty((z * h, t), np.float32)
    launch(flash_attention_kernel, (cdiv(t, BLOCK_M), z * h), q, k, v, o, lse, *_strides(q), h, t,
           scale, CAUSAL=causal, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, HEAD_DIM=d)
    return o, lse.reshape(z, h, t)
    # END SOLUTION


def flash_attention_backward(q: np.ndarray, k: np.ndarray, v: np.ndarray, o: np.ndarray,
                             lse: np.ndarray, grad: np.ndarray, causal: bool = False,
                             sm_scale: float | None = None
                             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dq, dk, dv) of attention from the forward's o and lse and the gradient of o, by the
    three backward kernels."""
    # BEGIN SOLUTION 6.5
    z, h, t, d = q.shape
    q, k, v, o, grad = _same_layout(np.ascontiguousarray(q), k, v, o, grad)
    scale = 1.0 / math.sqrt(d) if sm_scale is None else sm_scale
    lse = np.ascontiguousarray(lse, np.float32).reshape(z * h, t)
    delta = np.empty((z * h, t), np.float32)
    strides = _strides(q)
    launch(flash_attention_backward_preprocess_kernel, (cdiv(t, BLOCK_M), z * h), o, grad, delta,
           *strides, h, t, BLOCK_M=BLOCK_M, HEAD_DIM=d)
    dq, dk, dv = np.empty_like(q), np.empty_like(q), np.empty_like(q)
    launch(flash_attention_backward_dkdv_kernel, (cdiv(t, BLOCK_N), z * h), q, k, v, grad, lse,
           delta, dk, dv, *strides, h, t, scale, CAUSAL=causal, BLOCK_M=BLOCK_M,
           BLOCK_N=BLOCK_N, HEAD_DIM=d)
    launch(flash_attention_backward_dq_kernel, (cdiv(t, BLOCK_M), z * h), q, k, v, grad, lse,
           delta, dq, *strides, h, t, scale, CAUSAL=causal, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
           HEAD_DIM=d)
    return dq, dk, dv
    # END SOLUTION
