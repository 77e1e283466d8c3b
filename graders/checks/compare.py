"""assert_close and friends: torch.testing's closeness rule with a readable report."""

from __future__ import annotations

from typing import Any

import numpy as np

# torch.testing.assert_close defaults (rtol, atol) per dtype
TOLERANCES: dict[str, tuple[float, float]] = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
}


def tolerance(dtype: str) -> tuple[float, float]:
    """(rtol, atol) for a dtype name; exact for integer and bool dtypes."""
    return TOLERANCES.get(dtype, (0.0, 0.0))


def _numeric(dtype: np.dtype) -> bool:
    return dtype.kind in "fiub" or dtype.name == "bfloat16"  # bfloat16's kind is "V"


def _fmt(x: Any) -> str:
    if isinstance(x, (float, np.floating)):
        return f"{float(x):.8g}"
    return repr(x.item() if isinstance(x, np.generic) else x)


def _footer(case: str | None, reproducer: str | None) -> str:
    parts = []
    if case:
        parts.append(f"  case: {case}")
    if reproducer:
        body = "\n".join("    " + line for line in reproducer.strip().splitlines())
        parts.append("  reproduce:\n" + body)
    return ("\n" + "\n".join(parts)) if parts else ""


def assert_close(
    got: Any,
    expected: Any,
    *,
    what: str,
    rtol: float | None = None,
    atol: float | None = None,
    check_dtype: bool = True,
    case: str | None = None,
    reproducer: str | None = None,
    against: str = "PyTorch",
) -> None:
    """Fail unless ``got`` matches ``expected`` as torch.testing.assert_close would:
    same shape (and dtype), NaN where NaN, ``|got - expected| <= atol + rtol * |expected|``.
    ``against`` names where ``expected`` comes from, for the message."""
    footer = _footer(case, reproducer)
    if expected is None or got is None:
        if expected is None and got is None:
            return
        raise AssertionError(
            f"{what}: expected {'None' if expected is None else 'a tensor'}, "
            f"got {'None' if got is None else 'a tensor'}{footer}"
        )
    if not isinstance(got, np.ndarray):
        raise AssertionError(f"{what}: expected an array, got {type(got).__name__}{footer}")
    expected = np.asarray(expected)
    if got.shape != expected.shape:
        raise AssertionError(
            f"{what}: shape {got.shape} but {against} gives {expected.shape}{footer}"
        )
    if check_dtype and got.dtype != expected.dtype:
        raise AssertionError(
            f"{what}: dtype {got.dtype} but {against} gives {expected.dtype}{footer}"
        )
    default_rtol, default_atol = tolerance(expected.dtype.name)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    g = got.astype(np.float64) if _numeric(got.dtype) else got
    e = expected.astype(np.float64) if _numeric(expected.dtype) else expected
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(g - e)
        allowed = atol + rtol * np.abs(e)
        same_nonfinite = (np.isnan(g) & np.isnan(e)) | ((g == e) & ~np.isfinite(e))
        bad = ~((diff <= allowed) | same_nonfinite)
    if not bad.any():
        return
    # worst element: largest excess over the allowed difference (NaN mismatches first)
    excess = np.where(np.isnan(diff), np.inf, diff - allowed)
    excess = np.where(bad, excess, -np.inf)
    idx = np.unravel_index(int(np.argmax(excess)), bad.shape) if bad.ndim else ()
    where = f" at index {tuple(int(i) for i in idx)}" if bad.ndim else ""
    raise AssertionError(
        f"{what}: {int(bad.sum())} of {bad.size} elements differ from {against}\n"
        f"  worst{where}: got {_fmt(g[idx])}, expected {_fmt(e[idx])} "
        f"(|diff| {_fmt(diff[idx])} > tolerance {_fmt(allowed[idx])} = "
        f"atol {atol:g} + rtol {rtol:g} * |expected|)"
        f"{footer}"
    )


def assert_equal(got: Any, expected: Any, *, what: str, case: str | None = None,
                 reproducer: str | None = None) -> None:
    """Fail unless ``got == expected`` (plain values: flags, lists, dtype names)."""
    if got != expected:
        raise AssertionError(
            f"{what}: got {got!r}, expected {expected!r}{_footer(case, reproducer)}"
        )


def assert_raises_like(
    observed: dict[str, Any],
    exc_type: str | None,
    *,
    what: str,
    contains: tuple[str, ...] = (),
    case: str | None = None,
    reproducer: str | None = None,
) -> None:
    """``observed`` is a probe's ``raised()`` record. With ``exc_type`` None nothing may
    be raised; otherwise that type, with each of ``contains`` in the message (PyTorch's
    wording, compared case-insensitively)."""
    footer = _footer(case, reproducer)
    got_type, message = observed.get("type"), observed.get("message", "")
    if exc_type is None:
        if got_type is not None:
            raise AssertionError(f"{what}: PyTorch raises nothing here, but got "
                                 f"{got_type}: {message}{footer}")
        return
    if got_type is None:
        raise AssertionError(f"{what}: PyTorch raises {exc_type} here; nothing was raised"
                             f"{footer}")
    if got_type != exc_type:
        raise AssertionError(f"{what}: PyTorch raises {exc_type}; got {got_type}: {message}"
                             f"{footer}")
    missing = [c for c in contains if c.lower() not in message.lower()]
    if missing:
        raise AssertionError(
            f"{what}: the {exc_type} message should say {missing[0]!r} (as PyTorch's does); "
            f"got: {message}{footer}"
        )
