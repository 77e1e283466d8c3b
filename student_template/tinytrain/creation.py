"""Functions that make tensors: ``tensor``, ``zeros``, ``ones``, ``randn`` ..."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes
from .random import default_generator
from .tensor import Tensor

DTypeLike = Any


def _np_dtype(dtype: DTypeLike, default: np.dtype | None = None) -> np.dtype:
    resolved = dtypes.to_numpy_dtype(dtype)
    return resolved if resolved is not None else (default or dtypes.get_default_dtype().np)


def _shape(size: tuple[Any, ...]) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return tuple(size)


def _placed(t: Tensor, device: Any) -> Tensor:
    """``t`` made on ``device`` ("cpu", or "cuda": assignment 6's device; no copy)."""
    if device is None or str(device) == "cpu":
        return t
    from .cuda.device import parse_device  # imports triton: where it is missing, says so
    from .device_state import to_device_array

    if parse_device(device) != "cuda":
        raise RuntimeError(f"Expected one of cpu, cuda device type at start of device "
                           f"string: {device}")
    t.data = to_device_array(t.data)
    return t


def tensor(data: Any, dtype: DTypeLike = None, requires_grad: bool = False,
           device: Any = None) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, scalars, arrays, tensors).

    Python floats become the default dtype (float32), ints int64, bools bool; NumPy arrays
    keep their dtype.
    """
    if isinstance(data, Tensor):
        data = data.data
    if isinstance(data, (np.ndarray, np.generic)):
        array = np.array(data, dtype=dtypes.to_numpy_dtype(dtype), copy=True)
    else:
        array = np.array(data, dtype=dtypes.to_numpy_dtype(dtype))
        if dtype is None and array.dtype.kind == "f":
            array = array.astype(dtypes.get_default_dtype().np)
        elif dtype is None and array.dtype.kind in "iu":
            array = array.astype(np.int64)
    dtypes.from_numpy_dtype(array.dtype)  # rejects unsupported dtypes
    return _placed(Tensor(array, requires_grad=requires_grad), device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with ``array``."""
    dtypes.from_numpy_dtype(array.dtype)
    return Tensor(array)


def zeros(*size: Any, dtype: DTypeLike = None, requires_grad: bool = False,
          device: Any = None) -> Tensor:
    t = Tensor(np.zeros(_shape(size), _np_dtype(dtype)), requires_grad=requires_grad)
    return _placed(t, device)


def ones(*size: Any, dtype: DTypeLike = None, requires_grad: bool = False,
         device: Any = None) -> Tensor:
    t = Tensor(np.ones(_shape(size), _np_dtype(dtype)), requires_grad=requires_grad)
    return _placed(t, device)


def full(size: Any, fill_value: float, dtype: DTypeLike = None,
         requires_grad: bool = False, device: Any = None) -> Tensor:
    values = np.full(_shape((size,)), fill_value, _np_dtype(dtype))
    return _placed(Tensor(values, requires_grad=requires_grad), device)


def empty(*size: Any, dtype: DTypeLike = None, requires_grad: bool = False,
          device: Any = None) -> Tensor:
    return zeros(*size, dtype=dtype, requires_grad=requires_grad, device=device)


def zeros_like(t: Tensor, dtype: DTypeLike = None, requires_grad: bool = False,
               device: Any = None) -> Tensor:
    return zeros(t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad,
                 device=device or t.device)


def ones_like(t: Tensor, dtype: DTypeLike = None, requires_grad: bool = False,
              device: Any = None) -> Tensor:
    return ones(t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad,
                device=device or t.device)


def arange(start: float, end: float | None = None, step: float = 1,
           dtype: DTypeLike = None, device: Any = None) -> Tensor:
    if end is None:
        start, end = 0, start
    values = np.arange(start, end, step)
    if dtype is None:
        dtype = dtypes.get_default_dtype() if values.dtype.kind == "f" else dtypes.int64
    return _placed(Tensor(values.astype(_np_dtype(dtype))), device)


def rand(*size: Any, dtype: DTypeLike = None, requires_grad: bool = False,
         device: Any = None) -> Tensor:
    """Uniform samples in [0, 1) from the global generator."""
    values = default_generator().random(_shape(size)).astype(_np_dtype(dtype))
    return _placed(Tensor(values, requires_grad=requires_grad), device)


def randn(*size: Any, dtype: DTypeLike = None, requires_grad: bool = False,
          device: Any = None) -> Tensor:
    """Standard normal samples from the global generator."""
    values = default_generator().standard_normal(_shape(size)).astype(_np_dtype(dtype))
    return _placed(Tensor(values, requires_grad=requires_grad), device)


def randint(low: int, high: int, size: tuple[int, ...], dtype: DTypeLike = None,
            device: Any = None) -> Tensor:
    values = default_generator().integers(low, high, size)
    return _placed(Tensor(values.astype(_np_dtype(dtype, np.dtype(np.int64)))), device)
