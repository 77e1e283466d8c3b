"""Data-loading cases and validation-loss curves for the early-stopping rule."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import strategies as st

# moves relative to the best value so far (for mode "min"; mirrored for "max")
MOVES = ["improve", "improve", "boundary", "within_delta", "tie", "worse", "worse", "nan"]


@st.composite
def early_stopping_cases(draw: Any) -> tuple[list[float], dict[str, Any]]:
    """A validation curve and EarlyStopping options. The curve is built from moves against
    the running best: clear improvements, values exactly ``best - min_delta`` (not an
    improvement: the rule is strict), values within min_delta of the best, ties, worse
    values and NaN."""
    options: dict[str, Any] = {"patience": draw(st.integers(1, 5))}
    min_delta = draw(st.sampled_from([0.0, 0.0, 0.01, 0.125]))
    if min_delta or draw(st.booleans()):
        options["min_delta"] = min_delta
    mode = draw(st.sampled_from(["min", "min", "max"]))
    if mode == "max" or draw(st.booleans()):
        options["mode"] = mode
    sign = 1.0 if mode == "min" else -1.0
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    values: list[float] = []
    best = math.inf
    for _ in range(draw(st.integers(1, 25))):
        move = draw(st.sampled_from(MOVES)) if values else "improve"
        if move == "improve":
            v = (best - min_delta - float(rng.uniform(0.01, 0.5))) if values else float(
                rng.uniform(1.0, 3.0))
        elif move == "boundary":
            v = best - min_delta
        elif move == "within_delta":
            v = best - min_delta * float(rng.uniform(0.0, 1.0))
        elif move == "tie":
            v = best
        elif move == "worse":
            v = best + float(rng.uniform(0.0, 0.5))
        else:
            v = math.nan
        if not math.isnan(v) and v < best - min_delta:
            best = v
        values.append(sign * v)
    return values, options
