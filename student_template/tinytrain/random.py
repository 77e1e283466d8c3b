"""The global random number generator (``tt.manual_seed``)."""

from __future__ import annotations

import numpy as np

_generator = np.random.default_rng(0)


def manual_seed(seed: int) -> None:
    """Reseed the global generator used by ``rand``, ``randn``, init and dropout."""
    global _generator
    _generator = np.random.default_rng(seed)


def default_generator() -> np.random.Generator:
    """The global NumPy generator behind tinytrain's random functions."""
    return _generator
