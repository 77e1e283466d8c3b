"""Task 6.3: the tiled matmul (float32 accumulation, masks, strides, grouped order)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..oracle import cuda as oracle
from ..strategies.cuda import Seeded, Values, laid, matrix_layout, tile, wrapper_layout
from .checks import check_launch
from .spec import Buffer, Case, Expect, KernelInfo, Launch, Ptr, Stride, WrapperInfo, cdiv

TILE = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2}
WHY = ("float32 accumulation in any order: |error| <= K u (|a| @ |b|) / (1 - K u) + half a "
       "unit of the output's rounding, u = 2**-24")


def _expect(a: np.ndarray, b: np.ndarray, out_dtype: str) -> Expect:
    exact, magnitude = oracle.matmul_exact(a, b)
    bound = oracle.accumulation_bound(magnitude, exact, a.shape[1], out_dtype)
    return Expect(exact, bound=bound, why=WHY, dtype=out_dtype)


def _matmul(v: Values, dtype: str, m: int | None = None, n: int | None = None,
            k: int | None = None, layouts: tuple[str, str, str] | None = None,
            tiles: dict[str, int] | None = None, trace: bool = False) -> Case:
    m = v.integer(1, 64) if m is None else m
    n = v.integer(1, 64) if n is None else n
    k = v.integer(1, 64) if k is None else k
    if layouts is None:
        layouts = (matrix_layout(v), matrix_layout(v), matrix_layout(v))
    if tiles is None:  # each tile size on its own: BLOCK_M != BLOCK_N != BLOCK_K
        tiles = {"BLOCK_M": tile(v, "BLOCK_M", (16, 32)), "BLOCK_N": tile(v, "BLOCK_N", (16, 32)),
                 "BLOCK_K": tile(v, "BLOCK_K", (16, 32)), "GROUP_M": tile(v, "GROUP_M", (2, 1, 3))}
    a = v.normal("a", (m, k), dtype)
    b = v.normal("b", (k, n), dtype)
    grid = (cdiv(m, tiles["BLOCK_M"]) * cdiv(n, tiles["BLOCK_N"]),)
    launch = Launch(
        buffers={"a": Buffer(a, layouts[0]), "b": Buffer(b, layouts[1]),
                 "c": Buffer(np.empty((m, n), dtype), layouts[2], output=True)},
        args=[Ptr("a"), Ptr("b"), Ptr("c"), m, n, k, Stride("a", 0), Stride("a", 1),
              Stride("b", 0), Stride("b", 1), Stride("c", 0), Stride("c", 1)],
        constexprs=dict(tiles), grid=grid, trace="c" if trace else None)
    expected = {"c": _expect(a, b, dtype)}
    what = (f"a {m}x{k} ({layouts[0]}), b {k}x{n} ({layouts[1]}), c ({layouts[2]}), {dtype}, "
            + ", ".join(f"{key}={val}" for key, val in tiles.items()))
    return Case(launch, expected, what, v, dtype)


def _sized(m: int, n: int, k: int, tiles: dict[str, int] | None = None) -> Any:
    return lambda v, dtype: _matmul(v, dtype, m, n, k, ("contiguous",) * 3, tiles or TILE)


UNEVEN = {"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2}  # BLOCK_M != BLOCK_N


def grouped_tile(pid: int, m: int, n: int, tile: dict[str, int]) -> tuple[int, int]:
    """The tile (pid_m, pid_n) program ``pid`` computes in grouped order."""
    num_m, num_n = cdiv(m, tile["BLOCK_M"]), cdiv(n, tile["BLOCK_N"])
    in_group = tile["GROUP_M"] * num_n
    first = (pid // in_group) * tile["GROUP_M"]
    rows = min(num_m - first, tile["GROUP_M"])
    return first + (pid % in_group) % rows, (pid % in_group) // rows


def _grouped_order(submission: Any, info: KernelInfo) -> None:
    """Program pid must compute the tile the API's grouped order gives it (GROUP_M tile
    rows swept column by column), not row-major order: seen from the first element each
    program stores into c."""
    m, n = 4 * TILE["BLOCK_M"] + 3, 3 * TILE["BLOCK_N"]
    case = _matmul(_Fixed(), "float32", m, n, 16, ("contiguous",) * 3, TILE, trace=True)
    obs = check_launch(submission, info, case, " [grouped order]")
    stores = obs["stores"]
    if not isinstance(stores, dict):
        raise AssertionError(f"{info.name}: malformed answer: stores must be a mapping")
    for pid in range(case.launch.grid[0]):
        firsts = stores.get(str((pid, 0, 0)))
        if not isinstance(firsts, list) or not firsts or not isinstance(firsts[0], int):
            raise AssertionError(f"{info.name}: program {pid} stored nothing into c")
        row, col = divmod(min(firsts), n)
        got = (row // TILE["BLOCK_M"], col // TILE["BLOCK_N"])
        want = grouped_tile(pid, m, n, TILE)
        if got != want:
            row_major = divmod(pid, cdiv(n, TILE["BLOCK_N"]))
            hint = " (that is row-major order)" if got == row_major else ""
            raise AssertionError(
                f"{info.name}: program {pid} computed tile {got}{hint}, but in grouped order "
                f"(GROUP_M={TILE['GROUP_M']}) it computes tile {want}; "
                f"case: M={m}, N={n}, tiles {TILE['BLOCK_M']}x{TILE['BLOCK_N']}")


class _Fixed(Values):
    def __init__(self) -> None:
        super().__init__(None, 11)


KERNELS = [
    KernelInfo(
        name="matmul_kernel", module="matmul", task="6.3",
        params=("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_ak",
                "stride_bk", "stride_bn", "stride_cm", "stride_cn", "BLOCK_M", "BLOCK_N",
                "BLOCK_K", "GROUP_M"),
        case=_matmul, examples=5,
        edges=(("1x1x1", _sized(1, 1, 1)), ("exact tiles", _sized(32, 32, 32)),
               ("tails in M, N and K", _sized(33, 17, 49)),
               ("tails, BLOCK_M=32, BLOCK_N=16", _sized(33, 17, 49, UNEVEN)),
               ("K = 256 (float32 accumulation)", _sized(32, 32, 256))),
        compile_constexprs={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8},
        compile_dtypes=("float32", "float16"),
        tensor_cores=True, ieee=True,
        checks=(("grouped-order", _grouped_order),),
    ),
]


def _wrap_matmul(v: Values) -> tuple[list[Any], dict[str, Any], list[Expect], str]:
    dtype = v.pick(("float32", "float16"))
    m, k, n = v.integer(1, 70), v.integer(1, 70), v.integer(1, 70)
    layouts = wrapper_layout(v, 2), wrapper_layout(v, 2)
    a, b = v.normal("a", (m, k), dtype), v.normal("b", (k, n), dtype)
    # the options axis: out_dtype absent (a's dtype) or an output dtype that differs from
    # the inputs' (a Seeded case: always the other dtype, so every grading meets it)
    other = "float16" if dtype == "float32" else "float32"
    out_dtype = other if isinstance(v, Seeded) else v.pick((None, other))
    kwargs = {} if out_dtype is None else {"out_dtype": out_dtype}
    option = "" if out_dtype is None else (f", out_dtype={out_dtype!r} (an output dtype that "
                                           "differs from the inputs')")
    return [laid(a, layouts[0]), laid(b, layouts[1])], kwargs, \
        [_expect(a, b, out_dtype or dtype)], \
        f"a {m}x{k} ({layouts[0]}), b {k}x{n} ({layouts[1]}), {dtype}{option}"


WRAPPERS = [WrapperInfo("matmul", "matmul", "6.3", _wrap_matmul, ("matmul.matmul_kernel",))]
