"""Task 6.6: a fused Adam/AdamW step over flat buffers (the course framework's CUDA
homework): one kernel reads each element of the parameter, its gradient and the two
moment buffers once, updates all three in place, and writes them once.
"""

from __future__ import annotations

import numpy as np

from ._runtime import cdiv, launch, load_triton

triton = load_triton()
tl = triton.language

BLOCK = 1024  # the wrapper's block (the grader launches the kernel with its own)


@triton.jit
def adam_kernel(param_ptr, grad_ptr, exp_avg_ptr, exp_avg_sq_ptr, n_elements, lr, beta1, beta2,
                eps, weight_decay, step, DECOUPLED: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    """One step of torch.optim.Adam (DECOUPLED: AdamW) on flat contiguous float32 buffers,
    in place; ``step`` counts from 1 (this step's number). For each element:
        p = p * (1 - lr * weight_decay)        (DECOUPLED)
        g = g + weight_decay * p               (otherwise)
        m = m + (1 - beta1) * (g - m);  v = beta2 * v + (1 - beta2) * g * g
        p = p - lr / (1 - beta1**step) * m / (sqrt(v) / sqrt(1 - beta2**step) + eps)
    Grid: (cdiv(n_elements, BLOCK_SIZE),)."""
    # BEGIN SOLUTION 6.6
    # HINT: beta ** step in a kernel: tl.exp2(tl.log2(beta) * step)
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    p = tl.load(param_ptr + offsets, mask=mask)
    g = tl.load(grad_ptr + offsets, mask=mask)
    m = tl.load(exp_avg_ptr + offsets, mask=mask)
    v = tl.load(exp_avg_sq_ptr + offsets, mask=mask)
    if DECOUPLED:
        p = p * (1.0 - lr * weight_decay)
    else:
        g = g + p * weight_decay
    m = m + (g - m) * (1.0 - beta1)
    v = v * beta2 + g * g * (1.0 - beta2)
    beta1_pow = tl.exp2(tl.log2(beta1) * step)
    beta2_pow = tl.exp2(tl.log2(beta2) * step)
    bias_correction1 = 1.0 - beta1_pow
    bias_correction2 = 1.0 - beta2_pow
    denom = tl.sqrt(v) / tl.sqrt(bias_correction2) + eps
    p = p - (lr / bias_correction1) * m / denom
    tl.store(param_ptr + offsets, p, mask=mask)
    tl.store(exp_avg_ptr + offsets, m, mask=mask)
    tl.store(exp_avg_sq_ptr + offsets, v, mask=mask)
    # END SOLUTION


def adam_step(param: np.ndarray, grad: np.ndarray, exp_avg: np.ndarray, exp_avg_sq: np.ndarray,
              step: int, lr: float, beta1: float, beta2: float, eps: float,
              weight_decay: float = 0.0, decoupled: bool = False
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One Adam(W) step by ``adam_kernel`` on contiguous float32 arrays of one size,
    updated in place (and returned: param, exp_avg, exp_avg_sq)."""
    # BEGIN SOLUTION 6.6
    for name, a in (("param", param), ("exp_avg", exp_avg), ("exp_avg_sq", exp_avg_sq)):
        if a.dtype != np.float32 or not a.flags.c_contiguous:
            raise ValueError(f"adam_step: {name} must be a contiguous float32 array")
    grad = np.ascontiguousarray(grad, np.float32)
    n = param.size
    launch(adam_kernel, (cdiv(n, BLOCK),), param, grad, exp_avg, exp_avg_sq, n, lr, beta1, beta2,
           eps, weight_decay, int(step), DECOUPLED=decoupled, BLOCK_SIZE=BLOCK)
    return param, exp_avg, exp_avg_sq
    # END SOLUTION
