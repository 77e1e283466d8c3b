"""Optimizer runs: hyperparameters, parameter groups and gradient sequences.

Values are float32, or float64 in half the random runs (the optimizer state must follow
the parameters' dtype). Gradient entries stay within [-10, 10] (but for a NaN entry now
and then: the values axis) and parameters within [-30, 30], so the rounding differences
between a NumPy implementation and torch's kernels stay far below the comparison
tolerance (see the optimizer tests).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from ..suites._seed import case_rng

SHAPES = [(), (3,), (2, 3)]


def state_dtype_inputs(*key: Any) -> dict[str, list[float]]:
    """The parameter's four values and the two gradients' values of ``optim.state_dtypes``
    (a linspace and 0.5, -0.25 at grading seed 0), drawn from the grading seed."""
    from ..suites._seed import grading_seed

    if grading_seed() == 0:
        return {"param": [float(v) for v in np.linspace(-1.0, 1.0, 4)], "grads": [0.5, -0.25]}
    rng = case_rng(0, "optim state_dtypes", *key)
    return {"param": [float(v) for v in rng.uniform(-1, 1, 4).round(3)],
            "grads": [float(v) for v in rng.uniform(-1, 1, 2).round(3)]}


def _array(rng: np.random.Generator, shape: tuple[int, ...], scale: float) -> np.ndarray:
    return np.clip(rng.standard_normal(shape) * scale, -10, 10).astype(np.float32)


def _maybe(draw: Any, value: Any, strategy: Any) -> Any:
    """``value`` (the default-like choice) or a drawn one, half the time each."""
    return value if draw(st.booleans()) else draw(strategy)


@st.composite
def sgd_options(draw: Any) -> dict[str, Any]:
    momentum = _maybe(draw, 0.0, st.floats(0.1, 0.95))
    nesterov = momentum > 0 and draw(st.booleans())
    return {
        "lr": draw(st.floats(1e-3, 1.0)),
        "momentum": momentum,
        "dampening": 0.0 if nesterov else _maybe(draw, 0.0, st.floats(0.1, 0.9)),
        "weight_decay": _maybe(draw, 0.0, st.floats(1e-3, 0.5)),
        "nesterov": nesterov,
        "maximize": draw(st.booleans()),
    }


@st.composite
def adam_options(draw: Any, adamw: bool = False) -> dict[str, Any]:
    return {
        "lr": draw(st.floats(1e-4, 0.1)),
        "betas": (_maybe(draw, 0.9, st.floats(0.0, 0.99)),
                  _maybe(draw, 0.999, st.floats(0.9, 0.9999))),
        "eps": _maybe(draw, 1e-8, st.floats(1e-8, 1e-2)),
        "weight_decay": _maybe(draw, 1e-2 if adamw else 0.0, st.floats(1e-3, 0.5)),
        "amsgrad": draw(st.booleans()),
        "maximize": draw(st.booleans()),
    }


OPTIONS = {"SGD": sgd_options(), "Adam": adam_options(), "AdamW": adam_options(adamw=True)}


@st.composite
def runs(draw: Any, kind: str, max_steps: int = 6) -> dict[str, Any]:
    """``{"kind", "options", "groups", "grads"}``: one or two parameter groups (the second
    with its own hyperparameters half the time) and a gradient per parameter per step,
    None now and then (that parameter is skipped at that step)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    options = draw(OPTIONS[kind])
    groups = []
    shapes = []
    for g in range(draw(st.integers(1, 2))):
        group_shapes = draw(st.lists(st.sampled_from(SHAPES), min_size=1, max_size=2))
        shapes.extend(group_shapes)
        scale = 10 ** rng.uniform(-1, 0.5)
        group: dict[str, Any] = {"params": [_array(rng, s, scale) for s in group_shapes]}
        if g and draw(st.booleans()):
            group["options"] = draw(OPTIONS[kind])
        groups.append(group)
    grad_scale = 10 ** rng.uniform(-2, 0.5)
    grads = [[None if rng.random() < 0.15 else _array(rng, s, grad_scale) for s in shapes]
             for _ in range(draw(st.integers(1, max_steps)))]
    # the values axis: now and then one gradient entry is NaN at a drawn step (torch
    # propagates it into the state and the parameter; max_exp_avg_sq too). Infinities are
    # left out: after one, Adam's moments are inf in the textbook form and NaN in torch's
    # lerp form (both correct), and the parameter is NaN either way.
    if draw(st.integers(0, 3)) == 0:
        k = draw(st.integers(0, len(grads) - 1))
        present = [i for i, g in enumerate(grads[k]) if g is not None]
        if present:
            i = draw(st.sampled_from(present))
            special = grads[k][i].copy()
            flat = special.reshape(-1)
            flat[draw(st.integers(0, flat.size - 1))] = np.nan
            grads[k][i] = special
    if draw(st.booleans()):  # float64 parameters and gradients
        groups = [{**g, "params": [p.astype(np.float64) for p in g["params"]]} for g in groups]
        grads = [[None if g is None else g.astype(np.float64) for g in step] for step in grads]
    return {"kind": kind, "options": options, "groups": groups, "grads": grads}


def fixed_run(kind: str, options: dict[str, Any], steps: int = 5, seed: int = 0,
              special: float | None = None) -> dict[str, Any]:
    """A run with two parameters, its values drawn from the grading seed (``seed`` at
    grading seed 0); the second parameter has no gradient at step 2. ``special`` (NaN or
    an infinity): the second entry of the second parameter's gradient at step 2 (after a
    finite first step, so a state that ignored it would still hold finite values)."""
    rng = case_rng(seed, "optim fixed_run", kind, sorted(options.items()), steps)
    shapes = [(3,), (2, 3)]
    grads = [[_array(rng, s, 1.0) for s in shapes] for _ in range(steps)]
    grads[min(2, steps - 1)][1] = None
    if special is not None:
        grads[min(1, steps - 1)][1].reshape(-1)[1] = special
    return {"kind": kind, "options": options,
            "groups": [{"params": [_array(rng, s, 1.0) for s in shapes]}], "grads": grads}
