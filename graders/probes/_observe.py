"""Turning submission objects into plain observations."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def array(tensor: Any) -> np.ndarray:
    """The values of a submission tensor, copied out."""
    data = getattr(tensor, "data", None)
    if not isinstance(data, np.ndarray):
        raise TypeError(f"expected a tinytrain Tensor, got {type(tensor).__name__}")
    return np.array(data, copy=True)


def grad(tensor: Any) -> np.ndarray | None:
    """The ``.grad`` of a leaf as an array, or None."""
    g = tensor._grad if hasattr(tensor, "_grad") else tensor.grad
    return None if g is None else array(g)


def raised(fn: Callable[[], Any]) -> dict[str, Any]:
    """Run ``fn`` and describe what it raised ({"type": None} when nothing).

    NotImplementedError propagates: an unfinished stub is not an observed error.
    """
    try:
        fn()
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001 - the exception is the observation
        return {"type": type(exc).__name__, "message": str(exc)[:2000]}
    return {"type": None, "message": ""}
