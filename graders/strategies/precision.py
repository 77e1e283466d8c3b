"""Inputs for the mixed-precision graders: values that probe float16's and bfloat16's
edges (near float16's maximum 65504, around its smallest subnormal 2**-24, rounding ties,
signed zeros, inf and NaN) mixed with ordinary ones, and region scripts for autocast."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

FLOATS = ("float16", "bfloat16", "float32", "float64")
LOW = ("float16", "bfloat16")

# float16: max 65504, the next value would be 65536, so 65520 is the rounding midpoint;
# smallest subnormal 2**-24 (values below 2**-25 round to 0). bfloat16: max ~3.39e38,
# 8 bits of precision (1 + 2**-8 is a tie), float32's exponent range.
EDGES = [0.0, -0.0, 1.0, -1.0, 65504.0, 65519.0, 65520.0, -65520.0, 65536.0, 70000.0, 1e5,
         2.0**-24, 2.0**-25, 1.5 * 2.0**-25, 3e-8, 1e-8, 6.1e-5, 1 + 2.0**-11, 1 + 3 * 2.0**-11,
         1 + 2.0**-8, 1 + 3 * 2.0**-8, 3.3895e38, 3.4e38, 1e-39, 1e-45, np.inf, -np.inf,
         np.nan]


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
    (which must flush to zero in float16), never inf or NaN."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1), label="grad seed"))
    n = int(np.prod(shape))
    magnitudes = 10.0 ** rng.uniform(-9, 3, n)
    return (magnitudes * rng.choice([-1.0, 1.0], n)).reshape(shape)


@st.composite
def region_scripts(draw: Any) -> list[list[Any]]:
    """Nested autocast regions (enabled or not, float16 or bfloat16, "cuda" or "cpu") with
    calls of each policy on float32/float16/bfloat16/float64 inputs and state queries
    between them; every region is exited, and a call follows the outermost exit."""
    script: list[list[Any]] = []
    depth = 0
    for _ in range(draw(st.integers(4, 14))):
        choices = ["call", "call", "state", "enter"] + (["exit"] if depth else [])
        if depth == 0:
            choices.append("decorated")
        kind = draw(st.sampled_from(choices))
        if kind == "enter":
            script.append(["enter", draw(_region_spec())])
            depth += 1
        elif kind == "exit":
            script.append(["exit"])
            depth -= 1
        elif kind == "state":
            script.append(["state"])
        else:
            call = [draw(st.sampled_from(["lower_precision", "fp32", "none"])),
                    draw(st.sampled_from(FLOATS))]
            script.append(["call", *call] if kind == "call" else
                          ["decorated", draw(_region_spec()), *call])
    script.extend([["exit"]] * depth)
    script.append(["call", "lower_precision", "float32"])
    return script


def _region_spec() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({
        "device": st.sampled_from(["cuda", "cpu"]),
        "enabled": st.booleans(),
    }, optional={"dtype": st.sampled_from(list(LOW))})
