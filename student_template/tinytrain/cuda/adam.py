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
    # HINT: beta ** step in a kernel: tl.exp2(tl.log2(beta) * step)
    raise NotImplementedError("task 6.6: Fused Adam/AdamW step over a flat buffer")


def adam_step(param: np.ndarray, grad: np.ndarray, exp_avg: np.ndarray, exp_avg_sq: np.ndarray,
              step: int, lr: float, beta1: float, beta2: float, eps: float,
              weight_decay: float = 0.0, decoupled: bool = False
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One Adam(W) step by ``adam_kernel`` on contiguous float32 arrays of one size,
    updated in place (and returned: param, exp_avg, exp_avg_sq)."""
    raise NotImplementedError("task 6.6: Fused Adam/AdamW step over a flat buffer")
