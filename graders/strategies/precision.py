"""Inputs for task 4.1's graders: values that probe float16's and bfloat16's edges (near
float16's maximum 65504, around its smallest subnormal 2**-24, rounding ties, signed
zeros, inf and NaN, float64 values that round differently through float32) mixed with
ordinary ones."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

FLOATS = ("float16", "bfloat16", "float32", "float64")
LOW = ("float16", "bfloat16")

# float16: max 65504, the next value would be 65536, so 65520 is the rounding midpoint;
# smallest subnormal 2**-24 (values below 2**-25 round to 0). bfloat16: max ~3.39e38,
# 8 bits of precision (1 + 2**-8 is a tie), float32's exponent range. torch converts
# float64 to float16/bfloat16 through float32: 1 + 2**-11 + 2**-40 rounds to 1 that way
# (the float32 step lands on the tie), to 1 + 2**-10 directly.
DOUBLE_ROUNDING = [1 + 2.0**-11 + 2.0**-40, -(1 + 2.0**-8 + 2.0**-40)]
EDGES = [0.0, -0.0, 1.0, -1.0, 65504.0, 65519.0, 65520.0, -65520.0, 65536.0, 70000.0, 1e5,
         2.0**-24, 2.0**-25, 1.5 * 2.0**-25, 3e-8, 1e-8, 6.1e-5, 1 + 2.0**-11, 1 + 3 * 2.0**-11,
         1 + 2.0**-8, 1 + 3 * 2.0**-8, 3.3895e38, 3.4e38, 1e-39, 1e-45, np.inf, -np.inf,
         np.nan, *DOUBLE_ROUNDING]


@st.composite
def edge_values(draw: Any, shape: tuple[int, ...] = (12,)) -> np.ndarray:
    """float64 values: some from EDGES, the rest log-uniform magnitudes over float16's and
    float32's ranges with random signs (drawn from a seeded NumPy generator)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1), label="seed"))
    n = int(np.prod(shape))
    magnitudes = 10.0 ** rng.uniform(-9, 6, n)
    values = magnitudes * rng.choice([-1.0, 1.0], n)
    edges = rng.random(n) < 0.4
    values[edges] = rng.choice(np.asarray(EDGES), int(edges.sum()))
    return values.reshape(shape)


@st.composite
def gradient_values(draw: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Incoming gradients: ordinary magnitudes and ones below float16's smallest subnormal
    (which must flush to zero in float16), some that round differently through float32,
    never inf or NaN."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1), label="grad seed"))
    n = int(np.prod(shape))
    values = 10.0 ** rng.uniform(-9, 3, n) * rng.choice([-1.0, 1.0], n)
    special = rng.random(n) < 0.15
    values[special] = rng.choice(np.asarray(DOUBLE_ROUNDING), int(special.sum()))
    return values.reshape(shape)
