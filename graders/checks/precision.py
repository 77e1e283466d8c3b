"""Comparing low-precision (float16/bfloat16) results with PyTorch's.

PyTorch's low-precision kernels compute in float32 and round once, but its composite ops
and backward formulas round intermediate values too (``rsqrt``'s gradient is
``-0.5 * grad * result**3`` with ``result**3`` rounded first; ``log_softmax`` rounds
``x - max``). So torch's own result sits some distance from the float32 result on the
same inputs, and an implementation that rounds less is as correct as torch, if not more.
The rule here, for each element:

    |got - torch| <= atol + rtol * |torch| + |torch - float32| (+ slack for gradients)

where (rtol, atol) are torch.testing.assert_close's defaults for the dtype and
``float32`` is torch's float32 result on the same inputs, rounded once to the dtype.
Where one of torch and float32 overflowed to inf (or gave NaN), matching either is right.
Where torch rounds once, this is assert_close itself; elsewhere the allowance is torch's
own distance from the float32 result. It also bounds the distance from the float32
result: ``|got - float32| <= 2 |torch - float32| + atol + rtol * |torch|``.

Gradients get a slack of ``GRAD_ULPS`` units of rounding at the gradient's largest
magnitude: backward formulas read saved low-precision values (a rounded output), whose
rounding error they amplify (``result**3``: three times) and where gradient terms cancel
(softmax's ``grad - sum(grad * y)``) the error is relative to the terms, not the result.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..oracle.precision import EPS
from .compare import _fmt, _footer, tolerance

GRAD_ULPS = 4


def assert_low_precision_close(got: Any, torch_value: np.ndarray, float32_value: np.ndarray,
                               *, what: str, gradient: bool = False, case: str | None = None,
                               reproducer: str | None = None) -> None:
    """Fail unless ``got`` (same dtype and shape as ``torch_value``) is within the rule
    above."""
    footer = _footer(case, reproducer)
    if got is None or not isinstance(got, np.ndarray):
        raise AssertionError(f"{what}: expected an array, got {type(got).__name__}{footer}")
    if got.shape != torch_value.shape:
        raise AssertionError(f"{what}: shape {got.shape} but PyTorch gives "
                             f"{torch_value.shape}{footer}")
    if got.dtype != torch_value.dtype:
        raise AssertionError(f"{what}: dtype {got.dtype} but PyTorch gives "
                             f"{torch_value.dtype}{footer}")
    name = torch_value.dtype.name
    if name not in EPS:  # integer outputs (indices): exact
        if not np.array_equal(got, torch_value):
            raise AssertionError(f"{what}: {got!r} but PyTorch gives {torch_value!r}{footer}")
        return
    g, e, f = (np.asarray(a).astype(np.float64) for a in (got, torch_value, float32_value))
    rtol, atol = tolerance(name)
    with np.errstate(invalid="ignore", over="ignore"):
        spread = np.where(np.isfinite(e) & np.isfinite(f), np.abs(e - f), 0.0)
        slack = 0.0
        if gradient and e.size:
            finite = np.abs(e[np.isfinite(e)])
            slack = GRAD_ULPS * EPS[name] * (float(finite.max()) if finite.size else 0.0)
        allowed = atol + rtol * np.abs(e) + spread + slack
        diff = np.abs(g - e)
        both = np.isfinite(e) & np.isfinite(f)
        ok = both & np.isfinite(g) & (diff <= allowed)
        ok |= (g == e) | (np.isnan(g) & np.isnan(e))
        # where torch or the float32 result is inf/NaN (an overflow), either one is right
        ok |= ~both & ((g == f) | (np.isnan(g) & np.isnan(f)))
        ok |= ~both & np.isfinite(g) & np.isfinite(e) & (diff <= atol + rtol * np.abs(e))
        ok |= ~both & np.isfinite(g) & np.isfinite(f) & (
            np.abs(g - f) <= atol + rtol * np.abs(f))
        bad = ~ok
    if not bad.any():
        return
    excess = np.where(np.isnan(diff), np.inf, diff - allowed)
    excess = np.where(bad, excess, -np.inf)
    idx = np.unravel_index(int(np.argmax(excess)), bad.shape) if bad.ndim else ()
    where = f" at index {tuple(int(i) for i in idx)}" if bad.ndim else ""
    extra = f" + {GRAD_ULPS} * eps * max|grad| {_fmt(slack)}" if gradient else ""
    raise AssertionError(
        f"{what}: {int(bad.sum())} of {bad.size} elements differ from PyTorch ({name})\n"
        f"  worst{where}: got {_fmt(g[idx])}, PyTorch {_fmt(e[idx])}, float32 result "
        f"rounded to {name} {_fmt(f[idx])}\n"
        f"  allowed |got - PyTorch| <= atol {atol:g} + rtol {rtol:g} * |PyTorch| + "
        f"|PyTorch - float32|{extra} = {_fmt(allowed[idx])}"
        f"{footer}"
    )
