"""The GradScaler scenarios (``graders.probes._amp``) run with ``torch.amp.GradScaler("cpu")``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from ..probes import _amp


class Plain(torch.optim.Optimizer):
    """The probes' Plain optimizer: p -= lr * grad; step() returns its call count."""

    def __init__(self, params: Any, lr: float = 0.1) -> None:
        super().__init__(params, {"lr": lr})
        self.calls = 0

    @torch.no_grad()
    def step(self) -> int:  # type: ignore[override]
        self.calls += 1
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.sub_(group["lr"] * p.grad)
        return self.calls


def _np(t: torch.Tensor | None) -> np.ndarray | None:
    return None if t is None else t.detach().numpy().copy()


def _raised(fn: Any) -> dict[str, Any]:
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the exception is the expected observation
        return {"type": type(exc).__name__, "message": str(exc)}
    return {"type": None, "message": ""}


def _set_grad(p: torch.Tensor, values: np.ndarray | None) -> None:
    p.grad = None if values is None else torch.tensor(values)


LIB = SimpleNamespace(
    scaler=lambda **kwargs: torch.amp.GradScaler("cpu", **kwargs),
    Plain=Plain,
    param=lambda values: torch.nn.Parameter(torch.tensor(np.asarray(values))),
    tensor=lambda values, requires_grad=False: torch.tensor(values, requires_grad=requires_grad),
    set_grad=_set_grad,
    array=_np,
    grad=lambda p: _np(p.grad),
    grad_object=lambda p: p.grad,
    is_tensor=lambda x: isinstance(x, torch.Tensor),
    dtype=lambda t: str(t.dtype).removeprefix("torch."),
    shape=lambda t: tuple(t.shape),
    item=float,
    square_sum=lambda x: (x * x).sum(),
    half_loss=lambda p, x16, k: (p.half() * x16).sum() * k,
    raised=_raised,
)


def scaler_run(run: dict[str, Any]) -> dict[str, Any]:
    return _amp.scaler_run(LIB, run)


def state_dict_resume(run: dict[str, Any], split: int, other: dict[str, Any],
                      warm: bool) -> dict[str, Any]:
    return _amp.state_dict_resume(LIB, run, split, other, warm)


def scale_outputs(init_scale: float, leaves: list[Any], nesting: list[int],
                  lr: float) -> dict[str, Any]:
    return _amp.scale_outputs(LIB, init_scale, leaves, nesting, lr)


def errors(grad_value: float = 4.0, init_scale: float = 4.0) -> dict[str, Any]:
    return _amp.errors(LIB, grad_value, init_scale)


def scaler_edges(keys: list[str] | None = None, grad_value: float = 4.0,
                 init_scale: float = 4.0, new_scale: float = 16.0) -> dict[str, Any]:
    return _amp.scaler_edges(LIB, keys, grad_value, init_scale, new_scale)


def disabled(grads: list[float] | None = None) -> dict[str, Any]:
    return _amp.disabled(LIB, grads)


def underflow_demo(w: Any, x: Any, k: float, lr: float, iterations: int,
                   growth_interval: int) -> dict[str, Any]:
    return _amp.underflow_demo(LIB, w, x, k, lr, iterations, growth_interval)
