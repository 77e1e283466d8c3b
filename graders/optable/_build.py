"""Small builders shared by the table modules: value domains and common sample shapes."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..strategies.ops import Draw, Sample, T

Values = Callable[[Draw, tuple[int, ...], np.dtype], np.ndarray]
KINK_MARGIN = 1e-3  # finite differences (eps 1e-6) stay this far from kinks


def uniform(low: float = -2.0, high: float = 2.0) -> Values:
    return lambda d, shape, dtype: d.uniform(shape, dtype, low, high)


def nonzero(low: float = 0.5, high: float = 2.0) -> Values:
    """Magnitudes in [low, high], either sign."""
    return lambda d, shape, dtype: d.nonzero(shape, dtype, low, high)


def among(*values: float, force: float | None = None) -> Values:
    """Values from a small set: exact zeros, ties and bounds on purpose (``force``: one
    element always takes that value)."""
    return lambda d, shape, dtype: d.among(shape, dtype, values, force)


SampleFn = Callable[[Draw, np.dtype], Sample]
DEFAULT_VALUES = uniform()  # uniform in [-2, 2]


def scalar_low_precision() -> dict[str, str]:
    """The exemption of an op with a Python number operand from the low-precision dtypes:
    a float16 or bfloat16 tensor with a number computes in float32 in task 4.1's block of
    ``apply_binary`` (graded by assignment 4's precision checks), not in the op's own
    task."""
    reason = ("a Python number with a float16/bfloat16 tensor computes through task 4.1's "
              "opmath block in apply_binary: graded in assignment 4, not here")
    return {"float16": reason, "bfloat16": reason}


def unary(values: Values = DEFAULT_VALUES, empty: bool = True, max_dims: int = 3,
          kwargs: Callable[[Draw], dict[str, Any]] | None = None) -> SampleFn:
    """One tensor of any shape (0-d, size-1 and, with ``empty``, empty dims)."""

    def sample(d: Draw, dtype: np.dtype) -> Sample:
        shape = d.shape(0, max_dims, empty=empty)
        return Sample((d.tensor(values(d, shape, dtype)),), kwargs(d) if kwargs else {})

    return sample


def binary(a: Values = DEFAULT_VALUES, b: Values = DEFAULT_VALUES, empty: bool = True
           ) -> SampleFn:
    """Two tensors whose shapes broadcast together."""

    def sample(d: Draw, dtype: np.dtype) -> Sample:
        sa, sb = d.broadcastable(2, empty=empty)
        return Sample((d.tensor(a(d, sa, dtype)), d.tensor(b(d, sb, dtype))))

    return sample


def tensor_arg(sample: Sample, i: int = 0) -> T:
    return sample.tensors()[i]


def close_to(values: np.ndarray, points: Any) -> bool:
    """Whether any value lies within KINK_MARGIN of any of ``points``."""
    values = np.asarray(values, dtype=np.float64)
    return any(bool(np.any(np.abs(values - p) < KINK_MARGIN)) for p in np.atleast_1d(points))


def near_zero(sample: Sample) -> bool:
    return close_to(tensor_arg(sample).value, 0.0)


def gap_to_runner_up(values: np.ndarray, axis: Any = None) -> float:
    """The smallest gap between the largest and second largest value of a slice (and
    the same for the smallest): small gaps make max/min kinks."""
    if values.size == 0:
        return np.inf
    v = np.asarray(values, dtype=np.float64)
    axes = tuple(range(v.ndim)) if axis is None else axis
    if not isinstance(axes, tuple):
        axes = (axes,)
    if not v.ndim:
        return np.inf
    axes = tuple(a % v.ndim for a in axes)
    rest = [a for a in range(v.ndim) if a not in axes]
    flat = np.transpose(v, rest + list(axes)).reshape(*[v.shape[a] for a in rest], -1)
    if flat.shape[-1] < 2:
        return np.inf
    s = np.sort(flat, axis=-1)
    return float(min(np.min(s[..., -1] - s[..., -2]), np.min(s[..., 1] - s[..., 0])))


def tie_extremes(x: np.ndarray, dims: Any, extreme: Callable[..., np.ndarray]) -> np.ndarray:
    """A copy of ``x`` in which every slice over ``dims`` (None: all dims) holds its
    extreme value twice: at ``extreme``'s index (np.argmax / np.argmin) and the next one."""
    if x.ndim == 0:
        return x
    if dims is None:
        dims = tuple(range(x.ndim))
    dims = tuple(sorted({d % x.ndim for d in ((dims,) if isinstance(dims, int) else dims)}))
    rest = [a for a in range(x.ndim) if a not in dims]
    order = rest + list(dims)
    moved = np.transpose(x, order).copy()
    slices = moved.reshape(-1, math.prod(x.shape[a] for a in dims))
    n = slices.shape[1]
    if n >= 2:
        rows = np.arange(slices.shape[0])
        at = extreme(slices, axis=1)
        slices[rows, (at + 1) % n] = slices[rows, at]
    return np.transpose(slices.reshape(moved.shape), np.argsort(order))


SPREAD = 1e3  # some logits this far below the rest: exp of the gap underflows to 0


def draw_logits(d: Draw, shape: tuple[int, ...], offset: float = 0.0) -> np.ndarray:
    """float64 logits in [-3, 3]; for a stability check (``offset``), around +offset or
    -offset (exp overflows or underflows unless the maximum is subtracted first), with
    about half of them SPREAD below the rest (the first one never, the last one always):
    their softmax underflows to 0 in float32 and float64, so a log-softmax written as
    log(softmax(x)) gives -inf where torch gives about -1e3."""
    value = d.uniform(shape, np.float64, -3.0, 3.0) + offset * d.pick([1.0, -1.0])
    if offset and value.size >= 2:
        low = d.rng.random(shape) < 0.5
        low.flat[0], low.flat[-1] = False, True
        value = value - SPREAD * low
    return value
