"""Data types: PyTorch-named wrappers around NumPy dtypes, and type promotion.

``bfloat16`` comes from ml_dtypes (NumPy has no bfloat16): float32's 8-bit exponent with a
7-bit mantissa, so it has float32's range at a quarter of float16's precision. float16 has
a 10-bit mantissa but a 5-bit exponent: its largest value is 65504 and anything below
2**-24 (its smallest subnormal) rounds to zero.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np


class DType:
    """A tensor element type (``tt.float32`` ...), backed by a NumPy dtype."""

    __slots__ = ("_category", "is_floating_point", "itemsize", "name", "np")

    def __init__(self, name: str, np_dtype: np.dtype, category: int) -> None:
        self.name = name
        self.np = np.dtype(np_dtype)
        self.is_floating_point = category == 2
        self.itemsize = self.np.itemsize
        self._category = category  # 0 bool, 1 integer, 2 floating point

    def __repr__(self) -> str:
        return f"tinytrain.{self.name}"

    def __reduce__(self) -> str:
        return self.name


bool_ = DType("bool", np.bool_, 0)
uint8 = DType("uint8", np.uint8, 1)
int8 = DType("int8", np.int8, 1)
int16 = DType("int16", np.int16, 1)
int32 = DType("int32", np.int32, 1)
int64 = DType("int64", np.int64, 1)
float16 = DType("float16", np.float16, 2)
bfloat16 = DType("bfloat16", ml_dtypes.bfloat16, 2)
float32 = DType("float32", np.float32, 2)
float64 = DType("float64", np.float64, 2)

ALL_DTYPES: tuple[DType, ...] = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16,
                                 float32, float64)
_BY_NUMPY: dict[np.dtype, DType] = {d.np: d for d in ALL_DTYPES}
# NumPy dtypes of floating point tensors (bfloat16's NumPy kind is "V", not "f"), and of
# the low-precision ones, whose math runs in float32 (see ``Function.apply``)
FLOATING: frozenset[np.dtype] = frozenset(d.np for d in ALL_DTYPES if d.is_floating_point)
LOW_PRECISION: frozenset[np.dtype] = frozenset((float16.np, bfloat16.np))

_default_float = float32


def register_dtype(dtype: DType) -> None:
    """Make an extra dtype (bfloat16, from an extension) known to tinytrain."""
    _BY_NUMPY[dtype.np] = dtype


def from_numpy_dtype(np_dtype: np.dtype) -> DType:
    """The tinytrain dtype for a NumPy dtype; raises TypeError for unsupported ones."""
    try:
        return _BY_NUMPY[np.dtype(np_dtype)]
    except KeyError:
        raise TypeError(f"tinytrain does not support the NumPy dtype {np_dtype}") from None


def to_numpy_dtype(dtype: DType | np.dtype | type | str | None) -> np.dtype | None:
    """Accept a tinytrain dtype (or anything NumPy understands) and return the NumPy dtype."""
    if dtype is None:
        return None
    if isinstance(dtype, DType):
        return dtype.np
    return from_numpy_dtype(np.dtype(dtype)).np


def get_default_dtype() -> DType:
    """The dtype that Python floats become (float32 unless changed)."""
    return _default_float


def set_default_dtype(dtype: DType) -> None:
    """Set the dtype that Python floats become; must be a floating point type."""
    global _default_float
    if not dtype.is_floating_point:
        raise TypeError("only floating point types are supported as the default type")
    _default_float = dtype


def is_floating_point(np_dtype: np.dtype) -> bool:
    """Whether a NumPy dtype is one of tinytrain's floating point types (bfloat16 too)."""
    return np_dtype in FLOATING


def _promote_numpy(a: np.dtype, b: np.dtype) -> np.dtype:
    """PyTorch's promotion of two NumPy dtypes (see ``promote_types``)."""
    if a == b:
        return a
    cat_a, cat_b = _category(a), _category(b)
    if cat_a != cat_b:  # a floating type beats any integer, an integer beats bool
        return a if cat_a > cat_b else b
    if a in LOW_PRECISION and b in LOW_PRECISION:
        # HINT: neither float16 nor bfloat16 holds the other's values (range vs precision)
        raise NotImplementedError("task 4.1: Low precision: bfloat16, casts, promotion, float32 opmath")
    if a == bfloat16.np or b == bfloat16.np:  # bfloat16 with float32 or float64
        return b if a == bfloat16.np else a
    return np.promote_types(a, b)


def promote_types(type1: DType, type2: DType) -> DType:
    """The smallest dtype both ``type1`` and ``type2`` convert to without losing their
    category (``torch.promote_types``): NumPy's rules, except that a floating type beats
    any integer (int64 with float16 is float16, not float64), and float16 with bfloat16
    is float32."""
    return from_numpy_dtype(_promote_numpy(type1.np, type2.np))


def _scalar_category(value: object) -> int:
    if isinstance(value, (bool, np.bool_)):
        return 0
    if isinstance(value, (int, np.integer)):
        return 1
    return 2


def result_type(*operands: object) -> np.dtype:
    """PyTorch's type promotion over tensors and Python scalars.

    Tensors with dimensions outrank zero-dim tensors, which outrank Python scalars;
    a lower-priority operand only matters when its category (bool < int < float) is higher.
    """
    best: list[np.dtype | None] = [None, None, None]  # per priority: dims, zero-dim, scalar
    for op in operands:
        data = getattr(op, "data", None)
        if isinstance(data, np.ndarray):
            prio = 0 if data.ndim else 1
            dt = data.dtype
        else:
            prio = 2
            cat = _scalar_category(op)
            dt = (np.dtype(np.bool_), np.dtype(np.int64), _default_float.np)[cat]
        cur = best[prio]
        best[prio] = dt if cur is None else _promote_numpy(cur, dt)
    result: np.dtype | None = None
    for dt in best:
        if dt is None:
            continue
        if result is None or _category(dt) > _category(result):
            result = dt
    assert result is not None, "result_type needs at least one operand"
    return result


def _category(np_dtype: np.dtype) -> int:
    return from_numpy_dtype(np_dtype)._category
