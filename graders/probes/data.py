"""Probes for tasks 5.6 (data loading) and 5.7 (early stopping); the batching and
collation scenarios are written once in ``_data``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from . import _data, probe
from ._observe import array, raised


def _lib(tt: Any) -> SimpleNamespace:
    """The adapters ``_data`` needs, for tinytrain."""
    return SimpleNamespace(
        data=tt.data,
        tensor=tt.tensor,
        # duck-typed: any object with a NumPy ``.data`` is the submission's tensor
        is_tensor=lambda x: hasattr(x, "data") and isinstance(x.data, np.ndarray),
        describe_tensor=lambda t: [t.data.dtype.name, array(t)],
    )


@probe
def batches(tt: Any, x: np.ndarray, y: np.ndarray, batch_size: int,
            drop_last: bool) -> dict[str, Any]:
    """DataLoader(TensorDataset(x, y), batch_size, drop_last=...) without shuffling."""
    return _data.batches(_lib(tt), x, y, batch_size, drop_last)


@probe
def collate(tt: Any, kind: str, n: int, batch_size: int) -> list[Any]:
    """Batches of a Dataset of structured samples (see ``_data.sample``), default collation."""
    return _data.collate(_lib(tt), kind, n, batch_size)


@probe
def collate_ragged(tt: Any, shapes: list[list[int]]) -> dict[str, Any]:
    """What one batch of a Dataset of zero tensors of these shapes raises."""

    class Ragged(tt.data.Dataset):
        def __getitem__(self, i: int) -> Any:
            return tt.zeros(*shapes[i])

        def __len__(self) -> int:
            return len(shapes)

    return raised(lambda: next(iter(tt.data.DataLoader(Ragged(), batch_size=len(shapes)))))


def _orders(loader: Any, epochs: int) -> list[list[list[int]]]:
    return [[[int(v) for v in batch[0].data.reshape(-1)] for batch in loader]
            for _ in range(epochs)]


@probe
def shuffle_orders(tt: Any, n: int, batch_size: int, drop_last: bool, seeds: list[int],
                   global_seeds: list[int]) -> dict[str, Any]:
    """The sample indices each batch holds, epoch by epoch, for shuffled loaders over
    TensorDataset(arange(n)): with a tt.Generator per seed (twice, fresh generators), and
    with the global generator after tt.manual_seed(seed); and without shuffling."""
    ds = tt.data.TensorDataset(tt.tensor(np.arange(n, dtype=np.int64)))

    def loader(**kwargs: Any) -> Any:
        return tt.data.DataLoader(ds, batch_size=batch_size, drop_last=drop_last, **kwargs)

    out: dict[str, Any] = {"by_seed": [], "by_seed_again": [], "global": [], "global_again": []}
    for seed in seeds:
        for key in ("by_seed", "by_seed_again"):
            gen = tt.Generator().manual_seed(seed)
            out[key].append(_orders(loader(shuffle=True, generator=gen), 2))
    for seed in global_seeds:
        for key in ("global", "global_again"):
            tt.manual_seed(seed)
            out[key].append(_orders(loader(shuffle=True), 1))
    out["no_shuffle"] = _orders(loader(shuffle=False), 1)
    out["len(loader)"] = len(loader(shuffle=True))
    return out


@probe
def split(tt: Any, n: int, lengths: list[Any], seeds: list[int]) -> dict[str, Any]:
    """random_split(TensorDataset(10 * arange(n)), lengths, generator per seed): each
    subset's len, .indices and items; twice per seed."""
    ds = tt.data.TensorDataset(tt.tensor(np.arange(n, dtype=np.int64) * 10))

    def run(seed: int) -> list[dict[str, Any]]:
        subsets = tt.data.random_split(ds, lengths, generator=tt.Generator().manual_seed(seed))
        return [{
            "len": len(s),
            "indices": [int(i) for i in s.indices],
            "items": [int(s[i][0].item()) for i in range(len(s))],
        } for s in subsets]

    return {"first": [run(s) for s in seeds], "again": [run(s) for s in seeds]}


@probe
def split_errors(tt: Any, n: int, lengths: list[Any]) -> dict[str, Any]:
    ds = tt.data.TensorDataset(tt.tensor(np.arange(n, dtype=np.int64)))
    return raised(lambda: tt.data.random_split(ds, lengths))


@probe
def early_stopping(tt: Any, values: list[float], options: dict[str, Any]) -> dict[str, Any]:
    """EarlyStopping(**options).step(v) for each value: [returned, best, num_bad_epochs]."""
    stopper = tt.data.EarlyStopping(**options)
    seen = []
    for value in values:
        stop = stopper.step(value)
        seen.append([bool(stop), float(stopper.best), int(stopper.num_bad_epochs)])
    best_epoch = stopper.best_epoch
    return {"steps": seen, "best_epoch": None if best_epoch is None else int(best_epoch)}
