"""Stochastic gradient descent, with momentum, dampening, Nesterov and weight decay."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..tensor import Tensor
from .optimizer import Optimizer


class SGD(Optimizer):
    """PyTorch's SGD. For each parameter with a gradient g (negated with ``maximize``):

        g = g + weight_decay * p                              (if weight_decay != 0)
        b = g (first step), else b = momentum * b + (1 - dampening) * g   (if momentum != 0)
        g = g + momentum * b if nesterov else b                (if momentum != 0)
        p = p - lr * g

    ``state[p]["momentum_buffer"]`` holds b (only when momentum != 0).
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False,
                 *, maximize: bool = False) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize}
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()``'s
        loss when a closure (re-evaluating the model) is given."""
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
            weight_decay, nesterov = group["weight_decay"], group["nesterov"]
            for param in group["params"]:
                if param._grad is None:
                    continue
                # BEGIN SOLUTION 5.3
                # HINT: work on NumPy arrays (param.data, param.grad.data); update param.data
                # HINT: and the momentum buffer in place, in the order of the docstring.
                grad = param._grad.data
                if group["maximize"]:
                    grad = -grad
                if weight_decay != 0:
                    grad = grad + weight_decay * param.data
                if momentum != 0:
                    state = self.state[param]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        # in the parameter's dtype (bfloat16 times a Python float is
                        # float32 in NumPy; torch keeps bfloat16)
                        buf = state["momentum_buffer"] = Tensor(
                            np.array(grad, dtype=param.data.dtype, copy=True))
                    else:
                        buf.data *= momentum
                        buf.data += (1 - dampening) * grad
                    grad = grad + momentum * buf.data if nesterov else buf.data
                param.data -= lr * grad
                # END SOLUTION
                param._bump_version()
        return loss
