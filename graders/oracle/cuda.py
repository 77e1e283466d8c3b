"""torch's answers for the assignment-6 kernels (the grader side of graders.kerneltable).

Fused kernels compute in float32 and round once when they store, so for float16 inputs
the oracle upcasts the (exact) float16 values, computes in float32 (or float64 where the
check uses an error bound) and rounds once: what a correct fused kernel gives, rather than
torch's eager float16 ops, which round after every op.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812 - torch's usual name

torch.set_num_threads(1)


def t(a: np.ndarray, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """A float tensor (float32 by default) of an array's values."""
    return torch.from_numpy(np.array(a, copy=True)).to(dtype)


def n(x: torch.Tensor, dtype: str | None = None) -> np.ndarray:
    """A tensor's values as an array, cast to ``dtype`` (a NumPy name) when given."""
    out = x.detach().to(torch.float64 if dtype is None else getattr(torch, dtype)).numpy()
    return np.array(out, copy=True)


# ----- 6.1 ----------------------------------------------------------------------------
def bias_gelu(x: np.ndarray, b: np.ndarray, tanh: bool) -> torch.Tensor:
    return F.gelu(t(x) + t(b), approximate="tanh" if tanh else "none")


def bias_gelu_backward(x: np.ndarray, b: np.ndarray, dy: np.ndarray, tanh: bool) -> torch.Tensor:
    z = (t(x) + t(b)).requires_grad_()
    F.gelu(z, approximate="tanh" if tanh else "none").backward(t(dy))
    return z.grad


def tile_sums(dx: torch.Tensor, block_m: int) -> torch.Tensor:
    """Sums of ``dx`` over consecutive groups of ``block_m`` rows: (cdiv(rows, block_m), cols)."""
    rows = dx.shape[0]
    pad = (-rows) % block_m
    padded = torch.cat([dx, dx.new_zeros(pad, dx.shape[1])]) if pad else dx
    return padded.reshape(-1, block_m, dx.shape[1]).sum(1)


# ----- 6.2 ----------------------------------------------------------------------------
def softmax(x: np.ndarray, log: bool) -> torch.Tensor:
    return (F.log_softmax if log else F.softmax)(t(x), dim=-1)


def softmax_backward(y: np.ndarray, dy: np.ndarray, log: bool) -> torch.Tensor:
    """The input gradient given the saved output ``y`` (as torch's backward formulas)."""
    y32, dy32 = t(y), t(dy)
    if log:
        return dy32 - torch.exp(y32) * dy32.sum(-1, keepdim=True)
    return y32 * (dy32 - (dy32 * y32).sum(-1, keepdim=True))


# ----- 6.3 ----------------------------------------------------------------------------
def matmul_exact(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """a @ b in float64 (exact for float16 inputs up to rounding of float64), and
    |a| @ |b|, the scale of each element's rounding error."""
    a64, b64 = t(a, torch.float64), t(b, torch.float64)
    return n(a64 @ b64), n(a64.abs() @ b64.abs())


def accumulation_bound(magnitude: np.ndarray, exact: np.ndarray, k: int, out_dtype: str,
                       acc_eps: float = 2.0**-24) -> np.ndarray:
    """An error bound that every float32-accumulating summation order meets: the standard
    bound gamma_K * (|a| @ |b|) with gamma_K = K u / (1 - K u), u the float32 unit
    roundoff, plus half a unit of the output's rounding."""
    gamma = k * acc_eps / (1 - k * acc_eps)
    out_eps = {"float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}[out_dtype]
    tiny = {"float32": 1e-30, "float16": 2.0**-25, "bfloat16": 1e-30}[out_dtype]
    return gamma * magnitude + out_eps * np.abs(exact) * (1 + gamma) + tiny


# ----- 6.4 ----------------------------------------------------------------------------
def layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """y, mean and rstd (1 / sqrt(var + eps), biased variance) in float32."""
    x32 = t(x)
    mean = x32.mean(-1)
    rstd = torch.rsqrt(x32.var(-1, unbiased=False) + eps)
    y = F.layer_norm(x32, (x32.shape[-1],), t(w), t(b), eps)
    return y, mean, rstd


def layer_norm_backward(x: np.ndarray, w: np.ndarray, b: np.ndarray, dy: np.ndarray, eps: float
                        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    x32 = t(x).requires_grad_()
    w32, b32 = t(w).requires_grad_(), t(b).requires_grad_()
    F.layer_norm(x32, (x32.shape[-1],), w32, b32, eps).backward(t(dy))
    return x32.grad, w32.grad, b32.grad


def layer_norm_partials(x: np.ndarray, dy: np.ndarray, eps: float, rows_per_program: int
                        ) -> tuple[torch.Tensor, torch.Tensor]:
    """Per program (``rows_per_program`` consecutive rows): sum of dy * xhat and of dy."""
    x32, dy32 = t(x), t(dy)
    mean = x32.mean(-1, keepdim=True)
    rstd = torch.rsqrt(x32.var(-1, unbiased=False, keepdim=True) + eps)
    xhat = (x32 - mean) * rstd
    return tile_sums(dy32 * xhat, rows_per_program), tile_sums(dy32, rows_per_program)


def cross_entropy_rows(logits: np.ndarray, targets: np.ndarray, ignore_index: int,
                       grad_scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-row losses (0 where ignored) and grad_scale * d(sum of losses)/d(logits)."""
    z = t(logits).requires_grad_()
    target = torch.from_numpy(np.array(targets, copy=True))
    losses = F.cross_entropy(z, target, ignore_index=ignore_index, reduction="none")
    (losses.sum() * grad_scale).backward()
    return losses.detach(), z.grad


# ----- 6.5 ----------------------------------------------------------------------------
def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool, scale: float,
              do: np.ndarray | None = None) -> dict[str, torch.Tensor]:
    """Attention over (Z, H, T, D) in float64: o, the logsumexp of each query row's scaled
    scores, and with ``do`` the gradients of q, k and v."""
    q64, k64, v64 = (t(a, torch.float64).requires_grad_() for a in (q, k, v))
    scores = (q64 @ k64.transpose(-1, -2)) * scale
    if causal:
        steps = scores.shape[-1]
        future = torch.ones(steps, steps, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
    lse = torch.logsumexp(scores, -1)
    p = torch.softmax(scores, -1)
    o = p @ v64
    out = {"o": o.detach(), "lse": lse.detach(), "p": p.detach()}
    if do is not None:
        do64 = t(do, torch.float64)
        o.backward(do64)
        dp = do64 @ v64.detach().transpose(-1, -2)
        delta = (o.detach() * do64).sum(-1, keepdim=True)
        slack = (o.detach().abs() * do64.abs()).sum(-1, keepdim=True)  # delta from rounded o
        out.update(dq=q64.grad, dk=k64.grad, dv=v64.grad,
                   ds_magnitude=p.detach() * (dp.abs() + delta.abs() + slack))
    return out


# ----- 6.6 ----------------------------------------------------------------------------
def adam_from_state(param: np.ndarray, grad: np.ndarray, exp_avg: np.ndarray,
                    exp_avg_sq: np.ndarray, step: int, lr: float, betas: tuple[float, float],
                    eps: float, weight_decay: float, decoupled: bool
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Step number ``step`` of torch.optim.Adam / AdamW (for-loop implementation) from the
    given moments (torch's state after step - 1)."""
    p = torch.nn.Parameter(t(param))
    cls: Any = torch.optim.AdamW if decoupled else torch.optim.Adam
    opt = cls([p], lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=False)
    opt.state[p] = {"step": torch.tensor(float(step - 1)), "exp_avg": t(exp_avg),
                    "exp_avg_sq": t(exp_avg_sq)}
    p.grad = t(grad)
    opt.step()
    state = opt.state[p]
    return n(p, "float32"), n(state["exp_avg"], "float32"), n(state["exp_avg_sq"], "float32")


def sm_scale(head_dim: int) -> float:
    return 1.0 / math.sqrt(head_dim)


# ----- 6.7 ----------------------------------------------------------------------------
DEVICE_OPS: dict[str, Any] = {
    "linear": lambda t, kw: F.linear(*t),
    "matmul": lambda t, kw: t[0] @ t[1],
    "gelu": lambda t, kw: F.gelu(t[0], **kw),
    "softmax": lambda t, kw: F.softmax(t[0], **kw),
    "log_softmax": lambda t, kw: F.log_softmax(t[0], **kw),
    "layer_norm": lambda t, kw: F.layer_norm(t[0], (t[0].shape[-1],), t[1], t[2], **kw),
    "cross_entropy": lambda t, kw: F.cross_entropy(t[0], t[1], **kw),
    "scaled_dot_product_attention": lambda t, kw: F.scaled_dot_product_attention(*t, **kw),
}


def device_output_shape(op: str, inputs: list[dict[str, Any]], kwargs: dict[str, Any]
                        ) -> tuple[int, ...]:
    tensors = [torch.from_numpy(np.array(i["array"], copy=True)) for i in inputs]
    return tuple(DEVICE_OPS[op](tensors, kwargs).shape)


def device_op(op: str, inputs: list[dict[str, Any]], kwargs: dict[str, Any],
              grad_output: np.ndarray) -> dict[str, Any]:
    """torch's output and input gradients (float32 on the CPU) for what the probe
    ``cuda.device_op`` runs on the device."""
    tensors = []
    for i in inputs:
        value = torch.from_numpy(np.array(i["array"], copy=True))
        tensors.append(value.requires_grad_(bool(i.get("grad"))))
    out = DEVICE_OPS[op](tensors, kwargs)
    out.backward(torch.from_numpy(np.array(grad_output, copy=True)))
    return {"output": n(out, str(out.dtype).replace("torch.", "")),
            "grads": [n(x.grad, "float32") for x in tensors if x.requires_grad]}
