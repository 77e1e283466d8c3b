"""Data-loading scenarios written once against PyTorch's ``torch.utils.data`` API (as
``_modules``): the probes run them with the submission's tinytrain, the oracle with torch.

``lib`` holds the adapters: ``data`` (``tt.data`` or ``torch.utils.data``), ``tensor``
(values to a tensor), ``is_tensor`` and ``describe_tensor`` (a tensor to ``[dtype name,
values]``). Nothing here imports torch or the submission.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def describe(lib: Any, batch: Any) -> Any:
    """A batch as plain data: tensors become ["tensor", dtype, values]."""
    if lib.is_tensor(batch):
        return ["tensor", *lib.describe_tensor(batch)]
    if isinstance(batch, dict):
        return ["dict", [[str(k), describe(lib, v)] for k, v in batch.items()]]
    if isinstance(batch, (list, tuple)):
        return [type(batch).__name__, [describe(lib, v) for v in batch]]
    if isinstance(batch, (str, int, float)):
        return ["value", batch]
    return ["other", type(batch).__name__]


def batches(lib: Any, x: np.ndarray, y: np.ndarray, batch_size: int,
            drop_last: bool) -> dict[str, Any]:
    """DataLoader(TensorDataset(x, y), batch_size, drop_last=...) without shuffling."""
    ds = lib.data.TensorDataset(lib.tensor(x), lib.tensor(y))
    loader = lib.data.DataLoader(ds, batch_size=batch_size, drop_last=drop_last)
    return {
        "len(dataset)": len(ds),
        "dataset[1]": describe(lib, ds[1]),
        "len(loader)": len(loader),
        "batches": [describe(lib, b) for b in loader],
    }


def sample(lib: Any, kind: str, i: int) -> Any:
    """Sample ``i`` of a structured dataset: a tuple, a dict or nested lists."""
    vec = lib.tensor(np.arange(3, dtype=np.float32) + i)
    if kind == "tuple":
        return (vec, i / 2, i)
    if kind == "dict":
        return {"x": vec, "label": i % 3, "name": f"s{i}", "flag": i % 2 == 0}
    if kind == "nested":
        return [i, [float(i), 2.0 * i], np.full(2, i, np.int32)]
    raise ValueError(kind)


def collate(lib: Any, kind: str, n: int, batch_size: int) -> list[Any]:
    """Batches of a Dataset of structured samples (see ``sample``), default collation."""

    class Structured(lib.data.Dataset):
        def __getitem__(self, i: int) -> Any:
            return sample(lib, kind, i)

        def __len__(self) -> int:
            return n

    return [describe(lib, b) for b in lib.data.DataLoader(Structured(), batch_size=batch_size)]
