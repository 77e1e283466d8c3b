"""The optimizer and scheduler scenarios (``graders.probes._optim``) run with torch.optim,
and the cosine-with-warmup factor from its documented formula."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from ..probes import _optim

_KINDS = {"SGD": torch.optim.SGD, "Adam": torch.optim.Adam, "AdamW": torch.optim.AdamW}


def _set_grad(p: torch.Tensor, values: np.ndarray | None) -> None:
    p.grad = None if values is None else torch.tensor(values)


def _set_grad_tensor(p: torch.Tensor, t: torch.Tensor) -> None:
    p.grad = t


def _dtype_name(v: Any) -> str | None:
    return str(v.dtype).removeprefix("torch.") if isinstance(v, torch.Tensor) else None


def _array(t: torch.Tensor) -> np.ndarray:
    return t.detach().numpy().copy()


class Toy(torch.optim.Optimizer):
    """The probes' Toy optimizer (``graders.probes.optim.toy_class``) in torch."""

    def __init__(self, params: Any, lr: float = 0.1, decay: float = 0.5) -> None:
        super().__init__(params, {"lr": lr, "decay": decay})

    @torch.no_grad()
    def step(self) -> None:  # type: ignore[override]
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = torch.tensor(0.0)
                    state["trace"] = torch.zeros_like(p)
                state["step"] += 1
                state["trace"].mul_(group["decay"]).add_(p.grad)
                p.sub_(group["lr"] * state["trace"])


LIB = SimpleNamespace(
    optim=torch.optim,
    # torch's single-tensor path, the one a NumPy implementation follows
    optimizer=lambda kind, groups, **options: _KINDS[kind](groups, foreach=False, **options),
    Toy=Toy,
    param=lambda values: torch.nn.Parameter(torch.tensor(np.asarray(values))),
    param_copy=lambda p, float64: torch.nn.Parameter(
        p.detach().clone().to(torch.float64 if float64 else torch.float32)),
    param_of=torch.nn.Parameter,
    cast=lambda values, dtype: torch.tensor(values).to(getattr(torch, dtype)),
    set_grad=_set_grad,
    set_grad_tensor=_set_grad_tensor,
    grad=lambda p: None if p.grad is None else _array(p.grad),
    is_tensor=lambda x: isinstance(x, torch.Tensor),
    array=_array,
    handle=lambda p: p.data_ptr(),
    same_handle=lambda p, ptr: p.data_ptr() == ptr,
    dtype_name=_dtype_name,
    cosine=lambda opt, **args: torch.optim.lr_scheduler.LambdaLR(opt, cosine_with_warmup(**args)),
)
LAMBDAS = _optim.LAMBDAS


def steps(kind: str, options: dict[str, Any], groups: list[dict[str, Any]],
          grads: list[list[Any]]) -> list[list[Any]]:
    """What ``optim.steps`` records, from torch's single-tensor (foreach=False) path."""
    return _optim.steps(LIB, kind, options, groups, grads)


def toy_state_dict(groups: list[dict[str, Any]], grads: list[list[Any]],
                   extra_group: dict[str, Any] | None) -> dict[str, Any]:
    return _optim.toy_state_dict(LIB, groups, grads, extra_group)


def toy_resume(groups: list[dict[str, Any]], before: list[list[Any]], after: list[list[Any]],
               float64: bool) -> dict[str, Any]:
    return _optim.toy_resume(LIB, groups, before, after, float64)


def schedule(kind: str, args: dict[str, Any], base_lrs: list[float],
             n_steps: int) -> dict[str, Any]:
    return _optim.schedule(LIB, kind, args, base_lrs, n_steps)


def state_dtypes(kind: str, options: dict[str, Any], dtype: str,
                 param: list[float] | None = None,
                 grads: list[float] | None = None) -> dict[str, Any]:
    """What ``optim.state_dtypes`` observes, with torch (foreach=False)."""
    return _optim.state_dtypes(LIB, kind, options, dtype, param, grads)


def state_dtypes_numpy_options(kind: str, options: dict[str, Any], dtype: str,
                               **values: Any) -> dict[str, Any]:
    """What ``optim.state_dtypes_numpy_options`` observes: the float options as NumPy
    float64 scalars."""
    return _optim.state_dtypes_numpy_options(LIB, kind, options, dtype, **values)


# ----- schedulers -------------------------------------------------------------------
def cosine_with_warmup(num_warmup_steps: int, num_training_steps: int,
                       num_cycles: float = 0.5) -> Any:
    """The factor of ``tt.optim.lr_scheduler.get_cosine_schedule_with_warmup`` (its
    documented formula, Hugging Face's recipe)."""

    def factor(step: int) -> float:
        if step < num_warmup_steps:
            return float(step) / float(max(1, num_warmup_steps))
        progress = float(step - num_warmup_steps) / float(
            max(1, num_training_steps - num_warmup_steps))
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * float(num_cycles) * 2.0 * progress)))

    return factor
