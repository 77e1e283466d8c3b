"""Drawing operator inputs: shapes and structure through Hypothesis, values from a NumPy
generator seeded by Hypothesis (fast, and still replayed exactly from the seed).

A sample's tensors carry a memory layout, drawn for each tensor argument on its own:
"contiguous", "transposed" (Fortran order: the transpose of a contiguous array), "sliced"
(every other element of a wider array), "offset" (a view that starts inside a larger
buffer: ``base[1:, 1:]``) or "flipped" (negative strides: the reversal of a reversed
copy). The probe rebuilds each layout with ``tt.Tensor(numpy_view)``; the values are the
same. The incoming gradient of a backward check gets a layout too.

The value axis: ``special_values`` puts NaN, +-inf, -0.0 or a slice of all -inf into a
sample's floating point inputs (forward checks on a fraction of samples). The dtype axis:
float16 and bfloat16 beside float32 and float64 (``FLOAT_DTYPES``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

LAYOUTS = ("contiguous", "transposed", "sliced", "offset", "flipped")
DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
LOW_PRECISION = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))
FLOAT_DTYPES = DTYPES + LOW_PRECISION
# the kinds of special values (``Draw.special_values``), as failure messages name them
SPECIALS = {
    "nan": "with NaN inputs",
    "inf": "with +-inf inputs",
    "neg_zero": "with -0.0 inputs",
    "neg_inf_slice": "with a slice of all -inf",
    "mixed": "with NaN, +-inf and -0.0 inputs",
}
LAYOUT_WORDS = {"transposed": "transposed", "sliced": "strided", "offset": "offset",
                "flipped": "negative-stride (flipped)"}


def is_float(dtype: np.dtype) -> bool:
    """float16, bfloat16 (whose NumPy kind is "V"), float32 or float64."""
    return np.dtype(dtype) in FLOAT_DTYPES


def layouts_for(shape: tuple[int, ...]) -> list[str]:
    """The layouts an array of ``shape`` can take that differ from contiguous (a 0-d
    or empty array has one layout only; transposing needs two dims)."""
    ndim, size = len(shape), int(np.prod(shape)) if shape else 1
    options = ["contiguous"]
    if ndim >= 2 and size:
        options.append("transposed")
    if ndim >= 1 and size:
        options += ["sliced", "offset"]
    if ndim >= 1 and size > 1:
        options.append("flipped")
    return options


@dataclass
class T:
    """A tensor argument: its values, whether its gradient is checked, its layout."""

    value: np.ndarray
    grad: bool = True
    layout: str = "contiguous"

    def __post_init__(self) -> None:
        self.value = np.asarray(self.value)  # NumPy returns scalars for 0-d results

    def __repr__(self) -> str:  # what Hypothesis prints for a falsifying example
        return f"T({self.value.dtype.name}{list(self.value.shape)}, {self.layout})"


@dataclass(frozen=True)
class Index:
    """A basic index for ``x[...]``: ints, slices, None and Ellipsis."""

    items: tuple[Any, ...]


@dataclass
class Sample:
    """One call of an operator: positional and keyword arguments (tensors as ``T``)."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)

    def tensors(self) -> list[T]:
        """Every tensor argument, in order (lists flattened)."""
        found: list[T] = []

        def walk(x: Any) -> None:
            if isinstance(x, T):
                found.append(x)
            elif isinstance(x, (list, tuple)):
                for item in x:
                    walk(item)

        walk(self.args)
        walk(tuple(self.kwargs.values()))
        return found

    def differentiable(self) -> list[T]:
        return [t for t in self.tensors() if t.grad]


class Draw:
    """Draws the parts of a sample inside a Hypothesis test (``data`` from ``st.data()``)."""

    def __init__(self, data: st.DataObject) -> None:
        self._data = data
        self.rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))

    def __call__(self, strategy: st.SearchStrategy) -> Any:
        return self._data.draw(strategy)

    def pick(self, options: Any) -> Any:
        return self(st.sampled_from(list(options)))

    def integer(self, low: int, high: int) -> int:
        return self(st.integers(low, high))

    def flag(self) -> bool:
        return self(st.booleans())

    # ----- shapes ---------------------------------------------------------------------
    def shape(self, min_dims: int = 0, max_dims: int = 3, max_side: int = 4,
              empty: bool = False, min_side: int = 1) -> tuple[int, ...]:
        """A shape; with ``empty``, sometimes one dim of size 0 (where torch allows it)."""
        ndim = self.integer(min_dims, max_dims)
        shape = [self.integer(min_side, max_side) for _ in range(ndim)]
        if empty and ndim and self.integer(0, 7) == 0:
            shape[self.integer(0, ndim - 1)] = 0
        return tuple(shape)

    def broadcastable(self, n: int = 2, max_dims: int = 3, max_side: int = 4,
                      empty: bool = False) -> list[tuple[int, ...]]:
        """``n`` shapes that broadcast together: each keeps a suffix of a common shape,
        with some dims set to 1."""
        full = self.shape(0, max_dims, max_side, empty)
        shapes = []
        for _ in range(n):
            drop = self.integer(0, len(full))
            shapes.append(tuple(1 if self.integer(0, 3) == 0 else s for s in full[drop:]))
        return shapes

    def dims(self, ndim: int, allow_none: bool = True) -> Any:
        """A ``dim`` argument: None (all), one dim (maybe negative) or a tuple of dims."""
        kinds = ["int", "tuple"] if ndim else ["int"]
        kind = self.pick((["none"] if allow_none else []) + kinds)
        if kind == "none":
            return None
        bound = max(ndim, 1)
        if kind == "int":
            return self.integer(-bound, bound - 1)
        chosen = [d for d in range(ndim) if self.flag()] or [0]
        return tuple(d - ndim if self.flag() else d for d in chosen)

    # ----- values ---------------------------------------------------------------------
    def uniform(self, shape: tuple[int, ...], dtype: np.dtype, low: float = -2.0,
                high: float = 2.0) -> np.ndarray:
        return np.asarray(self.rng.uniform(low, high, shape), dtype=dtype)

    def nonzero(self, shape: tuple[int, ...], dtype: np.dtype, low: float = 0.5,
                high: float = 2.0) -> np.ndarray:
        """Magnitudes in [low, high] with random signs."""
        signs = self.rng.choice([-1.0, 1.0], shape)
        return np.asarray(signs * self.rng.uniform(low, high, shape), dtype=dtype)

    def among(self, shape: tuple[int, ...], dtype: np.dtype, values: Any,
              force: float | None = None) -> np.ndarray:
        """Values from a small set: ties and exact kink points on purpose; ``force`` is
        put at one random position, so the kink is always there."""
        out = self.rng.choice(np.asarray(values, dtype=np.float64), shape)
        if force is not None and out.size:
            out.flat[self.rng.integers(out.size)] = force
        return np.asarray(out, dtype=dtype)

    def tensor(self, value: np.ndarray, grad: bool = True, layout: str | None = None) -> T:
        """A tensor argument with a drawn layout (or the one given)."""
        if layout is None:
            layout = self.pick(layouts_for(np.shape(value)))
        return T(value, grad, layout)

    def special_values(self, sample: Sample, kinds: Any = tuple(SPECIALS)) -> str | None:
        """Put special values into the floating point inputs of ``sample`` (in place):
        NaN, +-inf, -0.0, all of them, or a slice of all -inf (a hyperplane of one
        input: for a reduction or softmax over any other dim, whole slices of -inf).
        ``kinds``: those to draw from. Returns the kind (a key of SPECIALS), or None when
        no input has elements."""
        floats = [t for t in sample.tensors() if is_float(t.value.dtype) and t.value.size]
        if not floats:
            return None
        kind = self.pick(list(kinds))
        chosen = [t for t in floats if self.flag()] or [floats[self.integer(0, len(floats) - 1)]]
        for t in chosen:
            value = t.value.astype(np.float64)
            flat = value.reshape(-1)
            if kind == "neg_inf_slice":
                if value.ndim and self.flag():
                    axis = self.integer(0, value.ndim - 1)
                    index = [slice(None)] * value.ndim
                    index[axis] = self.integer(0, value.shape[axis] - 1)
                    value[tuple(index)] = -np.inf
                else:
                    value[...] = -np.inf
            else:
                pool = {"nan": [np.nan], "inf": [np.inf, -np.inf], "neg_zero": [-0.0],
                        "mixed": [np.nan, np.inf, -np.inf, -0.0]}[kind]
                hit = self.rng.random(flat.size) < 0.3
                hit[self.rng.integers(flat.size)] = True
                flat[hit] = self.rng.choice(pool, int(hit.sum()))
            t.value = value.astype(t.value.dtype)
        return kind
