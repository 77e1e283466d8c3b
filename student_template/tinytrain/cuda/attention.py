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
    # HINT: work in base 2: qk * (sm_scale * log2(e)) with tl.exp2, lse = (m + log2(l)) / log2(e)
    # HINT: mask scores of keys past n_ctx (and in the future, with CAUSAL) to -inf; a row
    # HINT: whose maximum is still -inf must not compute -inf - -inf (subtract 0 instead)
    raise NotImplementedError("task 6.5: FlashAttention-2 forward (causal, logsumexp) and backward")


@triton.jit
def flash_attention_backward_preprocess_kernel(o_ptr, do_ptr, delta_ptr, stride_z, stride_h,
                                               stride_t, stride_d, n_heads, n_ctx,
                                               BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr):
    """delta[z * n_heads + h, i] = sum over d of o * do (float32, contiguous (Z * n_heads,
    n_ctx)). Grid: (cdiv(n_ctx, BLOCK_M), Z * n_heads)."""
    raise NotImplementedError("task 6.5: FlashAttention-2 forward (causal, logsumexp) and backward")


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
    # HINT: with CAUSAL, query blocks before the key block's first row see none of it
    raise NotImplementedError("task 6.5: FlashAttention-2 forward (causal, logsumexp) and backward")


@triton.jit
def flash_attention_backward_dq_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr,
                                       stride_z, stride_h, stride_t, stride_d, n_heads, n_ctx,
                                       sm_scale, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr,
                                       BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    """dQ of query rows [i * BLOCK_M, (i + 1) * BLOCK_M) of head zh: sm_scale * sum over
    the key blocks it sees of dS k (P, dS as in the dK/dV kernel). dq shares q's layout.
    Grid: (cdiv(n_ctx, BLOCK_M), Z * n_heads)."""
    raise NotImplementedError("task 6.5: FlashAttention-2 forward (causal, logsumexp) and backward")


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
    raise NotImplementedError("task 6.5: FlashAttention-2 forward (causal, logsumexp) and backward")


def flash_attention_backward(q: np.ndarray, k: np.ndarray, v: np.ndarray, o: np.ndarray,
                             lse: np.ndarray, grad: np.ndarray, causal: bool = False,
                             sm_scale: float | None = None
                             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dq, dk, dv) of attention from the forward's o and lse and the gradient of o, by the
    three backward kernels."""
    raise NotImplementedError("task 6.5: FlashAttention-2 forward (causal, logsumexp) and backward")
