"""DataLoader: samplers, batching and collation."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ..random import Generator, randperm
from ..tensor import Tensor
from .dataset import Dataset


class SequentialSampler:
    """Indices 0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source: Dataset) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler:
    """A fresh random permutation of the indices at every pass (epoch), drawn from
    ``generator`` (else from the global generator, so ``tt.manual_seed`` fixes it)."""

    def __init__(self, data_source: Dataset, generator: Generator | None = None) -> None:
        self.data_source = data_source
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        # BEGIN SOLUTION 5.6
        # HINT: tt.randperm(n, generator=...) draws a permutation
        return iter(randperm(len(self.data_source), generator=self.generator).tolist())
        # END SOLUTION

    def __len__(self) -> int:
        return len(self.data_source)


class BatchSampler:
    """Groups the sampler's indices into lists of ``batch_size``; the last, shorter batch
    is kept unless ``drop_last``."""

    def __init__(self, sampler: Any, batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError("batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        # BEGIN SOLUTION 5.6
        batch: list[int] = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch
        # END SOLUTION

    def __len__(self) -> int:
        # BEGIN SOLUTION 5.6
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
        # END SOLUTION


def default_collate(batch: list[Any]) -> Any:
    """Merge a list of samples into a batch, as PyTorch's default_collate:
    tensors and NumPy arrays are stacked along a new first dim; Python floats become a
    float64 tensor, ints an int64 tensor, bools a bool tensor; strings stay a list; dicts
    are collated key by key, and tuples or lists position by position (into a list).
    """
    # BEGIN SOLUTION 5.6
    elem = batch[0]
    if isinstance(elem, Tensor):
        shapes = {b.shape for b in batch}
        if len(shapes) > 1:
            raise RuntimeError("stack expects each tensor to be equal size, but got "
                               f"{list(batch[0].shape)} at entry 0 and "
                               f"{next(list(b.shape) for b in batch if b.shape != elem.shape)}")
        return Tensor(np.stack([b.data for b in batch]))
    if isinstance(elem, (np.ndarray, np.generic)):
        return Tensor(np.stack([np.asarray(b) for b in batch]))
    if isinstance(elem, bool):
        return Tensor(np.array(batch, dtype=np.bool_))
    if isinstance(elem, int):
        return Tensor(np.array(batch, dtype=np.int64))
    if isinstance(elem, float):
        return Tensor(np.array(batch, dtype=np.float64))
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, Mapping):
        return {key: default_collate([sample[key] for sample in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch, strict=True)))
    if isinstance(elem, Sequence):
        if any(len(sample) != len(elem) for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(list(s)) for s in zip(*batch, strict=True)]
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, "
                    f"dicts or lists; found {type(elem).__name__}")
    # END SOLUTION


class DataLoader:
    """Iterates over ``dataset`` in batches of ``batch_size`` samples, merged by
    ``collate_fn`` (default_collate). ``shuffle=True`` visits the samples in a new random
    order each epoch, drawn from ``generator`` (else the global generator);
    ``drop_last`` drops a last, incomplete batch. ``len(loader)`` is the number of
    batches."""

    def __init__(self, dataset: Dataset, batch_size: int = 1, shuffle: bool = False,
                 sampler: Any = None, drop_last: bool = False,
                 collate_fn: Callable[[list[Any]], Any] | None = None,
                 generator: Generator | None = None) -> None:
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if sampler is None:
            sampler = RandomSampler(dataset, generator) if shuffle else SequentialSampler(dataset)
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.collate_fn = collate_fn or default_collate
        self.generator = generator

    def __iter__(self) -> Iterator[Any]:
        for indices in self.batch_sampler:
            yield self.collate_fn([self.dataset[i] for i in indices])

    def __len__(self) -> int:
        return len(self.batch_sampler)
