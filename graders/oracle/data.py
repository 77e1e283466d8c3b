"""torch.utils.data versions of the data probes, and the documented early-stopping rule."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import torch
from torch.utils import data


def _describe(batch: Any) -> Any:
    if isinstance(batch, torch.Tensor):
        return ["tensor", str(batch.dtype).removeprefix("torch."), batch.numpy().copy()]
    if isinstance(batch, dict):
        return ["dict", [[str(k), _describe(v)] for k, v in batch.items()]]
    if isinstance(batch, (list, tuple)):
        return [type(batch).__name__, [_describe(v) for v in batch]]
    if isinstance(batch, (str, int, float)):
        return ["value", batch]
    return ["other", type(batch).__name__]


def batches(x: np.ndarray, y: np.ndarray, batch_size: int, drop_last: bool) -> dict[str, Any]:
    ds = data.TensorDataset(torch.tensor(x), torch.tensor(y))
    loader = data.DataLoader(ds, batch_size=batch_size, drop_last=drop_last)
    return {
        "len(dataset)": len(ds),
        "dataset[1]": _describe(ds[1]),
        "len(loader)": len(loader),
        "batches": [_describe(b) for b in loader],
    }


def _samples(kind: str, i: int) -> Any:
    vec = torch.tensor(np.arange(3, dtype=np.float32) + i)
    if kind == "tuple":
        return (vec, i / 2, i)
    if kind == "dict":
        return {"x": vec, "label": i % 3, "name": f"s{i}", "flag": i % 2 == 0}
    if kind == "nested":
        return [i, [float(i), 2.0 * i], np.full(2, i, np.int32)]
    raise ValueError(kind)


def collate(kind: str, n: int, batch_size: int) -> list[Any]:
    class Structured(data.Dataset):
        def __getitem__(self, i: int) -> Any:
            return _samples(kind, i)

        def __len__(self) -> int:
            return n

    return [_describe(b) for b in data.DataLoader(Structured(), batch_size=batch_size)]


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
