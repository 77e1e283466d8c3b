"""Turning submission objects into plain observations."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def type_name(x: Any) -> str:
    """A type named with its module (``numpy.float64``, ``tinytrain.tensor.Tensor``; a
    builtin by its name alone): ``Tensor`` alone could be anyone's."""
    kind = type(x)
    module = getattr(kind, "__module__", "") or ""
    name = getattr(kind, "__qualname__", kind.__name__)
    return name if module == "builtins" else f"{module}.{name}"


def not_a_tensor(x: Any) -> TypeError:
    """The error for a value that should have been a tinytrain Tensor (one whose ``.data``
    is a NumPy array) and is not."""
    data = getattr(x, "data", None)
    holder = not isinstance(x, (np.generic, np.ndarray, memoryview)) and hasattr(x, "data")
    if holder:
        return TypeError(f"expected a tinytrain Tensor whose .data is a numpy.ndarray, got a "
                         f"{type_name(x)} whose .data is a {type_name(data)}")
    return TypeError(f"expected a tinytrain Tensor, got a {type_name(x)}")


def array(tensor: Any) -> np.ndarray:
    """The values of a submission tensor, copied out."""
    data = getattr(tensor, "data", None)
    if not isinstance(data, np.ndarray):
        raise not_a_tensor(tensor)
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
