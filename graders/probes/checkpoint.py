"""Probes for assignment 3.4: activation checkpointing (``tt.utils.checkpoint``)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from . import probe
from ._functions import apply, functions
from ._observe import array, grad, raised


@probe
def segment(tt: Any, x: np.ndarray, k: float) -> dict[str, Any]:
    """checkpoint(segment, x, k, b) with segment(a, scale, b) = ((a * w).sin() * scale,
    (b * a).exp()), w a parameter used from outside; loss = y1.sum() + 2 * y2.sum()."""
    fns = functions(tt)
    xt = tt.tensor(x, requires_grad=True)
    w = tt.tensor(np.linspace(0.5, 1.5, x.shape[-1]), requires_grad=True)
    b = tt.tensor(x[::-1].copy(), requires_grad=True)
    seen = {"calls": 0, "recorded": []}

    def seg(a: Any, scale: float, b: Any) -> Any:
        seen["calls"] += 1
        first = apply(fns, "torch_mul", [a, w])
        seen["recorded"].append(first.grad_fn is not None)
        y1 = apply(fns, "scale", [apply(fns, "sin", [first]), scale])
        return y1, apply(fns, "exp", [apply(fns, "torch_mul", [b, a])])

    y1, y2 = tt.utils.checkpoint.checkpoint(seg, xt, k, b)
    loss = apply(fns, "add", [apply(fns, "sum", [y1]),
                              apply(fns, "scale", [apply(fns, "sum", [y2]), 2.0])])
    loss.backward()
    return {"outputs": [array(y1), array(y2)], "grads": [grad(xt), grad(w), grad(b)],
            "calls": seen["calls"], "recorded_in_forward": seen["recorded"][0]}


@probe
def random_segment(tt: Any) -> dict[str, Any]:
    """A segment that multiplies by a random mask (like dropout), with and without
    checkpoint, from the same seed."""
    fns = functions(tt)
    out: dict[str, Any] = {}
    for name in ("checkpoint", "plain"):
        tt.manual_seed(1234)
        x = tt.tensor(np.linspace(1.0, 2.0, 16), requires_grad=True)
        masks: list[np.ndarray] = []

        def seg(a: Any, masks: list[np.ndarray] = masks) -> Any:
            mask = (tt.rand(16).data > 0.5).astype(np.float64)
            masks.append(mask)
            return apply(fns, "torch_mul", [a, tt.tensor(mask)])

        y = tt.utils.checkpoint.checkpoint(seg, x) if name == "checkpoint" else seg(x)
        apply(fns, "sum", [y]).backward()
        if name == "checkpoint":
            out["grad"], out["mask"] = grad(x), masks[0]
            out["next_draw"] = array(tt.rand(3))
        else:
            out["next_draw_plain"] = array(tt.rand(3))
    return out


@probe
def no_grad_inputs(tt: Any) -> dict[str, Any]:
    """checkpoint without inputs that require grad, under no_grad, with bad kwargs."""
    fns = functions(tt)
    w = tt.tensor(np.array([1.0, 2.0]), requires_grad=True)
    c = tt.tensor(np.array([3.0, 4.0]))

    def seg(t: Any) -> Any:
        return apply(fns, "torch_mul", [t, w])

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = tt.utils.checkpoint.checkpoint(seg, c)
    x = tt.tensor(np.array([1.0, 2.0]), requires_grad=True)
    with tt.no_grad():
        z = tt.utils.checkpoint.checkpoint(seg, x)
    return {
        "requires_grad": bool(y.requires_grad),
        "warned": any("None of the inputs have requires_grad=True" in str(w.message)
                      for w in caught),
        "no_grad_requires_grad": bool(z.requires_grad),
        "kwargs": raised(lambda: tt.utils.checkpoint.checkpoint(seg, x, unknown=1)),
    }
