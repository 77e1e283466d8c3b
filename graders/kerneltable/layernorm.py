"""Task 6.4: fused LayerNorm (forward, backward with partial dW/db, the reduction across
rows) and fused cross-entropy (loss and dlogits in one kernel)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..oracle import cuda as oracle
from ..strategies.cuda import (
    Seeded,
    Values,
    laid,
    matrix_layout,
    poke,
    tile,
    wrapper_layout,
)
from .spec import Buffer, Case, Expect, KernelInfo, Launch, Ptr, Stride, WrapperInfo, cdiv

ROWS_PER_PROGRAM = 4
DWDB_BLOCK_M, DWDB_BLOCK_N = 4, 16
CE_BLOCK_N = 16
ROW_LAYOUTS = ("contiguous", "padded")  # the LayerNorm kernels take rows of unit stride
# sums over up to a hundred float32 terms (means, variances, row reductions): a few units
# of float32 rounding at the scale of the terms
SUM_TOLERANCE = (1e-5, 1e-5)


def block_for(n: int) -> int:
    return max(16, 1 << (max(n, 1) - 1).bit_length())


def _ln_inputs(v: Values, dtype: str, rows: int, cols: int, shifts: tuple[float, ...] = (0.0, 5.0)
               ) -> tuple[np.ndarray, ...]:
    shift = v.pick(shifts)
    x = v.normal("x", (rows, cols), dtype, 2.0, shift)
    w = v.normal("w", (cols,), dtype, 1.0, 1.0)
    b = v.normal("b", (cols,), dtype)
    return x, w, b


def _layer_norm(v: Values, dtype: str, rows: int | None = None, cols: int | None = None,
                shift: float | None = None) -> Case:
    rows = v.integer(1, 20) if rows is None else rows
    cols = v.integer(1, 100) if cols is None else cols
    eps = v.pick((1e-5, 1e-3))
    x_layout, y_layout = v.pick(ROW_LAYOUTS), v.pick(ROW_LAYOUTS)
    # a mean of 100 against a spread of 2: var = mean(x^2) - mean^2 cancels catastrophically
    x, w, b = _ln_inputs(v, dtype, rows, cols, (0.0, 5.0, 100.0) if shift is None else (shift,))
    block = block_for(cols) * tile(v, "BLOCK_N", (1, 2))  # BLOCK_N >= n_cols, or twice that
    launch = Launch(
        buffers={"x": Buffer(x, x_layout), "w": Buffer(w), "b": Buffer(b),
                 "y": Buffer(np.empty((rows, cols), dtype), y_layout, output=True),
                 "mean": Buffer(np.empty(rows, np.float32), output=True),
                 "rstd": Buffer(np.empty(rows, np.float32), output=True)},
        args=[Ptr("x"), Ptr("w"), Ptr("b"), Ptr("y"), Ptr("mean"), Ptr("rstd"), rows, cols,
              Stride("x", 0), Stride("y", 0), eps],
        constexprs={"BLOCK_N": block}, grid=(rows,))
    y, mean, rstd = oracle.layer_norm(x, w, b, eps)
    # x - mean rounds at the scale of |x| (a few float32 units of |x|, in the kernel and in
    # torch), which rstd * w carries into y: the tolerance grows with the rows' offset
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    spread = float(np.abs(x64).max() * oracle.n(rstd).max() * np.abs(w64).max()) if x.size else 0.0
    atol = 1e-5 + 8 * 2.0**-24 * spread if dtype == "float32" else None
    expected = {"y": Expect(oracle.n(y, dtype), atol=atol),
                "mean": Expect(oracle.n(mean, "float32"), *SUM_TOLERANCE),
                "rstd": Expect(oracle.n(rstd, "float32"), *SUM_TOLERANCE)}
    what = (f"x {rows}x{cols} ({x_layout}, rows around {float(x64.mean()) if x.size else 0:.3g}),"
            f" y ({y_layout}), {dtype}, eps={eps}, BLOCK_N={block}")
    return Case(launch, expected, what, v, dtype)


def _layer_norm_backward(v: Values, dtype: str, rows: int | None = None,
                         cols: int | None = None) -> Case:
    rows = v.integer(1, 20) if rows is None else rows
    cols = v.integer(1, 100) if cols is None else cols
    eps = 1e-5
    x_layout, dy_layout, dx_layout = v.pick(ROW_LAYOUTS), v.pick(ROW_LAYOUTS), v.pick(ROW_LAYOUTS)
    per_program = tile(v, "ROWS_PER_PROGRAM", (ROWS_PER_PROGRAM, 3, 5))
    x, w, _ = _ln_inputs(v, dtype, rows, cols)
    dy = v.normal("dy", (rows, cols), dtype)
    _, mean, rstd = oracle.layer_norm(x, w, np.zeros_like(w), eps)
    mean, rstd = oracle.n(mean, "float32"), oracle.n(rstd, "float32")
    v.note("mean = x.astype(np.float64).mean(-1).astype(np.float32)  # torch's, float32")
    v.note("rstd = (1 / np.sqrt(x.astype(np.float64).var(-1) + 1e-5)).astype(np.float32)")
    programs = cdiv(rows, per_program)
    block = block_for(cols) * tile(v, "BLOCK_N", (1, 2))
    launch = Launch(
        buffers={"x": Buffer(x, x_layout), "w": Buffer(w), "mean": Buffer(mean),
                 "rstd": Buffer(rstd), "dy": Buffer(dy, dy_layout),
                 "dx": Buffer(np.empty((rows, cols), dtype), dx_layout, output=True),
                 "dw_partial": Buffer(np.empty((programs, cols), np.float32), output=True),
                 "db_partial": Buffer(np.empty((programs, cols), np.float32), output=True)},
        args=[Ptr("x"), Ptr("w"), Ptr("mean"), Ptr("rstd"), Ptr("dy"), Ptr("dx"),
              Ptr("dw_partial"), Ptr("db_partial"), rows, cols, Stride("x", 0),
              Stride("dy", 0), Stride("dx", 0)],
        constexprs={"ROWS_PER_PROGRAM": per_program, "BLOCK_N": block}, grid=(programs,))
    dx, _, _ = oracle.layer_norm_backward(x, w, np.zeros_like(w), dy, eps)
    dw_partial, db_partial = oracle.layer_norm_partials(x, dy, eps, per_program)
    # dx = rstd * (g - mean(g) - xhat * mean(g xhat)) cancels: its float32 rounding is a few
    # units at the scale of rstd * |w| * |dy|, not at the scale of dx. The cancellation is
    # in float32 for float16 buffers too (a row of one column: rstd = 1/sqrt(eps) = 316,
    # dx exactly 0, torch's float32 residue 1.5e-5 survives the rounding to float16)
    scale = float(rstd.max() * np.abs(w.astype(np.float64)).max()
                  * np.abs(dy.astype(np.float64)).max()) if rows * cols else 1.0
    atol = 1e-5 * max(1.0, scale)
    expected = {"dx": Expect(oracle.n(dx, dtype), atol=atol),
                "dw_partial": Expect(oracle.n(dw_partial, "float32"), *SUM_TOLERANCE),
                "db_partial": Expect(oracle.n(db_partial, "float32"), *SUM_TOLERANCE)}
    what = (f"x {rows}x{cols} ({x_layout}), dy ({dy_layout}), dx ({dx_layout}), {dtype}, "
            f"ROWS_PER_PROGRAM={per_program}, BLOCK_N={block}")
    return Case(launch, expected, what, v, dtype)


def _dwdb(v: Values, dtype: str, partials: int | None = None, cols: int | None = None) -> Case:
    partials = v.integer(1, 12) if partials is None else partials
    cols = v.integer(1, 70) if cols is None else cols
    dw_partial = v.normal("dw_partial", (partials, cols), "float32")
    db_partial = v.normal("db_partial", (partials, cols), "float32")
    block_m, block_n = tile(v, "BLOCK_M", (DWDB_BLOCK_M, 8, 2)), tile(v, "BLOCK_N", (DWDB_BLOCK_N, 32))
    launch = Launch(
        buffers={"dw_partial": Buffer(dw_partial), "db_partial": Buffer(db_partial),
                 "dw": Buffer(np.empty(cols, dtype), output=True),
                 "db": Buffer(np.empty(cols, dtype), output=True)},
        args=[Ptr("dw_partial"), Ptr("db_partial"), Ptr("dw"), Ptr("db"), partials, cols],
        constexprs={"BLOCK_M": block_m, "BLOCK_N": block_n},
        grid=(cdiv(cols, block_n),))
    tolerance = SUM_TOLERANCE if dtype == "float32" else (None, None)
    expected = {"dw": Expect(oracle.n(oracle.t(dw_partial).sum(0), dtype), *tolerance),
                "db": Expect(oracle.n(oracle.t(db_partial).sum(0), dtype), *tolerance)}
    what = (f"{partials} partial rows x {cols}, dw/db {dtype}, BLOCK_M={block_m}, "
            f"BLOCK_N={block_n}")
    return Case(launch, expected, what, v, dtype)


def _cross_entropy(v: Values, dtype: str, rows: int | None = None, cols: int | None = None,
                   scale: float = 3.0) -> Case:
    rows = v.integer(1, 16) if rows is None else rows
    cols = v.integer(1, 90) if cols is None else cols
    layout, d_layout = matrix_layout(v), matrix_layout(v)
    block = tile(v, "BLOCK_N", (CE_BLOCK_N, 32))
    ignore_index = v.pick((-100, 0))
    logits = v.normal("logits", (rows, cols), dtype, scale)
    targets = v.integers("targets", (rows,), 0, cols)
    if rows > 1:  # some rows ignored
        targets[v.rng.random(rows) < 0.25] = ignore_index
        v.note(f"targets[rng.random({rows}) < 0.25] = {ignore_index}")
    special = ""
    if v.flag() and cols > 1:  # masked classes (-inf), never at the target; row 0 has
        # only its target finite (loss 0, gradient 0)
        poke(v, "logits", logits, -np.inf, 0.3)
        keep = np.where(targets == ignore_index, 0, targets)
        logits[np.arange(rows), keep] = v.normal("finite", (rows,), dtype, scale)
        v.note(f"logits[np.arange({rows}), np.where(targets == {ignore_index}, 0, targets)] "
               "= finite")
        logits[0, np.arange(cols) != keep[0]] = -np.inf
        v.note(f"logits[0, np.arange({cols}) != {int(keep[0])}] = -np.inf")
        special = ", with -inf logits (never at the target), row 0 all -inf but one"
    grad_scale = 1.0 / max(int((targets != ignore_index).sum()), 1)
    launch = Launch(
        buffers={"logits": Buffer(logits, layout), "targets": Buffer(targets),
                 "loss": Buffer(np.empty(rows, np.float32), output=True),
                 "dlogits": Buffer(np.empty((rows, cols), dtype), d_layout, output=True)},
        args=[Ptr("logits"), Ptr("targets"), Ptr("loss"), Ptr("dlogits"), rows, cols,
              Stride("logits", 0), Stride("logits", 1), Stride("dlogits", 0),
              Stride("dlogits", 1), ignore_index, grad_scale],
        constexprs={"BLOCK_N": block}, grid=(rows,))
    losses, grad = oracle.cross_entropy_rows(logits, targets, ignore_index, grad_scale)
    expected = {"loss": Expect(oracle.n(losses, "float32"), *SUM_TOLERANCE),
                "dlogits": Expect(oracle.n(grad, dtype))}
    what = (f"logits {rows}x{cols} ({layout}, scale {scale:g}{special}), dlogits ({d_layout}), "
            f"{dtype}, ignore_index={ignore_index}, grad_scale={grad_scale:.6g}, BLOCK_N={block}")
    return Case(launch, expected, what, v, dtype)


def _sized(fn: Any, rows: int, cols: int, **kw: Any) -> Any:
    return lambda v, dtype: fn(v, dtype, rows, cols, **kw)


KERNELS = [
    KernelInfo(
        name="layer_norm_kernel", module="layernorm", task="6.4",
        params=("x_ptr", "w_ptr", "b_ptr", "y_ptr", "mean_ptr", "rstd_ptr", "n_rows", "n_cols",
                "stride_xr", "stride_yr", "eps", "BLOCK_N"),
        case=_layer_norm, examples=5,
        edges=(("1x1", _sized(_layer_norm, 1, 1)), ("a tail", _sized(_layer_norm, 3, 17)),
               ("rows around 100 (x^2 cancels)", _sized(_layer_norm, 3, 40, shift=100.0))),
        pointer_types={"mean_ptr": "*fp32", "rstd_ptr": "*fp32"}, float_params=("eps",),
        compile_constexprs={"BLOCK_N": 1024}, compile_dtypes=("float16",),
    ),
    KernelInfo(
        name="layer_norm_backward_kernel", module="layernorm", task="6.4",
        params=("x_ptr", "w_ptr", "mean_ptr", "rstd_ptr", "dy_ptr", "dx_ptr", "dw_partial_ptr",
                "db_partial_ptr", "n_rows", "n_cols", "stride_xr", "stride_dyr", "stride_dxr",
                "ROWS_PER_PROGRAM", "BLOCK_N"),
        case=_layer_norm_backward, examples=5,
        edges=(("1x1", _sized(_layer_norm_backward, 1, 1)),
               ("rows not a multiple of ROWS_PER_PROGRAM",
                _sized(_layer_norm_backward, 2 * ROWS_PER_PROGRAM + 1, 33))),
        pointer_types={"mean_ptr": "*fp32", "rstd_ptr": "*fp32", "dw_partial_ptr": "*fp32",
                       "db_partial_ptr": "*fp32"},
        compile_constexprs={"ROWS_PER_PROGRAM": 8, "BLOCK_N": 1024},
    ),
    KernelInfo(
        name="layer_norm_dwdb_kernel", module="layernorm", task="6.4",
        params=("dw_partial_ptr", "db_partial_ptr", "dw_ptr", "db_ptr", "n_partials", "n_cols",
                "BLOCK_M", "BLOCK_N"),
        case=_dwdb, examples=4,
        edges=(("one partial row", _sized(_dwdb, 1, 1)),
               ("tails", _sized(_dwdb, 2 * DWDB_BLOCK_M + 1, DWDB_BLOCK_N + 1))),
        pointer_types={"dw_partial_ptr": "*fp32", "db_partial_ptr": "*fp32"},
        compile_constexprs={"BLOCK_M": 32, "BLOCK_N": 128},
    ),
    KernelInfo(
        name="cross_entropy_kernel", module="cross_entropy", task="6.4",
        params=("logits_ptr", "targets_ptr", "loss_ptr", "dlogits_ptr", "n_rows", "n_cols",
                "stride_lr", "stride_lc", "stride_dr", "stride_dc", "ignore_index",
                "grad_scale", "BLOCK_N"),
        case=_cross_entropy, examples=5,
        edges=(("one class", _sized(_cross_entropy, 1, 1)),
               ("logits of size 1e4", _sized(_cross_entropy, 4, 3 * CE_BLOCK_N + 1, scale=1e4))),
        pointer_types={"targets_ptr": "*i64", "loss_ptr": "*fp32"}, float_params=("grad_scale",),
        compile_constexprs={"BLOCK_N": 1024}, compile_dtypes=("float16",),
    ),
]


def _wrap_layer_norm(v: Values) -> tuple[list[Any], dict[str, Any], list[Expect], str]:
    dtype = v.pick(("float32", "float16"))
    shape = (v.integer(1, 3), v.integer(1, 10), v.integer(1, 80))
    layouts = wrapper_layout(v, 3), wrapper_layout(v, 1), wrapper_layout(v, 1)
    x = v.normal("x", shape, dtype, 2.0)
    w, b = v.normal("w", shape[-1:], dtype, 1.0, 1.0), v.normal("b", shape[-1:], dtype)
    # the options axis: eps absent (1e-5), 1e-5 given, or a larger one (a Seeded case: 0.5)
    eps = 0.5 if isinstance(v, Seeded) else v.pick((None, 1e-5, 0.5))
    kwargs = {} if eps is None else {"eps": eps}
    y, mean, rstd = oracle.layer_norm(x, w, b, 1e-5 if eps is None else eps)
    return [laid(x, layouts[0]), laid(w, layouts[1]), laid(b, layouts[2])], kwargs, [
        Expect(oracle.n(y, dtype)), Expect(oracle.n(mean, "float32"), *SUM_TOLERANCE),
        Expect(oracle.n(rstd, "float32"), *SUM_TOLERANCE)], \
        f"x {shape} ({layouts[0]}), weight ({layouts[1]}), bias ({layouts[2]}), {dtype}, " \
        f"{'eps default' if eps is None else f'eps={eps!r}'}"


def _wrap_layer_norm_backward(v: Values) -> tuple[list[Any], dict[str, Any], list[Expect], str]:
    dtype = v.pick(("float32", "float16"))
    shape = (v.integer(1, 30), v.integer(1, 80))
    layouts = (wrapper_layout(v, 2), wrapper_layout(v, 1), wrapper_layout(v, 1),
               wrapper_layout(v, 1), wrapper_layout(v, 2))
    x = v.normal("x", shape, dtype, 2.0)
    w = v.normal("w", shape[-1:], dtype, 1.0, 1.0)
    dy = v.normal("dy", shape, dtype)
    _, mean, rstd = oracle.layer_norm(x, w, np.zeros_like(w), 1e-5)
    mean, rstd = oracle.n(mean, "float32"), oracle.n(rstd, "float32")
    v.note("mean = x.astype(np.float64).mean(-1).astype(np.float32)  # torch's, float32")
    v.note("rstd = (1 / np.sqrt(x.astype(np.float64).var(-1) + 1e-5)).astype(np.float32)")
    v.named(mean, "mean")
    v.named(rstd, "rstd")
    dx, dw, db = oracle.layer_norm_backward(x, w, np.zeros_like(w), dy, 1e-5)
    # float32: sums over up to 30 rows; float16: rounded once from float32 (its defaults)
    sums = (1e-5, 1e-4) if dtype == "float32" else (None, None)
    args = [laid(a, layout) for a, layout in zip((x, w, mean, rstd, dy), layouts)]
    return args, {}, [
        Expect(oracle.n(dx, dtype), atol=1e-4), Expect(oracle.n(dw, dtype), *sums),
        Expect(oracle.n(db, dtype), *sums)], \
        f"x {shape} ({layouts[0]}), weight ({layouts[1]}), mean ({layouts[2]}), " \
        f"rstd ({layouts[3]}), grad ({layouts[4]}), {dtype}"


def _wrap_cross_entropy(v: Values) -> tuple[list[Any], dict[str, Any], list[Expect], str]:
    dtype = v.pick(("float32", "float16"))
    rows, cols = v.integer(1, 40), v.integer(1, 200)
    layouts = wrapper_layout(v, 2), wrapper_layout(v, 1)
    logits = v.normal("logits", (rows, cols), dtype, 3.0)
    targets = v.integers("targets", (rows,), 0, cols)
    # the options axis: ignore_index and grad_scale absent (-100; 1 / rows not ignored) or
    # given, falsy values included (ignore_index=0, grad_scale=0.0: a Seeded case's)
    ignore_index, grad_scale = v.option((None, 0, 2)), v.option((None, 0.0, 0.5))
    ignore = -100 if ignore_index is None else ignore_index
    if rows > 1:
        targets[0] = ignore
        v.note(f"targets[0] = {ignore}")
    scale = 1.0 / max(int((targets != ignore).sum()), 1) if grad_scale is None else grad_scale
    losses, grad = oracle.cross_entropy_rows(logits, targets, ignore, scale)
    kwargs = {k: o for k, o in (("ignore_index", ignore_index), ("grad_scale", grad_scale))
              if o is not None}
    options = "".join(f", {k}={o!r}" for k, o in kwargs.items())
    return [laid(logits, layouts[0]), laid(targets, layouts[1])], kwargs, \
        [Expect(oracle.n(losses, "float32"), *SUM_TOLERANCE), Expect(oracle.n(grad, dtype))], \
        f"logits {rows}x{cols} ({layouts[0]}) {dtype}, targets ({layouts[1]}, row 0 ignored " \
        f"when rows > 1){options}"


WRAPPERS = [
    WrapperInfo("layer_norm", "layernorm", "6.4", _wrap_layer_norm,
                ("layernorm.layer_norm_kernel",)),
    WrapperInfo("layer_norm_backward", "layernorm", "6.4", _wrap_layer_norm_backward,
                ("layernorm.layer_norm_backward_kernel", "layernorm.layer_norm_dwdb_kernel")),
    WrapperInfo("cross_entropy", "cross_entropy", "6.4", _wrap_cross_entropy,
                ("cross_entropy.cross_entropy_kernel",)),
]
