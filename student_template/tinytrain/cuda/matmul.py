"""Task 6.3: a tiled matrix product on tensor cores.

Each program computes one BLOCK_M x BLOCK_N tile of c, walking K in blocks of BLOCK_K with
``tl.dot`` into a float32 accumulator. Programs are numbered in grouped order: GROUP_M
consecutive tile rows are swept column by column, so programs that run together share the
rows of a and the columns of b in the L2 cache.
"""

from __future__ import annotations

import numpy as np

from ._runtime import cdiv, launch, load_triton

triton = load_triton()
tl = triton.language

# the wrappers' tiles (the grader launches the kernel with its own)
BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M = 32, 32, 32, 4


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """c = a @ b for a (M, K), b (K, N), c (M, N), any sizes and strides; products
    accumulate in float32 (tl.dot; input_precision="ieee" for float32 inputs, tensor cores
    for float16), c is stored in its own dtype.

    Grid: (cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N),). Program pid computes tile
    (pid_m, pid_n) in grouped order:
        num_pid_m, num_pid_n = cdiv(M, BLOCK_M), cdiv(N, BLOCK_N)
        group = pid // (GROUP_M * num_pid_n);  first_m = group * GROUP_M
        rows_in_group = min(num_pid_m - first_m, GROUP_M)
        pid_m = first_m + (pid % (GROUP_M * num_pid_n)) % rows_in_group
        pid_n = (pid % (GROUP_M * num_pid_n)) // rows_in_group"""
    # HINT: masks on all three dims (rows < M, cols < N, k < K) with other=0.0 for loads;
    # HINT: acc = tl.dot(a, b, acc, input_precision=...) keeps the float32 accumulator;
    # HINT: "ieee" when a_ptr.dtype.element_ty == tl.float32 (TF32 otherwise on a GPU)
    raise NotImplementedError("task 6.3: Tiled matmul: float32 accumulation, masks, strides, grouped program order")


def matmul(a: np.ndarray, b: np.ndarray, out_dtype: np.dtype | None = None) -> np.ndarray:
    """``a @ b`` for 2-D arrays (any strides) by ``matmul_kernel``; the result is
    ``out_dtype`` (a's dtype by default)."""
    raise NotImplementedError("task 6.3: Tiled matmul: float32 accumulation, masks, strides, grouped program order")
