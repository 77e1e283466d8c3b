"""The data scenarios (``graders.probes._data``) run with torch.utils.data, and the
documented early-stopping rule."""

from __future__ import annotations

import math
import warnings
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch
from torch.utils import data

from ..probes import _data

LIB = SimpleNamespace(
    data=data,
    tensor=torch.tensor,
    is_tensor=lambda x: isinstance(x, torch.Tensor),
    describe_tensor=lambda t: [str(t.dtype).removeprefix("torch."), t.numpy().copy()],
)


def batches(x: np.ndarray, y: np.ndarray, batch_size: int, drop_last: bool) -> dict[str, Any]:
    return _data.batches(LIB, x, y, batch_size, drop_last)


def collate(kind: str, n: int, batch_size: int) -> list[Any]:
    return _data.collate(LIB, kind, n, batch_size)


def split_sizes(n: int, lengths: list[Any]) -> list[int]:
    """The subset sizes torch's random_split gives (they do not depend on the generator)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Length of split at index i is 0"
        return [len(s) for s in data.random_split(range(n), lengths)]


def early_stopping(values: list[float], patience: int = 5, min_delta: float = 0.0,
                   mode: str = "min") -> dict[str, Any]:
    """The rule of tt.data.EarlyStopping, as its docstring states it: best starts at +inf
    (-inf for "max"); an epoch improves when value < best - min_delta (value > best +
    min_delta), strictly, and then best = value, num_bad_epochs = 0; otherwise
    num_bad_epochs += 1; step() returns num_bad_epochs >= patience."""
    best = math.inf if mode == "min" else -math.inf
    bad, best_epoch, seen = 0, None, []
    for epoch, value in enumerate(values):
        improved = value < best - min_delta if mode == "min" else value > best + min_delta
        if improved:
            best, bad, best_epoch = value, 0, epoch
        else:
            bad += 1
        seen.append([bad >= patience, best, bad])
    return {"steps": seen, "best_epoch": best_epoch}
