"""Layer specs (see ``graders.probes._layers``): a layer's constructor arguments, the
parameter values both sides are given, inputs and an incoming gradient.

Shapes and options come from Hypothesis; values from a NumPy generator it seeds.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

DTYPES = (np.float32, np.float64)


def spread_rows(x: np.ndarray, row_size: int) -> np.ndarray:
    """``x`` with the largest value of every row of ``row_size`` trailing elements raised
    by 1 and the smallest lowered by 1: no row is nearly constant, where LayerNorm's
    gradient is ill-conditioned (1 / std amplifies float32 rounding). Rows of one element
    stay as they are (their variance is exactly 0, a well-defined case)."""
    rows = np.array(x, dtype=np.float64).reshape(-1, row_size)
    if row_size > 1 and rows.size:
        at = np.arange(len(rows))
        low, high = rows.argmin(axis=1), rows.argmax(axis=1)
        rows[at, low] -= 1.0
        rows[at, high] += 1.0
    return rows.reshape(np.shape(x))


def _batch(draw: Any, max_dims: int = 2) -> tuple[int, ...]:
    return tuple(draw(st.lists(st.integers(1, 3), max_size=max_dims)))


def _finish(rng: np.random.Generator, spec: dict[str, Any], out_shape: tuple[int, ...],
            dtype: Any) -> dict[str, Any]:
    spec["grad_output"] = rng.uniform(-1.0, 1.0, out_shape).astype(dtype)
    return spec


@st.composite
def linear_specs(draw: Any) -> dict[str, Any]:
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from(DTYPES))
    n_in, n_out, bias = draw(st.integers(1, 5)), draw(st.integers(1, 5)), draw(st.booleans())
    batch = _batch(draw)
    params = {"weight": rng.uniform(-1, 1, (n_out, n_in)).astype(dtype)}
    if bias:
        params["bias"] = rng.uniform(-1, 1, (n_out,)).astype(dtype)
    spec = {"kind": "Linear", "args": [n_in, n_out], "kwargs": {"bias": bias},
            "params": params, "inputs": [rng.uniform(-2, 2, (*batch, n_in)).astype(dtype)],
            "grads": [True]}
    return _finish(rng, spec, (*batch, n_out), dtype)


@st.composite
def embedding_specs(draw: Any) -> dict[str, Any]:
    """Indices repeat on purpose (the gradient rows must add up); sometimes a padding
    row, given as a negative index now and then."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from(DTYPES))
    num, dim = draw(st.integers(1, 6)), draw(st.integers(1, 4))
    kwargs = {}
    if draw(st.booleans()):
        kwargs["padding_idx"] = draw(st.integers(-num, num - 1))
    shape = _batch(draw, max_dims=2)
    spec = {"kind": "Embedding", "args": [num, dim], "kwargs": kwargs,
            "params": {"weight": rng.uniform(-1, 1, (num, dim)).astype(dtype)},
            "inputs": [rng.integers(0, num, shape).astype(np.int64)], "grads": [False]}
    return _finish(rng, spec, (*shape, dim), dtype)


@st.composite
def layer_norm_specs(draw: Any) -> dict[str, Any]:
    """normalized_shape as an int or a tuple; with or without elementwise_affine and
    bias; default or other eps. Parameters get random values (not ones and zeros)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from(DTYPES))
    normalized = tuple(draw(st.lists(st.integers(2, 5), min_size=1, max_size=2)))
    shape_arg: Any = normalized[0] if len(normalized) == 1 and draw(st.booleans()) \
        else list(normalized)
    kwargs: dict[str, Any] = {}
    affine = draw(st.booleans())
    if not affine:
        kwargs["elementwise_affine"] = False
    bias = draw(st.booleans())
    if not bias:
        kwargs["bias"] = False
    if draw(st.booleans()):
        kwargs["eps"] = draw(st.sampled_from([1e-3, 0.1]))
    params = {}
    if affine:
        params["weight"] = rng.uniform(0.5, 1.5, normalized).astype(dtype)
        if bias:
            params["bias"] = rng.uniform(-0.5, 0.5, normalized).astype(dtype)
    batch = _batch(draw)
    x = rng.uniform(-2, 2, (*batch, *normalized)) * rng.choice([1.0, 4.0])
    x = spread_rows(x, int(np.prod(normalized)))
    spec = {"kind": "LayerNorm", "args": [shape_arg], "kwargs": kwargs, "params": params,
            "inputs": [x.astype(dtype)], "grads": [True]}
    return _finish(rng, spec, (*batch, *normalized), dtype)


# (kind, constructor options): each option that changes the function gets its own case
ACTIVATIONS = [("ReLU", {}), ("LeakyReLU", {}), ("LeakyReLU", {"negative_slope": 0.2}),
               ("GELU", {}), ("GELU", {"approximate": "tanh"}), ("Tanh", {}), ("Sigmoid", {}),
               ("Hardtanh", {}), ("Hardtanh", {"min_val": -0.5, "max_val": 2.0}),
               ("Softmax", {"dim": "any"}), ("LogSoftmax", {"dim": "any"})]


@st.composite
def activation_specs(draw: Any, kind: str, options: dict[str, Any]) -> dict[str, Any]:
    """An input of 1 to 3 dims for ``nn.<kind>(**options)``; ``dim="any"`` is drawn
    (any valid dim, negative ones included)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from(DTYPES))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    kwargs = dict(options)
    if kwargs.get("dim") == "any":
        kwargs["dim"] = draw(st.integers(-len(shape), len(shape) - 1))
    values = rng.uniform(-3, 3, shape)
    values[np.abs(values) < 1e-3] = 0.5  # keep away from kinks (tested in task 2.6)
    spec = {"kind": kind, "kwargs": kwargs, "inputs": [values.astype(dtype)], "grads": [True]}
    return _finish(rng, spec, shape, dtype)


# (kind, the option every example uses)
LOSSES = [("MSELoss", ""), ("CrossEntropyLoss", ""), ("CrossEntropyLoss", "ignore_index"),
          ("CrossEntropyLoss", "label_smoothing")]


@st.composite
def loss_specs(draw: Any, kind: str, feature: str = "") -> dict[str, Any]:
    """MSELoss with every reduction; CrossEntropyLoss on (N, C) or (N, C, d) logits with
    every reduction, plus ``feature``: ignore_index (0, 1 or -1; the first sample's
    targets ignored) or label_smoothing."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from(DTYPES))
    kwargs: dict[str, Any] = {}
    if draw(st.booleans()):
        kwargs["reduction"] = draw(st.sampled_from(["mean", "sum", "none"]))
    if kind == "MSELoss":
        shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
        inputs = [rng.uniform(-2, 2, shape).astype(dtype), rng.uniform(-2, 2, shape).astype(dtype)]
        grads = [True, draw(st.booleans())]
        out_shape = shape
    else:
        n, classes = draw(st.integers(1, 4)), draw(st.integers(2, 5))
        extra = (draw(st.integers(1, 3)),) if draw(st.booleans()) else ()
        target = rng.integers(0, classes, (n, *extra))
        if feature == "ignore_index":
            kwargs["ignore_index"] = draw(st.sampled_from([0, 1, -1]))
            if n > 1:
                target[0] = kwargs["ignore_index"]
        if feature == "label_smoothing":
            kwargs["label_smoothing"] = draw(st.sampled_from([0.1, 0.4]))
        inputs = [rng.uniform(-3, 3, (n, classes, *extra)).astype(dtype), target.astype(np.int64)]
        grads = [True, False]
        out_shape = (n, *extra)
    if kwargs.get("reduction", "mean") != "none":
        out_shape = ()
    spec = {"kind": kind, "kwargs": kwargs, "inputs": inputs, "grads": grads}
    return _finish(rng, spec, out_shape, dtype)
