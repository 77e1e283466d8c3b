"""Task 6.5: FlashAttention-2 forward (causal, logsumexp) and backward."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..oracle import cuda as oracle
from ..strategies.cuda import Values, laid, tile, wrapper_layout
from .spec import Buffer, Case, Expect, KernelInfo, Launch, Ptr, WrapperInfo, cdiv

BLOCK_M, BLOCK_N = 16, 16
# the layout q, k, v, o (and do, dq ...) share: contiguous, heads split from a projection,
# every other element of the head dim (stride_d 2), rows longer than the head (stride_t)
SHARED_LAYOUTS = ("contiguous", "heads", "strided", "padded")
STRIDES = ("stride_z", "stride_h", "stride_t", "stride_d")
WHY = {
    "float16": "P and dS are rounded to float16 before their tensor-core products: |error| "
               "<= 2**-10 (P @ |V|) for O (2**-10 sm_scale (|dS|^T @ |Q|) for dK ...) plus "
               "half a unit of the output's rounding",
    "float32": "float32 throughout: |error| <= (n_ctx + head_dim) 2**-22 times the same "
               "magnitudes, plus half a unit of rounding",
}


def _bound(magnitude: Any, exact: Any, dtype: str, n_ctx: int, head_dim: int,
           max_score: float = 0.0) -> np.ndarray:
    c_in = 2.0**-10 if dtype == "float16" else (n_ctx + head_dim) * 2.0**-22
    # exp2 of a scaled score s rounded to float32 is off by a relative ln2 |s| u: large
    # scores (max_score, in base 2) add that to every probability (4 u for margin)
    c_in += 4 * 2.0**-24 * max_score
    c_out = 2.0**-11 if dtype == "float16" else 2.0**-24
    return c_in * oracle.n(magnitude) + c_out * np.abs(oracle.n(exact)) + 2.0**-24


def _shape(v: Values, z: int | None, h: int | None, t: int | None, d: int | None
           ) -> tuple[int, int, int, int]:
    return (v.integer(1, 2) if z is None else z, v.integer(1, 2) if h is None else h,
            v.integer(1, 48) if t is None else t, v.pick((16, 32)) if d is None else d)


def _qkv(v: Values, shape: tuple[int, ...], dtype: str) -> tuple[np.ndarray, ...]:
    return tuple(v.normal(name, shape, dtype) for name in ("q", "k", "v"))


def _kernel_scale(v: Values, d: int) -> float:
    """The kernels' sm_scale on the options axis: 1/sqrt(head_dim) (a hand-picked case's),
    0.0 (every score 0: uniform attention) or half of it."""
    return v.option((oracle.sm_scale(d), 0.0, 0.5 * oracle.sm_scale(d)))


def _tiles(v: Values) -> tuple[int, int]:
    """BLOCK_M and BLOCK_N drawn each on its own (BLOCK_M != BLOCK_N half the time; a
    hand-picked ``_Edge`` fixes them, and CAUSAL)."""
    if isinstance(v, _Edge):
        return v.tiles
    return tile(v, "BLOCK_M", (BLOCK_M, 32)), tile(v, "BLOCK_N", (BLOCK_N, 32))


class _Edge(Values):
    """Hand-picked values with given tiles and CAUSAL (every flag)."""

    def __init__(self, v: Values, tiles: tuple[int, int], causal: bool) -> None:
        self.__dict__.update(v.__dict__)
        self.tiles, self._causal = tiles, causal

    def flag(self) -> bool:
        return self._causal


def _uneven(fn: Any, t: int) -> Any:
    """A causal case with BLOCK_M=32, BLOCK_N=16: the key blocks a query block sees and
    the query blocks a key block sees are not the same blocks."""
    return lambda v, dtype: fn(_Edge(v, (32, 16), True), dtype, 1, 1, t, 16)


def _strides_of(name: str) -> list[Any]:
    from .spec import Stride

    return [Stride(name, i) for i in range(4)]


def _forward(v: Values, dtype: str, z: int | None = None, h: int | None = None,
             t: int | None = None, d: int | None = None, large: bool = False) -> Case:
    shape = _shape(v, z, h, t, d)
    z, h, t, d = shape
    causal, layout = v.flag(), v.pick(SHARED_LAYOUTS)
    block_m, block_n = _tiles(v)
    if large:  # integer q and k: exact scores, large enough that exp overflows unless the
        # row maximum is subtracted first
        q, k = (v.integers(name, shape, -16, 17).astype(dtype) for name in ("q", "k"))
        v.note(f"q, k = q.astype(np.{dtype}), k.astype(np.{dtype})")
        vv = v.normal("v", shape, dtype)
    else:
        q, k, vv = _qkv(v, shape, dtype)
    scale = _kernel_scale(v, d)
    buffers = {"q": Buffer(q, layout), "k": Buffer(k, layout), "v": Buffer(vv, layout),
               "o": Buffer(np.empty(shape, dtype), layout, output=True),
               "lse": Buffer(np.empty((z * h, t), np.float32), output=True)}
    launch = Launch(
        buffers=buffers,
        args=[Ptr("q"), Ptr("k"), Ptr("v"), Ptr("o"), Ptr("lse"), *_strides_of("q"), h, t, scale],
        constexprs={"CAUSAL": causal, "BLOCK_M": block_m, "BLOCK_N": block_n, "HEAD_DIM": d},
        grid=(cdiv(t, block_m), z * h))
    e = oracle.attention(q, k, vv, causal, scale)
    magnitude = e["p"] @ oracle.t(vv, oracle.torch.float64).abs()
    max_score = float(np.abs(q.astype(np.float64) @ np.swapaxes(k, -1, -2).astype(np.float64)
                             ).max() * scale * 1.4426950408889634)
    expected = {
        "o": Expect(oracle.n(e["o"]), bound=_bound(magnitude, e["o"], dtype, t, d, max_score),
                    why=WHY[dtype], dtype=dtype),
        "lse": Expect(oracle.n(e["lse"].reshape(z * h, t), "float32"), 1e-5, 1e-5),
    }
    big = f", integer scores up to {max_score / 1.4427:.0f}" if large else ""
    what = (f"q, k, v {shape} ({layout}{big}), "
            f"{dtype}, CAUSAL={causal}, sm_scale={scale!r}, BLOCK_M={block_m}, BLOCK_N={block_n}")
    return Case(launch, expected, what, v, dtype)


def _backward_inputs(v: Values, dtype: str, shape: tuple[int, ...], causal: bool,
                     scale: float | None = None
                     ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    q, k, vv = _qkv(v, shape, dtype)
    do = v.normal("do", shape, dtype)
    z, h, t, d = shape
    scale = oracle.sm_scale(d) if scale is None else scale
    e = oracle.attention(q, k, vv, causal, scale, do)
    o = oracle.n(e["o"], dtype)
    lse = oracle.n(e["lse"].reshape(z * h, t), "float32")
    delta = (o.astype(np.float32) * do.astype(np.float32)).sum(-1).reshape(z * h, t)
    v.note(f"s = (q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), -1, -2)) "
           f"* {scale!r}  # torch's attention, in float64")
    if causal:
        v.note("s[..., np.triu(np.ones(s.shape[-2:], bool), 1)] = -np.inf  # causal")
    v.note("lse64 = np.log(np.exp(s - s.max(-1, keepdims=True)).sum(-1)) + s.max(-1)")
    v.note(f"o = (np.exp(s - lse64[..., None]) @ v.astype(np.float64)).astype(np.{dtype})")
    v.note(f"lse = lse64.reshape({z * h}, {t}).astype(np.float32)")
    v.note(f"delta = (o.astype(np.float32) * do.astype(np.float32)).sum(-1).reshape({z * h}, {t})")
    return {"q": q, "k": k, "v": vv, "do": do, "o": o, "lse": lse, "delta": delta}, e


def _preprocess(v: Values, dtype: str, z: int | None = None, h: int | None = None,
                t: int | None = None, d: int | None = None) -> Case:
    shape = _shape(v, z, h, t, d)
    z, h, t, d = shape
    layout = v.pick(SHARED_LAYOUTS)
    block_m = tile(v, "BLOCK_M", (BLOCK_M, 32))
    o, do = v.normal("o", shape, dtype), v.normal("do", shape, dtype)
    launch = Launch(
        buffers={"o": Buffer(o, layout), "do": Buffer(do, layout),
                 "delta": Buffer(np.empty((z * h, t), np.float32), output=True)},
        args=[Ptr("o"), Ptr("do"), Ptr("delta"), *_strides_of("o"), h, t],
        constexprs={"BLOCK_M": block_m, "HEAD_DIM": d}, grid=(cdiv(t, block_m), z * h))
    delta = (oracle.t(o) * oracle.t(do)).sum(-1).reshape(z * h, t)
    expected = {"delta": Expect(oracle.n(delta, "float32"), 1e-5, 1e-5)}
    return Case(launch, expected, f"o, do {shape} ({layout}), {dtype}, BLOCK_M={block_m}", v,
                dtype)


def _dkdv(v: Values, dtype: str, z: int | None = None, h: int | None = None,
          t: int | None = None, d: int | None = None) -> Case:
    shape = _shape(v, z, h, t, d)
    z, h, t, d = shape
    causal, layout = v.flag(), v.pick(SHARED_LAYOUTS)
    block_m, block_n = _tiles(v)
    scale = _kernel_scale(v, d)
    inputs, e = _backward_inputs(v, dtype, shape, causal, scale)
    f64 = oracle.torch.float64
    buffers = {name: Buffer(inputs[name], layout) for name in ("q", "k", "v", "do")}
    buffers.update(lse=Buffer(inputs["lse"]), delta=Buffer(inputs["delta"]),
                   dk=Buffer(np.empty(shape, dtype), layout, output=True),
                   dv=Buffer(np.empty(shape, dtype), layout, output=True))
    launch = Launch(
        buffers=buffers,
        args=[Ptr("q"), Ptr("k"), Ptr("v"), Ptr("do"), Ptr("lse"), Ptr("delta"), Ptr("dk"),
              Ptr("dv"), *_strides_of("q"), h, t, scale],
        constexprs={"CAUSAL": causal, "BLOCK_M": block_m, "BLOCK_N": block_n, "HEAD_DIM": d},
        grid=(cdiv(t, block_n), z * h))
    dk_mag = e["ds_magnitude"].transpose(-1, -2) @ oracle.t(inputs["q"], f64).abs() * scale
    dv_mag = e["p"].transpose(-1, -2) @ oracle.t(inputs["do"], f64).abs()
    expected = {
        "dk": Expect(oracle.n(e["dk"]), bound=_bound(dk_mag, e["dk"], dtype, t, d),
                     why=WHY[dtype], dtype=dtype),
        "dv": Expect(oracle.n(e["dv"]), bound=_bound(dv_mag, e["dv"], dtype, t, d),
                     why=WHY[dtype], dtype=dtype),
    }
    what = f"q, k, v, do {shape} ({layout}), {dtype}, CAUSAL={causal}, BLOCK_M={block_m}, BLOCK_N={block_n}"
    return Case(launch, expected, what, v, dtype)


def _dq(v: Values, dtype: str, z: int | None = None, h: int | None = None,
        t: int | None = None, d: int | None = None) -> Case:
    shape = _shape(v, z, h, t, d)
    z, h, t, d = shape
    causal, layout = v.flag(), v.pick(SHARED_LAYOUTS)
    block_m, block_n = _tiles(v)
    scale = _kernel_scale(v, d)
    inputs, e = _backward_inputs(v, dtype, shape, causal, scale)
    buffers = {name: Buffer(inputs[name], layout) for name in ("q", "k", "v", "do")}
    buffers.update(lse=Buffer(inputs["lse"]), delta=Buffer(inputs["delta"]),
                   dq=Buffer(np.empty(shape, dtype), layout, output=True))
    launch = Launch(
        buffers=buffers,
        args=[Ptr("q"), Ptr("k"), Ptr("v"), Ptr("do"), Ptr("lse"), Ptr("delta"), Ptr("dq"),
              *_strides_of("q"), h, t, scale],
        constexprs={"CAUSAL": causal, "BLOCK_M": block_m, "BLOCK_N": block_n, "HEAD_DIM": d},
        grid=(cdiv(t, block_m), z * h))
    dq_mag = e["ds_magnitude"] @ oracle.t(inputs["k"], oracle.torch.float64).abs() * scale
    expected = {"dq": Expect(oracle.n(e["dq"]), bound=_bound(dq_mag, e["dq"], dtype, t, d),
                             why=WHY[dtype], dtype=dtype)}
    what = f"q, k, v, do {shape} ({layout}), {dtype}, CAUSAL={causal}, BLOCK_M={block_m}, BLOCK_N={block_n}"
    return Case(launch, expected, what, v, dtype)


def _sized(fn: Any, z: int, h: int, t: int, d: int) -> Any:
    return lambda v, dtype: fn(v, dtype, z, h, t, d)


COMMON = ("n_heads", "n_ctx")
TILES = {"BLOCK_M": 16, "BLOCK_N": 16, "HEAD_DIM": 32}  # small: quick to compile
KERNELS = [
    KernelInfo(
        name="flash_attention_kernel", module="attention", task="6.5",
        params=("q_ptr", "k_ptr", "v_ptr", "o_ptr", "lse_ptr", *STRIDES, *COMMON, "sm_scale",
                "CAUSAL", "BLOCK_M", "BLOCK_N", "HEAD_DIM"),
        case=_forward, examples=5,
        edges=(("one position", _sized(_forward, 1, 1, 1, 16)),
               ("tails", _sized(_forward, 1, 2, 2 * BLOCK_M + 3, 16)),
               ("causal, BLOCK_M=32, BLOCK_N=16", _uneven(_forward, 3 * 16 + 5)),
               ("large scores (exp overflows without the row maximum)",
                lambda v, dtype: _forward(v, dtype, 1, 1, 2 * BLOCK_M + 3, 16, large=True))),
        pointer_types={"lse_ptr": "*fp32"}, float_params=("sm_scale",),
        compile_constexprs={"CAUSAL": True, **TILES}, compile_dtypes=("float32", "float16"),
        tensor_cores=True, ieee=True,
    ),
    KernelInfo(
        name="flash_attention_backward_preprocess_kernel", module="attention", task="6.5",
        params=("o_ptr", "do_ptr", "delta_ptr", *STRIDES, *COMMON, "BLOCK_M", "HEAD_DIM"),
        case=_preprocess, examples=3, edges=(("one position", _sized(_preprocess, 1, 1, 1, 16)),),
        pointer_types={"delta_ptr": "*fp32"},
        compile_constexprs={"BLOCK_M": 16, "HEAD_DIM": 32}, compile_dtypes=("float16",),
    ),
    KernelInfo(
        name="flash_attention_backward_dkdv_kernel", module="attention", task="6.5",
        params=("q_ptr", "k_ptr", "v_ptr", "do_ptr", "lse_ptr", "delta_ptr", "dk_ptr", "dv_ptr",
                *STRIDES, *COMMON, "sm_scale", "CAUSAL", "BLOCK_M", "BLOCK_N", "HEAD_DIM"),
        case=_dkdv, examples=4,
        edges=(("one position", _sized(_dkdv, 1, 1, 1, 16)),
               ("tails", _sized(_dkdv, 1, 1, 2 * BLOCK_N + 5, 16)),
               ("causal, BLOCK_M=32, BLOCK_N=16", _uneven(_dkdv, 3 * 16 + 5))),
        pointer_types={"lse_ptr": "*fp32", "delta_ptr": "*fp32"}, float_params=("sm_scale",),
        # float16 here (its tensor cores); the float32 build's TF32 check is in
        # suites/hw6_cuda/test_compile.py (BACKWARD_FP32)
        compile_constexprs={"CAUSAL": True, **TILES}, compile_dtypes=("float16",),
        tensor_cores=True,
    ),
    KernelInfo(
        name="flash_attention_backward_dq_kernel", module="attention", task="6.5",
        params=("q_ptr", "k_ptr", "v_ptr", "do_ptr", "lse_ptr", "delta_ptr", "dq_ptr",
                *STRIDES, *COMMON, "sm_scale", "CAUSAL", "BLOCK_M", "BLOCK_N", "HEAD_DIM"),
        case=_dq, examples=4,
        edges=(("one position", _sized(_dq, 1, 1, 1, 16)),
               ("tails", _sized(_dq, 1, 1, 2 * BLOCK_M + 5, 16)),
               ("causal, BLOCK_M=32, BLOCK_N=16", _uneven(_dq, 3 * 16 + 5))),
        pointer_types={"lse_ptr": "*fp32", "delta_ptr": "*fp32"}, float_params=("sm_scale",),
        compile_constexprs={"CAUSAL": True, **TILES}, compile_dtypes=("float16",),
        tensor_cores=True,
    ),
]


# the options axis of sm_scale: the default (None: 1/sqrt(head_dim) = 0.25 at head_dim 16),
# a falsy 0.0 (every score 0: uniform attention, as torch's scale=0.0) and other values
SM_SCALES = (None, 0.0, 0.125, 0.25)


def _scale_option(v: Values) -> tuple[dict[str, Any], float, str]:
    """The sm_scale keyword drawn (absent for None), the scale it means and its words."""
    sm_scale = v.option(SM_SCALES)
    if sm_scale is None:
        return {}, 0.25, "sm_scale default"
    return {"sm_scale": sm_scale}, sm_scale, f"sm_scale={sm_scale!r}"


def _wrap_attention(v: Values) -> tuple[list[Any], dict[str, Any], list[Expect], str]:
    dtype = v.pick(("float32", "float16"))
    shape = (v.integer(1, 2), v.integer(1, 2), v.integer(1, 40), 16)
    causal = v.flag()
    layouts = [wrapper_layout(v, 4) for _ in range(3)]
    options, scale, said = _scale_option(v)
    q, k, vv = _qkv(v, shape, dtype)
    e = oracle.attention(q, k, vv, causal, scale)
    magnitude = e["p"] @ oracle.t(vv, oracle.torch.float64).abs()
    return [laid(a, lay) for a, lay in zip((q, k, vv), layouts)], {"causal": causal, **options}, [
        Expect(oracle.n(e["o"]), bound=_bound(magnitude, e["o"], dtype, shape[2], 16),
               why=WHY[dtype], dtype=dtype),
        Expect(oracle.n(e["lse"], "float32"), 1e-5, 1e-5)], \
        (f"q ({layouts[0]}), k ({layouts[1]}), v ({layouts[2]}) {shape} {dtype}, "
         f"causal={causal}, {said}")


def _wrap_attention_backward(v: Values) -> tuple[list[Any], dict[str, Any], list[Expect], str]:
    dtype = v.pick(("float32", "float16"))
    shape = (1, v.integer(1, 2), v.integer(1, 40), 16)
    causal = v.flag()
    layouts = [wrapper_layout(v, 4 if name != "lse" else 3)
               for name in ("q", "k", "v", "o", "lse", "grad")]
    options, scale, scale_said = _scale_option(v)
    inputs, e = _backward_inputs(v, dtype, shape, causal, scale)
    f64 = oracle.torch.float64
    mags = {"dq": e["ds_magnitude"] @ oracle.t(inputs["k"], f64).abs() * abs(scale),
            "dk": e["ds_magnitude"].transpose(-1, -2) @ oracle.t(inputs["q"], f64).abs()
            * abs(scale),
            "dv": e["p"].transpose(-1, -2) @ oracle.t(inputs["do"], f64).abs()}
    expected = [Expect(oracle.n(e[g]), bound=_bound(mags[g], e[g], dtype, shape[2], 16),
                       why=WHY[dtype], dtype=dtype) for g in ("dq", "dk", "dv")]
    lse = inputs["lse"].reshape(shape[:3])
    arrays = (inputs["q"], inputs["k"], inputs["v"], inputs["o"], lse, inputs["do"])
    said = ", ".join(f"{name} ({lay})" for name, lay in
                     zip(("q", "k", "v", "o", "lse", "grad"), layouts))
    return [laid(a, lay) for a, lay in zip(arrays, layouts)], \
        {"causal": causal, **options}, expected, \
        f"{said} {shape} {dtype}, causal={causal}, {scale_said}"


WRAPPERS = [
    WrapperInfo("flash_attention", "attention", "6.5", _wrap_attention,
                ("attention.flash_attention_kernel",)),
    WrapperInfo("flash_attention_backward", "attention", "6.5", _wrap_attention_backward,
                ("attention.flash_attention_backward_preprocess_kernel",
                 "attention.flash_attention_backward_dkdv_kernel",
                 "attention.flash_attention_backward_dq_kernel")),
]
