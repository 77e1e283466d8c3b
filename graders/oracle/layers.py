"""The layer scenarios (``graders.probes._layers``) run with torch.nn."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from ..probes import _layers


def _tensor(value: np.ndarray, requires_grad: bool) -> torch.Tensor:
    t = torch.from_numpy(np.array(value, copy=True))
    return t.requires_grad_(True) if requires_grad else t


def _set_data(param: torch.Tensor, value: np.ndarray) -> None:
    param.data = torch.from_numpy(np.array(value, copy=True))


def _backward(out: torch.Tensor, grad: np.ndarray | None) -> None:
    out.backward(None if grad is None else torch.from_numpy(np.array(grad, copy=True)))


LIB = SimpleNamespace(
    nn=torch.nn,
    tensor=_tensor,
    set_data=_set_data,
    backward=_backward,
    array=lambda t: t.detach().numpy().copy(),
    grad=lambda t: None if t.grad is None else t.grad.numpy().copy(),
)


def run(scenario: str, *args: Any) -> Any:
    """Run the scenario ``scenario`` of ``_layers`` with torch."""
    return getattr(_layers, scenario)(LIB, *args)
