"""The module scenarios (``graders.probes._modules``) run with torch.nn."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from ..probes import _modules


def _set_grad(p: torch.Tensor, values: np.ndarray) -> None:
    p.grad = torch.tensor(values)


def _add_inplace(p: torch.Tensor, value: float) -> None:
    with torch.no_grad():
        p.add_(value)


def _dtype(t: torch.Tensor) -> str:
    return str(t.dtype).removeprefix("torch.")


LIB = SimpleNamespace(
    nn=torch.nn,
    tensor=lambda values: torch.tensor(np.asarray(values)),
    array=lambda t: t.detach().numpy().copy(),
    same_storage=lambda a, b: a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr(),
    add_inplace=_add_inplace,
    set_grad=_set_grad,
    grad=lambda p: None if p.grad is None else p.grad.numpy().copy(),
    grad_object=lambda p: p.grad,
    shape=lambda t: tuple(t.shape),
    float64=torch.float64,
    dtype=_dtype,
    dtype_of_grad=lambda p: None if p.grad is None else _dtype(p.grad),
)


def run(scenario: str, *args: Any) -> Any:
    """Run the scenario ``scenario`` of ``_modules`` with torch."""
    return getattr(_modules, scenario)(LIB, *args)
