"""Probes for assignment 3.4: activation checkpointing (``tt.utils.checkpoint``)."""

from __future__ import annotations

import contextlib
import warnings
from typing import Any

import numpy as np

from . import probe
from ._functions import apply, functions
from ._observe import array, grad, raised


@probe
def segment(tt: Any, x: np.ndarray, k: float, no_grad_backward: bool = False) -> dict[str, Any]:
    """checkpoint(segment, x, k, b) with segment(a, scale, b) = ((a * w).sin() * scale,
    (b * a).exp()), w a parameter used from outside; the gradients of loss = y1.sum() + 2
    * y2.sum(), the checkpoint's backward called inside ``tt.no_grad()`` when
    ``no_grad_backward``: x.grad and b.grad as it returns them, w.grad as the
    recomputation's backward accumulated it."""
    fns = functions(tt)
    xt = tt.tensor(x, requires_grad=True)
    w = tt.tensor(np.linspace(0.5, 1.5, x.shape[-1]), requires_grad=True)
    b = tt.tensor(x[::-1].copy(), requires_grad=True)
    seen: dict[str, Any] = {"calls": 0, "recorded": [], "grad_mode": []}

    def seg(a: Any, scale: float, b: Any) -> Any:
        seen["calls"] += 1
        seen["grad_mode"].append(bool(tt.is_grad_enabled()))
        first = apply(fns, "torch_mul", [a, w])
        seen["recorded"].append(first.grad_fn is not None)
        y1 = apply(fns, "scale", [apply(fns, "sin", [first]), scale])
        return y1, apply(fns, "exp", [apply(fns, "torch_mul", [b, a])])

    y1, y2 = tt.utils.checkpoint.checkpoint(seg, xt, k, b)
    # The checkpoint's node is called directly with the gradients of y1 and y2 (as the
    # engine would for loss = y1.sum() + 2 * y2.sum()): which output an edge points at is
    # task 1.1's business, not this one's.
    node = y1.grad_fn
    incoming = [np.ones(y1.data.shape), np.full(y2.data.shape, 2.0)]
    with tt.no_grad() if no_grad_backward else contextlib.nullcontext():
        returned = list(node._run_backward(incoming))
    returned += [None] * (5 - len(returned))  # (function, preserve_rng_state, x, k, b)
    as_array = [None if g is None else np.array(getattr(g, "data", g), copy=True)
                for g in returned]
    return {"outputs": [array(y1), array(y2)], "grads": [as_array[2], grad(w), as_array[4]],
            "calls": seen["calls"], "recorded_in_forward": seen["recorded"][0],
            "grad_mode": seen["grad_mode"]}


RANDOM_SEED = 1234


@probe
def random_segment(tt: Any, between: int = 0, preserve: bool = True,
                   seed: int = RANDOM_SEED) -> dict[str, Any]:
    """A segment that multiplies by a random mask drawn with ``tt.rand`` (like dropout),
    run under checkpoint from ``tt.manual_seed(seed)`` (the grader's); ``between`` numbers are
    drawn after the forward and before backward; ``preserve`` is passed as
    ``preserve_rng_state``. Returns every mask the segment drew (in order), x.grad, what
    was drawn in between and the next draw after backward."""
    fns = functions(tt)
    tt.manual_seed(seed)
    x = tt.tensor(np.linspace(1.0, 2.0, 16), requires_grad=True)
    masks: list[np.ndarray] = []

    def seg(a: Any) -> Any:
        mask = (tt.rand(16, dtype=tt.float64).data > 0.5).astype(np.float64)
        masks.append(mask)
        return apply(fns, "torch_mul", [a, tt.tensor(mask)])

    y = tt.utils.checkpoint.checkpoint(seg, x, preserve_rng_state=preserve)
    drawn = array(tt.rand(between, dtype=tt.float64)) if between else np.zeros(0)
    apply(fns, "sum", [y]).backward()
    return {"masks": masks, "grad": grad(x), "between": drawn,
            "next_draw": array(tt.rand(3, dtype=tt.float64))}


@probe
def no_grad_inputs(tt: Any, values: Any = None) -> dict[str, Any]:
    """checkpoint without inputs that require grad, under no_grad, with bad kwargs
    (``values``: w's, c's and x's two values each, the grader's; 1, 2, 3, 4, 1, 2 by
    default)."""
    fns = functions(tt)
    values = [1.0, 2.0, 3.0, 4.0, 1.0, 2.0] if values is None else [float(v) for v in values]
    w = tt.tensor(np.array(values[:2]), requires_grad=True)
    c = tt.tensor(np.array(values[2:4]))

    def seg(t: Any) -> Any:
        return apply(fns, "torch_mul", [t, w])

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = tt.utils.checkpoint.checkpoint(seg, c)
    x = tt.tensor(np.array(values[4:]), requires_grad=True)
    with tt.no_grad():
        z = tt.utils.checkpoint.checkpoint(seg, x)
    return {
        "requires_grad": bool(y.requires_grad),
        "warned": any("None of the inputs have requires_grad=True" in str(w.message)
                      for w in caught),
        "no_grad_requires_grad": bool(z.requires_grad),
        "kwargs": raised(lambda: tt.utils.checkpoint.checkpoint(seg, x, unknown=1)),
    }


@probe
def raising_segment(tt: Any, x: Any, where: str, seed: int = RANDOM_SEED) -> dict[str, Any]:
    """A checkpointed segment that draws with ``tt.rand`` and raises KeyError in the
    forward (``where`` "forward") or only when backward recomputes it ("recompute"), with
    preserve_rng_state. Reports the error the caller got, [is_grad_enabled,
    is_inference_mode_enabled] after it, whether the generator was put back (the next draw
    after the failed backward is the first draw after ``tt.manual_seed(seed)``; True when
    the forward raised, before backward), and x2.grad
    of a next checkpoint(sin, x2) and backward."""
    fns = functions(tt)
    calls: list[int] = []

    def seg(a: Any) -> Any:
        calls.append(1)
        mask = tt.rand(*a.shape, dtype=tt.float64)
        if len(calls) == (1 if where == "forward" else 2):
            raise KeyError("boom")
        return apply(fns, "torch_mul", [apply(fns, "sin", [a]), mask])

    xt = tt.tensor(np.asarray(x, np.float64), requires_grad=True)
    seeded: list[bool] = []

    def run() -> None:
        y = tt.utils.checkpoint.checkpoint(seg, xt, preserve_rng_state=True)
        tt.manual_seed(seed)
        seeded.append(True)
        apply(fns, "sum", [y]).backward()

    error = raised(run)
    modes = [bool(tt.is_grad_enabled()), bool(tt.is_inference_mode_enabled())]
    after = array(tt.rand(3, dtype=tt.float64))
    tt.manual_seed(seed)
    fresh = array(tt.rand(3, dtype=tt.float64))
    x2 = tt.tensor(np.asarray(x, np.float64), requires_grad=True)
    again = raised(lambda: apply(fns, "sum", [tt.utils.checkpoint.checkpoint(
        lambda a: apply(fns, "sin", [a]), x2)]).backward())
    return {"error": error, "modes": modes, "calls": len(calls),
            "rng_put_back": not seeded or bool(np.array_equal(after, fresh)), "again": again,
            "x_grad": grad(x2)}
