"""Drawing kernel launches for assignment 6: a case's structure (sizes, layouts, flags)
through Hypothesis, its values from a NumPy generator seeded by Hypothesis, every draw of
values written down as NumPy code, so that a failure comes with code that redraws them."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

LAYOUTS_2D = ("contiguous", "transposed", "strided", "padded")
# a 1-D buffer: contiguous, every other element, or inside a longer allocation
LAYOUTS_1D = ("contiguous", "strided", "padded")
# a wrapper's argument (NumPy arrays the probe lays out): the kernel layouts, and a view
# that starts inside a bigger buffer ("offset": its first element is not the allocation's)
WRAPPER_LAYOUTS_2D = ("contiguous", "transposed", "strided", "offset")
WRAPPER_LAYOUTS_1D = ("contiguous", "strided", "offset")
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

    def option(self, options: Any) -> Any:
        """A keyword's value on the options axis: ``options[0]`` is the default (a hand-
        picked case keeps it), the rest non-default values, drawn; a ``Seeded`` case takes
        the first falsy non-default value (0.0, False ...), so that every wrapper meets it."""
        return self.pick(options)

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


class Seeded(Values):
    """A case whose structure is drawn from its own NumPy generator (no Hypothesis, sizes
    not at their lower bound), every wrapper argument laid out as ``layout``: the one case
    a wrapper test runs before its drawn ones, so that each argument's non-contiguous
    layout is met whatever the few drawn examples pick."""

    def __init__(self, seed: int, layout: str) -> None:
        super().__init__(None, seed)
        self.layout = layout
        self._structure = np.random.default_rng(self.seed + 1)

    def integer(self, low: int, high: int) -> int:
        return int(self._structure.integers(low, high + 1))

    def pick(self, options: Any) -> Any:
        options = list(options)
        return options[int(self._structure.integers(len(options)))]

    def flag(self) -> bool:
        return bool(self._structure.integers(2))

    def option(self, options: Any) -> Any:
        options = list(options)
        falsy = [o for o in options[1:] if o is not None and not o]
        return falsy[0] if falsy else self.pick(options)


def matrix_layout(v: Values) -> str:
    """A memory layout for a 2-D input: contiguous, transposed, every other column
    (strided), or rows longer than the matrix (padded)."""
    return v.pick(LAYOUTS_2D)


def vector_layout(v: Values) -> str:
    """A memory layout for a 1-D buffer."""
    return v.pick(LAYOUTS_1D)


def wrapper_layout(v: Values, ndim: int) -> str:
    """A memory layout for a wrapper's argument of ``ndim`` dims, drawn for each argument
    on its own: contiguous, transposed (2-D and up), every other element of the last dim,
    or a view starting inside a bigger buffer (a ``Seeded`` case: its one layout)."""
    if isinstance(v, Seeded):
        return v.layout
    return v.pick(WRAPPER_LAYOUTS_2D if ndim >= 2 else WRAPPER_LAYOUTS_1D)


_WORDS = (("(strided", "(column-strided"), (" strided)", " column-strided)"),
          ("(offset", "(offset into a bigger buffer"), ("(padded", "(padded rows"))


def worded(description: str) -> str:
    """A case's description with each layout named as a reader says it."""
    for short, long in _WORDS:
        description = description.replace(short, long)
    return description


def laid(array: np.ndarray, layout: str) -> dict[str, Any]:
    """A wrapper argument the probe lays out so (``probes.cuda._laid_out``)."""
    return {"array": array, "layout": layout}


def tile(v: Values, name: str, options: tuple[int, ...]) -> int:
    """A tile size drawn from ``options`` (the first at a hand-picked case); each BLOCK_*
    of a launch is drawn on its own, so BLOCK_M != BLOCK_N and blocks that do not divide
    the sizes come up."""
    del name
    return int(v.pick(options))


def poke(v: Values, name: str, target: np.ndarray, value: float, fraction: float) -> None:
    """Put ``value`` (NaN, +-inf, -0.0) into about ``fraction`` of ``target`` (a view of a
    drawn array, written ``name`` in the reproducer: "x" or "x[:, 1:]"), in place,
    recorded."""
    hit = v.rng.random(target.shape) < fraction
    target[hit] = value
    shown = {"nan": "np.nan", "inf": "np.inf", "-inf": "-np.inf"}.get(repr(value), repr(value))
    v.note(f"{name}[rng.random({name}.shape) < {fraction!r}] = {shown}")
