"""Task 6.2: row softmax and log_softmax, forward and backward (online max and sum)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..oracle import cuda as oracle
from ..strategies.cuda import Values, laid, matrix_layout, tile, wrapper_layout
from .checks import check_launch
from .spec import Buffer, Case, Expect, KernelInfo, Launch, Ptr, Stride, WrapperInfo

BLOCK_N = 16  # smaller than most rows: the kernels must loop over a row


def _logits(v: Values, rows: int, cols: int, dtype: str, scale: float, neg_inf: bool
            ) -> tuple[np.ndarray, str]:
    """Logits, and what is special about them: with ``neg_inf``, masked positions (-inf,
    as attention's causal mask makes them), a row that is -inf but for one entry, and a
    row of -inf only (torch's softmax of it is NaN)."""
    x = v.normal("x", (rows, cols), dtype, scale)
    if not neg_inf:
        return x, ""
    x[:, 1:][v.rng.random((rows, cols - 1)) < 0.3] = -np.inf
    v.note("x[:, 1:][rng.random(x[:, 1:].shape) < 0.3] = -np.inf")
    said = ", with -inf entries"
    if rows >= 2 and cols >= 2:
        keep = int(v.rng.integers(cols))
        x[0, np.arange(cols) != keep] = -np.inf
        v.note(f"x[0, np.arange({cols}) != {keep}] = -np.inf  # one finite entry")
        said += ", a row of all -inf but one"
    if rows >= 3:
        x[-1] = -np.inf
        v.note("x[-1] = -np.inf  # torch: NaN")
        said += ", a row of all -inf (NaN)"
    return x, said


def _softmax(v: Values, dtype: str, rows: int | None = None, cols: int | None = None,
             scale: float | None = None, neg_inf: bool = False) -> Case:
    rows = v.integer(1, 12) if rows is None else rows
    cols = v.integer(1, 90) if cols is None else cols
    log = v.flag()
    layout, y_layout = matrix_layout(v), matrix_layout(v)
    block = tile(v, "BLOCK_N", (BLOCK_N, 32))
    if scale is None:  # large logits: exp overflows without the maximum subtracted
        scale = v.pick((3.0, 200.0))
    x, special = _logits(v, rows, cols, dtype, scale, neg_inf or v.flag())
    launch = Launch(
        buffers={"x": Buffer(x, layout),
                 "y": Buffer(np.empty((rows, cols), dtype), y_layout, output=True)},
        args=[Ptr("x"), Ptr("y"), rows, cols, Stride("x", 0), Stride("x", 1), Stride("y", 0),
              Stride("y", 1)],
        constexprs={"LOG": log, "BLOCK_N": block}, grid=(rows,))
    expected = {"y": Expect(oracle.n(oracle.softmax(x, log), dtype))}
    what = (f"x {rows}x{cols} ({layout}, scale {scale:g}{special}), y ({y_layout}), {dtype}, "
            f"LOG={log}, BLOCK_N={block}")
    return Case(launch, expected, what, v, dtype)


def _softmax_note(v: Values, name: str, dim: int, log: bool, dtype: str) -> None:
    """NumPy code for y, torch's (log_)softmax of ``name`` over ``dim`` (float32, rounded
    to ``dtype``), for the reproducer."""
    v.note(f"z = {name}.astype(np.float64) - {name}.astype(np.float64).max({dim}, keepdims=True)")
    v.note(f"lse = np.log(np.exp(z).sum({dim}, keepdims=True))")
    v.note(f"y = {'z - lse' if log else 'np.exp(z - lse)'}.astype(np.{dtype})  # torch's")


def _softmax_backward(v: Values, dtype: str, rows: int | None = None,
                      cols: int | None = None) -> Case:
    rows = v.integer(1, 12) if rows is None else rows
    cols = v.integer(1, 90) if cols is None else cols
    log = v.flag()
    y_layout, dy_layout, dx_layout = matrix_layout(v), matrix_layout(v), matrix_layout(v)
    block = tile(v, "BLOCK_N", (BLOCK_N, 32))
    x = v.normal("x", (rows, cols), "float32", 2.0)
    masked = v.flag()
    if masked and cols > 1:  # saved outputs of -inf logits: y = 0 (log_softmax: -inf)
        x[:, 1:][v.rng.random((rows, cols - 1)) < 0.3] = -np.inf
        v.note("x[:, 1:][rng.random(x[:, 1:].shape) < 0.3] = -np.inf")
    y = oracle.n(oracle.softmax(x, log), dtype)
    _softmax_note(v, "x", -1, log, dtype)
    dy = v.normal("dy", (rows, cols), dtype)
    launch = Launch(
        buffers={"y": Buffer(y, y_layout), "dy": Buffer(dy, dy_layout),
                 "dx": Buffer(np.empty((rows, cols), dtype), dx_layout, output=True)},
        args=[Ptr("y"), Ptr("dy"), Ptr("dx"), rows, cols, Stride("y", 0), Stride("y", 1),
              Stride("dy", 0), Stride("dy", 1), Stride("dx", 0), Stride("dx", 1)],
        constexprs={"LOG": log, "BLOCK_N": block}, grid=(rows,))
    expected = {"dx": Expect(oracle.n(oracle.softmax_backward(y, dy, log), dtype))}
    what = (f"y {rows}x{cols} ({y_layout}{', from -inf logits' if masked and cols > 1 else ''}),"
            f" dy ({dy_layout}), dx ({dx_layout}), {dtype}, LOG={log}, BLOCK_N={block}")
    return Case(launch, expected, what, v, dtype)


def _reads_each_input_at_most_twice(submission: Any, info: KernelInfo) -> None:
    """The online max and sum: one pass for the statistics, one for the output, so no
    element of x is loaded more than twice (a max pass, a sum pass and a write pass load
    it three times)."""
    for log in (False, True):
        case = _softmax(_Fixed(log), "float32", 3, 5 * BLOCK_N + 3)
        obs = check_launch(submission, info, case, " [online statistics]")
        loaded = obs["loads"].get("x") if isinstance(obs["loads"], dict) else None
        if not isinstance(loaded, int):
            raise AssertionError(f"{info.name}: malformed answer: no load count for x")
        size = case.launch.buffers["x"].values.size
        if loaded > 2 * size:
            raise AssertionError(
                f"{info.name} loaded {loaded} elements of x for a {size}-element input (LOG="
                f"{log}): more than two passes over each row. Keep a running maximum and a "
                "running sum of exp(x - max), rescaled when the maximum grows (the online "
                "softmax), then one pass to write the output.")


class _Fixed(Values):
    """Hand-picked values whose one flag is ``log``."""

    def __init__(self, log: bool) -> None:
        super().__init__(None, 7)
        self._log = log
        self._flags = 0

    def flag(self) -> bool:
        self._flags += 1
        return self._log if self._flags == 1 else False


def _sized(fn: Any, rows: int, cols: int, **kw: Any) -> Any:
    return lambda v, dtype: fn(v, dtype, rows, cols, **kw)


KERNELS = [
    KernelInfo(
        name="softmax_kernel", module="softmax", task="6.2",
        params=("x_ptr", "y_ptr", "n_rows", "n_cols", "stride_xr", "stride_xc", "stride_yr",
                "stride_yc", "LOG", "BLOCK_N"),
        case=_softmax, examples=6,
        edges=(("1x1", _sized(_softmax, 1, 1)), ("one exact block", _sized(_softmax, 2, BLOCK_N)),
               ("logits of size 1e4", _sized(_softmax, 4, 3 * BLOCK_N + 5, scale=1e4)),
               ("-inf entries", _sized(_softmax, 5, 2 * BLOCK_N + 1, neg_inf=True))),
        compile_constexprs={"LOG": False, "BLOCK_N": 1024},
        compile_dtypes=("float16",),
        checks=(("online", _reads_each_input_at_most_twice),),
    ),
    KernelInfo(
        name="softmax_backward_kernel", module="softmax", task="6.2",
        params=("y_ptr", "dy_ptr", "dx_ptr", "n_rows", "n_cols", "stride_yr", "stride_yc",
                "stride_dyr", "stride_dyc", "stride_dxr", "stride_dxc", "LOG", "BLOCK_N"),
        case=_softmax_backward, examples=6,
        edges=(("1x1", _sized(_softmax_backward, 1, 1)),
               ("tails", _sized(_softmax_backward, 3, 2 * BLOCK_N + 7))),
        compile_constexprs={"LOG": True, "BLOCK_N": 1024},
    ),
]


def _wrap_softmax(v: Values) -> tuple[list[Any], dict[str, Any], list[Expect], str]:
    dtype = v.pick(("float32", "float16"))
    shape = (v.integer(1, 3), v.integer(1, 4), v.integer(1, 40))  # at most 160 rows
    dim, log = v.integer(-3, 2), v.flag()
    layout = wrapper_layout(v, 3)
    x = v.normal("x", shape, dtype, 3.0)
    moved = np.moveaxis(x, dim, -1)
    expected = np.moveaxis(oracle.n(oracle.softmax(moved, log), dtype), -1, dim)
    return [laid(x, layout)], {"dim": dim, "log": log}, [Expect(expected)], \
        f"x {shape} ({layout}) {dtype}, dim={dim}, log={log}"


def _wrap_softmax_backward(v: Values) -> tuple[list[Any], dict[str, Any], list[Expect], str]:
    dtype = v.pick(("float32", "float16"))
    shape = (v.integer(1, 5), v.integer(1, 60))
    dim, log = v.integer(-2, 1), v.flag()
    layouts = wrapper_layout(v, 2), wrapper_layout(v, 2)
    x = v.normal("x", shape, "float32", 2.0)
    moved = np.moveaxis(x, dim, -1)
    y = np.moveaxis(oracle.n(oracle.softmax(moved, log), dtype), -1, dim)
    _softmax_note(v, "x", dim, log, dtype)
    v.named(y, "y")
    dy = v.normal("dy", shape, dtype)
    expected = oracle.softmax_backward(np.moveaxis(y, dim, -1), np.moveaxis(dy, dim, -1), log)
    return [laid(y, layouts[0]), laid(dy, layouts[1])], {"dim": dim, "log": log}, \
        [Expect(np.moveaxis(oracle.n(expected, dtype), -1, dim))], \
        f"y ({layouts[0]}), grad ({layouts[1]}) {shape} {dtype}, dim={dim}, log={log}"


WRAPPERS = [
    WrapperInfo("softmax", "softmax", "6.2", _wrap_softmax, ("softmax.softmax_kernel",)),
    WrapperInfo("softmax_backward", "softmax", "6.2", _wrap_softmax_backward,
                ("softmax.softmax_backward_kernel",)),
]
