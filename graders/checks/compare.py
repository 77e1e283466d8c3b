"""assert_close and friends: torch.testing's closeness rule with a readable report."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..harness.errors import NotImplementedInSubmission, ProbeOutcome, SubmissionImportError

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


def literal(value: Any) -> str:
    """A Python literal for an array (for reproducer snippets)."""
    array = np.asarray(value)
    text = np.array2string(array, separator=", ", precision=17, floatmode="unique",
                           threshold=10_000, max_line_width=10_000)
    return text.replace("\n", "")


def _fmt(x: Any) -> str:
    if isinstance(x, (float, np.floating)):
        return f"{float(x):.8g}"
    return repr(x.item() if isinstance(x, np.generic) else x)


def _footer(case: str | None, reproducer: str | None) -> str:
    parts = []
    if case:
        parts.append("  case: " + "\n".join(case.strip("\n").splitlines()).replace("\n", "\n    "))
    if reproducer:
        body = "\n".join("    " + line for line in reproducer.strip().splitlines())
        parts.append("  reproduce:\n" + body)
    return ("\n" + "\n".join(parts)) if parts else ""


@contextmanager
def running_example(case: str | Callable[[], str] | None,
                    reproducer: str | Callable[[], str] | None = None) -> Iterator[None]:
    """Probe calls made inside carry this example: when the submission raises (or hangs,
    or crashes) the result shows the case and reproducer, as a wrong value's does. Either
    may be a function, called only then. An unfinished stub (NotImplementedError) and a
    submission that does not import need no example."""
    try:
        yield
    except ProbeOutcome as exc:
        if (not isinstance(exc, (NotImplementedInSubmission, SubmissionImportError))
                and not exc.example):
            case, reproducer = (x() if callable(x) else x for x in (case, reproducer))
            exc.example = _footer(case, reproducer).lstrip("\n")
        raise


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
        raise AssertionError(f"{what}: expected an array, got {_kind(got)}{footer}")
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


def _kind(x: Any) -> str:
    if isinstance(x, bool):
        return "a bool"
    if isinstance(x, (int, float, np.number)):
        return "a number"
    if isinstance(x, str):
        return "a string"
    if isinstance(x, np.ndarray):
        return f"an array of shape {tuple(x.shape)}"
    if isinstance(x, (list, tuple)):
        return f"a sequence of {len(x)}"
    if isinstance(x, dict):
        return f"a mapping with keys {sorted(x)}"
    return f"a {type(x).__module__}.{type(x).__qualname__}" if x is not None else "None"


def assert_conforms(got: Any, expected: Any, *, what: str = "the observation") -> None:
    """Fail unless ``got`` has the structure of ``expected`` before any value is compared:
    sequences of the same length (lists and tuples alike), mappings with at least the
    expected keys, arrays of the same shape, bools, numbers and strings where those are
    expected. ``None`` in ``expected`` accepts anything (the comparison that follows
    decides). An empty or short answer from the worker can then never pass vacuously."""

    def walk(g: Any, e: Any, path: str) -> None:
        where = f"{what}{path}"
        if e is None:
            return
        if isinstance(e, dict):
            if not isinstance(g, dict):
                raise AssertionError(f"{where}: malformed answer: got {_kind(g)}, "
                                     f"expected {_kind(e)}")
            missing = [k for k in e if k not in g]
            if missing:
                raise AssertionError(f"{where}: malformed answer: keys {missing} are missing")
            for key, value in e.items():
                walk(g[key], value, f"{path}[{key!r}]")
        elif isinstance(e, (list, tuple)):
            if not isinstance(g, (list, tuple)) or len(g) != len(e):
                raise AssertionError(f"{where}: malformed answer: got {_kind(g)}, "
                                     f"expected {_kind(e)}")
            for i, (gi, ei) in enumerate(zip(g, e)):
                walk(gi, ei, f"{path}[{i}]")
        elif isinstance(e, np.ndarray):
            if not isinstance(g, np.ndarray) or g.shape != e.shape:
                raise AssertionError(f"{where}: got {_kind(g)}, expected {_kind(e)}")
        elif isinstance(e, bool):
            if not isinstance(g, (bool, np.bool_)):
                raise AssertionError(f"{where}: malformed answer: got {_kind(g)}, expected a bool")
        elif isinstance(e, (int, float, np.number)):
            if isinstance(g, (bool, np.bool_)) or not isinstance(g, (int, float, np.number)):
                raise AssertionError(f"{where}: malformed answer: got {_kind(g)}, "
                                     "expected a number")
        elif isinstance(e, str) and not isinstance(g, str):
            raise AssertionError(f"{where}: malformed answer: got {_kind(g)}, expected a string")

    walk(got, expected, "")
