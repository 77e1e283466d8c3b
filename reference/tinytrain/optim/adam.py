"""Adam and AdamW."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..tensor import Tensor
from .optimizer import Optimizer


class Adam(Optimizer):
    """PyTorch's Adam. For each parameter with a gradient g (negated with ``maximize``),
    at step t (counting from 1):

        p = p * (1 - lr * weight_decay)    (decoupled weight decay, AdamW)
        g = g + weight_decay * p           (otherwise, if weight_decay != 0)
        m = m + (1 - beta1) * (g - m)      (exp_avg; PyTorch's lerp)
        v = beta2 * v + (1 - beta2) * g * g                  (exp_avg_sq)
        vmax = max(vmax, v); use vmax for v below            (amsgrad)
        denom = sqrt(v) / sqrt(1 - beta2 ** t) + eps
        p = p - lr / (1 - beta1 ** t) * m / denom

    The bias corrections are computed in Python floats. ``state[p]`` holds "step" (a
    float32 scalar tensor), "exp_avg", "exp_avg_sq" and, with amsgrad, "max_exp_avg_sq".
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *, maximize: bool = False,
                 decoupled_weight_decay: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()``'s
        loss when a closure is given."""
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
            weight_decay, amsgrad = group["weight_decay"], group["amsgrad"]
            for param in group["params"]:
                if param._grad is None:
                    continue
                if param.is_cuda:  # assignment 6: the fused kernel updates device parameters
                    from ..cuda.device import fused_adam_step

                    fused_adam_step(self, param, group)
                    param._bump_version()
                    continue
                # BEGIN SOLUTION 5.4
                # HINT: create the state lazily on the parameter's first step (zeros of its
                # HINT: shape and dtype); update param.data and the state arrays in place.
                grad = param._grad.data
                if group["maximize"]:
                    grad = -grad
                state = self.state[param]
                if not state:
                    state["step"] = Tensor(np.zeros((), np.float32))
                    state["exp_avg"] = Tensor(np.zeros_like(param.data))
                    state["exp_avg_sq"] = Tensor(np.zeros_like(param.data))
                    if amsgrad:
                        state["max_exp_avg_sq"] = Tensor(np.zeros_like(param.data))
                state["step"].data += 1
                if weight_decay != 0:
                    if group["decoupled_weight_decay"]:
                        param.data *= 1 - lr * weight_decay
                    else:
                        grad = grad + weight_decay * param.data
                exp_avg, exp_avg_sq = state["exp_avg"].data, state["exp_avg_sq"].data
                exp_avg += (1 - beta1) * (grad - exp_avg)
                exp_avg_sq *= beta2
                exp_avg_sq += (1 - beta2) * grad * grad
                step = float(state["step"].data)
                bias_correction1 = 1 - beta1**step
                bias_correction2 = 1 - beta2**step
                if amsgrad:
                    np.maximum(state["max_exp_avg_sq"].data, exp_avg_sq,
                               out=state["max_exp_avg_sq"].data)
                    exp_avg_sq = state["max_exp_avg_sq"].data
                denom = np.sqrt(exp_avg_sq) / bias_correction2**0.5 + eps
                param.data -= lr / bias_correction1 * exp_avg / denom
                # END SOLUTION
                param._bump_version()
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov and Hutter): the parameter shrinks by
    ``lr * weight_decay`` of itself each step, and the decay never enters m or v."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         decoupled_weight_decay=True)
