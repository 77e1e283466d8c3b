"""Task 6.1: the vector add with a masked tail, bias + GELU forward and backward."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..oracle import cuda as oracle
from ..strategies.cuda import Values, laid, matrix_layout, poke, tile, wrapper_layout
from .spec import (
    Buffer,
    Case,
    Expect,
    KernelInfo,
    Launch,
    Ptr,
    Stride,
    WrapperInfo,
    cdiv,
)

ADD_BLOCK = 64
BLOCK_M, BLOCK_N = 16, 32


def _add(v: Values, dtype: str, n: int | None = None) -> Case:
    n = v.integer(1, 300) if n is None else n
    block = tile(v, "BLOCK_SIZE", (ADD_BLOCK, 32, 128))
    x = v.normal("x", (n,), dtype)
    y = v.normal("y", (n,), dtype)
    special = v.flag()
    if special:  # NaN and +-inf propagate; -0.0 + -0.0 is -0.0
        for value, fraction in ((np.nan, 0.1), (np.inf, 0.05), (-np.inf, 0.05), (-0.0, 0.1)):
            poke(v, "x", x, value, fraction)
        poke(v, "y", y, -0.0, 0.2)
    launch = Launch(
        buffers={"x": Buffer(x), "y": Buffer(y), "out": Buffer(np.empty(n, dtype), output=True)},
        args=[Ptr("x"), Ptr("y"), Ptr("out"), n], constexprs={"BLOCK_SIZE": block},
        grid=(cdiv(n, block),))
    with np.errstate(invalid="ignore"):
        out = oracle.n(oracle.t(x) + oracle.t(y), dtype)
    expected = {"out": Expect(out, signed_zeros=True)}
    what = (f"n_elements={n} (BLOCK_SIZE={block}), {dtype}"
            + (", with NaN, +-inf and -0.0 entries" if special else ""))
    return Case(launch, expected, what, v, dtype)


def _add_sized(n: int) -> Any:
    return lambda v, dtype: _add(v, dtype, n)


def _gelu_shape(v: Values, rows: int | None, cols: int | None) -> tuple[int, int]:
    return (v.integer(1, 40) if rows is None else rows, v.integer(1, 80) if cols is None else cols)


def _tiles(v: Values) -> tuple[int, int]:
    """BLOCK_M and BLOCK_N drawn each on its own (the first pair at a hand-picked case)."""
    return tile(v, "BLOCK_M", (BLOCK_M, 8, 32)), tile(v, "BLOCK_N", (BLOCK_N, 16, 64))


def _bias_gelu(v: Values, dtype: str, rows: int | None = None, cols: int | None = None) -> Case:
    rows, cols = _gelu_shape(v, rows, cols)
    tanh = v.flag()
    x_layout, y_layout = matrix_layout(v), matrix_layout(v)
    block_m, block_n = _tiles(v)
    x = v.normal("x", (rows, cols), dtype, 2.0)
    b = v.normal("b", (cols,), dtype)
    nan = v.flag()
    if nan:  # NaN propagates (torch: gelu(NaN) is NaN)
        poke(v, "x", x, np.nan, 0.1)
    launch = Launch(
        buffers={"x": Buffer(x, x_layout), "b": Buffer(b),
                 "y": Buffer(np.empty((rows, cols), dtype), y_layout, output=True)},
        args=[Ptr("x"), Ptr("b"), Ptr("y"), rows, cols, Stride("x", 0), Stride("x", 1),
              Stride("y", 0), Stride("y", 1)],
        constexprs={"TANH": tanh, "BLOCK_M": block_m, "BLOCK_N": block_n},
        grid=(cdiv(rows, block_m), cdiv(cols, block_n)))
    expected = {"y": Expect(oracle.n(oracle.bias_gelu(x, b, tanh), dtype))}
    what = (f"x {rows}x{cols} ({x_layout}), y ({y_layout}), {dtype}, TANH={tanh}, "
            f"BLOCK_M={block_m}, BLOCK_N={block_n}" + (", with NaN entries in x" if nan else ""))
    return Case(launch, expected, what, v, dtype)


def _bias_gelu_backward(v: Values, dtype: str, rows: int | None = None,
                        cols: int | None = None) -> Case:
    rows, cols = _gelu_shape(v, rows, cols)
    tanh = v.flag()
    x_layout, dy_layout, dx_layout = matrix_layout(v), matrix_layout(v), matrix_layout(v)
    block_m, block_n = _tiles(v)
    x = v.normal("x", (rows, cols), dtype, 2.0)
    b = v.normal("b", (cols,), dtype)
    dy = v.normal("dy", (rows, cols), dtype)
    tiles = cdiv(rows, block_m)
    launch = Launch(
        buffers={"x": Buffer(x, x_layout), "b": Buffer(b), "dy": Buffer(dy, dy_layout),
                 "dx": Buffer(np.empty((rows, cols), dtype), dx_layout, output=True),
                 "db_partial": Buffer(np.empty((tiles, cols), np.float32), output=True)},
        args=[Ptr("x"), Ptr("b"), Ptr("dy"), Ptr("dx"), Ptr("db_partial"), rows, cols,
              Stride("x", 0), Stride("x", 1), Stride("dy", 0), Stride("dy", 1),
              Stride("dx", 0), Stride("dx", 1)],
        constexprs={"TANH": tanh, "BLOCK_M": block_m, "BLOCK_N": block_n},
        grid=(tiles, cdiv(cols, block_n)))
    dx = oracle.bias_gelu_backward(x, b, dy, tanh)
    partial = oracle.tile_sums(dx, block_m)
    expected = {
        "dx": Expect(oracle.n(dx, dtype)),
        # sums of up to BLOCK_M float32 terms: a few units of float32 rounding
        "db_partial": Expect(oracle.n(partial, "float32"), rtol=1e-5, atol=1e-5),
    }
    what = (f"x {rows}x{cols} ({x_layout}), dy ({dy_layout}), dx ({dx_layout}), {dtype}, "
            f"TANH={tanh}, BLOCK_M={block_m}, BLOCK_N={block_n}")
    return Case(launch, expected, what, v, dtype)


def _sized(fn: Any, rows: int, cols: int) -> Any:
    return lambda v, dtype: fn(v, dtype, rows, cols)


KERNELS = [
    KernelInfo(
        name="add_kernel", module="elementwise", task="6.1",
        params=("x_ptr", "y_ptr", "out_ptr", "n_elements", "BLOCK_SIZE"),
        case=_add, examples=5,
        edges=(("one element", _add_sized(1)), ("exactly one tile", _add_sized(ADD_BLOCK)),
               ("a tail of one", _add_sized(ADD_BLOCK + 1))),
        compile_constexprs={"BLOCK_SIZE": 1024},
    ),
    KernelInfo(
        name="bias_gelu_kernel", module="elementwise", task="6.1",
        params=("x_ptr", "b_ptr", "y_ptr", "n_rows", "n_cols", "stride_xr", "stride_xc",
                "stride_yr", "stride_yc", "TANH", "BLOCK_M", "BLOCK_N"),
        case=_bias_gelu, examples=6,
        edges=(("1x1", _sized(_bias_gelu, 1, 1)), ("tails in both dims",
                                                   _sized(_bias_gelu, BLOCK_M + 1, BLOCK_N + 3))),
        compile_constexprs={"TANH": True, "BLOCK_M": 16, "BLOCK_N": 64},
        compile_dtypes=("float16",),
    ),
    KernelInfo(
        name="bias_gelu_backward_kernel", module="elementwise", task="6.1",
        params=("x_ptr", "b_ptr", "dy_ptr", "dx_ptr", "db_partial_ptr", "n_rows", "n_cols",
                "stride_xr", "stride_xc", "stride_dyr", "stride_dyc", "stride_dxr",
                "stride_dxc", "TANH", "BLOCK_M", "BLOCK_N"),
        case=_bias_gelu_backward, examples=6,
        edges=(("1x1", _sized(_bias_gelu_backward, 1, 1)),
               ("tails in both dims", _sized(_bias_gelu_backward, 2 * BLOCK_M + 5, BLOCK_N + 1))),
        pointer_types={"db_partial_ptr": "*fp32"},
        compile_constexprs={"TANH": False, "BLOCK_M": 16, "BLOCK_N": 64},
        compile_dtypes=("float16",),
    ),
]


# ----- the wrappers ------------------------------------------------------------------------
def _wrap_add(v: Values) -> tuple[list[Any], dict[str, Any], list[Expect], str]:
    dtype = v.pick(("float32", "float16"))
    shape = (v.integer(1, 3000),) if v.flag() else (v.integer(1, 30), v.integer(1, 40))
    layouts = wrapper_layout(v, len(shape)), wrapper_layout(v, len(shape))
    x, y = v.normal("x", shape, dtype), v.normal("y", shape, dtype)
    return [laid(x, layouts[0]), laid(y, layouts[1])], {}, \
        [Expect(oracle.n(oracle.t(x) + oracle.t(y), dtype))], \
        f"x {shape} ({layouts[0]}), y ({layouts[1]}), {dtype}"


def _wrap_bias_gelu(v: Values) -> tuple[list[Any], dict[str, Any], list[Expect], str]:
    dtype = v.pick(("float32", "float16"))
    shape = (v.integer(1, 3), v.integer(1, 20), v.integer(1, 70))
    approximate = v.pick(("none", "tanh"))
    layouts = wrapper_layout(v, 3), wrapper_layout(v, 1)
    x, b = v.normal("x", shape, dtype, 2.0), v.normal("b", shape[-1:], dtype)
    expected = oracle.n(oracle.bias_gelu(x, b, approximate == "tanh"), dtype)
    return [laid(x, layouts[0]), laid(b, layouts[1])], {"approximate": approximate}, \
        [Expect(expected)], \
        f"x {shape} ({layouts[0]}), bias {shape[-1:]} ({layouts[1]}), {dtype}, " \
        f"approximate={approximate!r}"


def _wrap_bias_gelu_backward(v: Values) -> tuple[list[Any], dict[str, Any], list[Expect], str]:
    dtype = v.pick(("float32", "float16"))
    rows, cols = v.integer(1, 50), v.integer(1, 70)
    approximate = v.pick(("none", "tanh"))
    layouts = wrapper_layout(v, 2), wrapper_layout(v, 1), wrapper_layout(v, 2)
    x, b = v.normal("x", (rows, cols), dtype, 2.0), v.normal("b", (cols,), dtype)
    dy = v.normal("dy", (rows, cols), dtype)
    dx = oracle.bias_gelu_backward(x, b, dy, approximate == "tanh")
    # the bias gradient sums `rows` float32 terms (float16: rounded once at the end)
    sums = (1e-5, 1e-5) if dtype == "float32" else (None, None)
    return [laid(x, layouts[0]), laid(b, layouts[1]), laid(dy, layouts[2])], \
        {"approximate": approximate}, \
        [Expect(oracle.n(dx, dtype)), Expect(oracle.n(dx.sum(0), dtype), *sums)], \
        f"x {rows}x{cols} ({layouts[0]}), bias ({layouts[1]}), grad ({layouts[2]}), " \
        f"{dtype}, approximate={approximate!r}"


WRAPPERS = [
    WrapperInfo("add", "elementwise", "6.1", _wrap_add, ("elementwise.add_kernel",)),
    WrapperInfo("bias_gelu", "elementwise", "6.1", _wrap_bias_gelu,
                ("elementwise.bias_gelu_kernel",)),
    WrapperInfo("bias_gelu_backward", "elementwise", "6.1", _wrap_bias_gelu_backward,
                ("elementwise.bias_gelu_backward_kernel",)),
]

__all__ = ["KERNELS", "WRAPPERS"]
