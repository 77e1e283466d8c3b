"""Drawing kernel launches for assignment 6: a case's structure (sizes, layouts, flags)
through Hypothesis, its values from a NumPy generator seeded by Hypothesis, every draw of
values written down as NumPy code, so that a failure comes with code that redraws them."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

LAYOUTS_2D = ("contiguous", "transposed", "strided", "padded")
NP_NAMES = {"float32": "np.float32", "float16": "np.float16", "int64": "np.int64",
            "int32": "np.int32", "float64": "np.float64"}


class Values:
    """Structure from Hypothesis (``data``), values from ``np.random.default_rng(seed)``.

    Without ``data`` (a hand-picked case) every choice takes its first option and sizes
    their lower bound, so a hand-picked case states its sizes itself; its values come
    from the grading seed (``seed`` itself at grading seed 0)."""

    def __init__(self, data: st.DataObject | None, seed: int | None = None) -> None:
        from ..suites._seed import case_seed

        self._data = data
        if seed is None:
            seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
        elif data is None:
            seed = case_seed(seed, "cuda hand-picked values")
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.lines = [f"rng = np.random.default_rng({seed})"]
        self._named: list[tuple[np.ndarray, str]] = []  # each drawn array, its name in lines

    # structure (Hypothesis)
    def __call__(self, strategy: st.SearchStrategy) -> Any:
        return self._data.draw(strategy)

    def integer(self, low: int, high: int) -> int:
        return low if self._data is None else self(st.integers(low, high))

    def pick(self, options: Any) -> Any:
        options = list(options)
        return options[0] if self._data is None else self(st.sampled_from(options))

    def flag(self) -> bool:
        return False if self._data is None else self(st.booleans())

    # values (NumPy), each recorded
    def normal(self, name: str, shape: tuple[int, ...], dtype: str, scale: float = 1.0,
               shift: float = 0.0) -> np.ndarray:
        shape = tuple(int(s) for s in shape)
        value = (self.rng.standard_normal(shape) * scale + shift).astype(dtype)
        self.lines.append(f"{name} = (rng.standard_normal({shape}) * {scale!r} + {shift!r})"
                          f".astype({NP_NAMES[dtype]})")
        self.named(value, name)
        return value

    def uniform(self, name: str, shape: tuple[int, ...], dtype: str, low: float,
                high: float) -> np.ndarray:
        shape = tuple(int(s) for s in shape)
        value = self.rng.uniform(low, high, shape).astype(dtype)
        self.lines.append(f"{name} = rng.uniform({low!r}, {high!r}, {shape})"
                          f".astype({NP_NAMES[dtype]})")
        self.named(value, name)
        return value

    def integers(self, name: str, shape: tuple[int, ...], low: int, high: int) -> np.ndarray:
        shape = tuple(int(s) for s in shape)
        value = self.rng.integers(low, high, shape).astype(np.int64)
        self.lines.append(f"{name} = rng.integers({low}, {high}, {shape}).astype(np.int64)")
        self.named(value, name)
        return value

    def note(self, line: str) -> None:
        self.lines.append(line)

    def named(self, value: np.ndarray, name: str) -> None:
        """Say that ``lines`` give ``value`` the name ``name``."""
        self._named.append((value, name))

    def name_of(self, value: Any) -> str | None:
        """The name ``lines`` give this very array, if any."""
        return next((name for v, name in self._named if v is value), None)


def fixed(seed: int) -> Values:
    """Values for a hand-picked case (no Hypothesis)."""
    return Values(None, seed)


def matrix_layout(v: Values) -> str:
    """A memory layout for a 2-D input: contiguous, transposed, every other column
    (strided), or rows longer than the matrix (padded)."""
    return v.pick(LAYOUTS_2D)
