"""The bit patterns of assignment 6's grader-owned memory, shared by the worker's probes
and the grader's checks (pure NumPy).

- ``UNWRITTEN``: what an output holds before the kernel runs: a quiet NaN with a payload
  no arithmetic produces, so an element still holding it was never stored, and a NaN the
  kernel did store (other bits) is told apart from it.
- ``UNDEFINED``: what a masked-out lane of a load without ``other`` reads, and what the
  guard regions hold: a signalling NaN with 0xA5 in its payload (0xA5 bytes for
  integers). Arithmetic on it gives a NaN that keeps the 0xA5 payload bits, so a stored
  NaN that carries them comes from an undefined lane.
"""

from __future__ import annotations

import numpy as np

UNWRITTEN = {2: 0x7E5D, 4: 0x7FC0D15D, 8: 0x7FF80D15D15D15D}  # by itemsize (float16/32/64)
UNWRITTEN_BF16 = 0x7FDD
UNDEFINED = {2: 0x7DA5, 4: 0x7FA5A5A5, 8: 0x7FF4A5A5A5A5A5A5}
UNDEFINED_BF16 = 0x7FA5
# the payload bits below the quiet bit, as quieting and float16 <-> float32 conversions
# leave them: from a float32 pattern, from a float16 one
_PAYLOAD = {2: (0x01FF, (0x012D, 0x01A5)), 4: (0x003FFFFF, (0x0025A5A5, 0x0034A000)),
            8: (0x0007FFFFFFFFFFFF, (0x0004A5A5A5A5A5A5,))}


def is_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f" or dtype.name == "bfloat16"


def _pattern(dtype: np.dtype, table: dict[int, int], bf16: int) -> np.ndarray:
    value = bf16 if dtype.name == "bfloat16" else table[dtype.itemsize]
    return np.array([value], dtype=f"<u{dtype.itemsize}").view(dtype)


def unwritten(dtype: np.dtype) -> np.ndarray:
    """One element of the output fill (floats only)."""
    return _pattern(np.dtype(dtype), UNWRITTEN, UNWRITTEN_BF16)


def undefined(dtype: np.dtype) -> np.ndarray:
    """One element of the guard / undefined-lane pattern."""
    dtype = np.dtype(dtype)
    if is_float(dtype) and dtype.itemsize in UNDEFINED:
        return _pattern(dtype, UNDEFINED, UNDEFINED_BF16)
    return np.frombuffer(bytes([0xA5]) * dtype.itemsize, dtype)


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(f"<u{a.dtype.itemsize}")


def never_written(a: np.ndarray) -> np.ndarray:
    """Elements of a float output still holding the fill."""
    if not is_float(a.dtype) or a.dtype.itemsize not in UNWRITTEN:
        return np.zeros(a.shape, bool)
    return _bits(a) == _bits(unwritten(a.dtype))[0]


def from_undefined_lanes(a: np.ndarray) -> np.ndarray:
    """NaN elements whose payload carries the undefined-lane pattern: computed from a
    masked-out lane of a load without ``other``."""
    if not is_float(a.dtype) or a.dtype.itemsize not in _PAYLOAD or a.dtype.name == "bfloat16":
        return np.zeros(a.shape, bool)
    mask, wanted = _PAYLOAD[a.dtype.itemsize]
    with np.errstate(invalid="ignore"):
        nan = np.isnan(a.astype(np.float64))
    payload = _bits(a).astype(np.uint64) & np.uint64(mask)
    return nan & np.isin(payload, np.array(wanted, np.uint64))
