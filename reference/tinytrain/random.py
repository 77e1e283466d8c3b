"""The global random number generator (``tt.manual_seed``)."""

from __future__ import annotations

import numpy as np

from .tensor import Tensor

_generator = np.random.default_rng(0)


def manual_seed(seed: int) -> None:
    """Reseed the global generator used by ``rand``, ``randn``, init and dropout."""
    global _generator
    _generator = np.random.default_rng(seed)


def default_generator() -> np.random.Generator:
    """The global NumPy generator behind tinytrain's random functions."""
    return _generator


class Generator:
    """A random number generator object, for reproducible shuffling and splitting
    (``tt.Generator().manual_seed(0)``), independent of the global one.

    Backed by NumPy's PCG64: the same seed gives the same numbers, but not the same
    numbers as PyTorch's generator.
    """

    def __init__(self) -> None:
        self.manual_seed(67280421310721)  # PyTorch's default initial seed

    def manual_seed(self, seed: int) -> Generator:
        """Reseed this generator; returns it, so ``Generator().manual_seed(0)`` works."""
        self._seed = int(seed)
        self._rng = np.random.default_rng(self._seed)
        return self

    def initial_seed(self) -> int:
        """The seed this generator was last seeded with."""
        return self._seed


def _numpy_generator(generator: Generator | None) -> np.random.Generator:
    return default_generator() if generator is None else generator._rng


def randperm(n: int, *, generator: Generator | None = None) -> Tensor:
    """A random permutation of ``0 .. n-1`` (int64), drawn from ``generator`` or the global
    generator."""
    return Tensor(_numpy_generator(generator).permutation(n).astype(np.int64))
