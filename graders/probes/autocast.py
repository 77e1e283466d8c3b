"""Probes for task 4.2: ``tt.amp.autocast``.

Most of them apply Functions of their own that declare an ``autocast_policy`` and record
what reaches them: the dtype (and identity) of each argument forward receives, and the
dtype of the gradient backward receives. They compute nothing in float32 themselves
(``opmath = False``), so these checks depend neither on the student's operators
(assignment 2) nor on task 4.1. The op-table probe (``op_dtypes``) runs the student's
operators, with graph recording stubbed out (assignment 1 is not needed).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from . import probe
from ._observe import array, raised
from .ops import _Inputs, _outputs, _run_isolated

_Cache: dict[int, Any] = {}


class _Log:
    """What the probe Functions saw, in call order."""

    def __init__(self) -> None:
        self.forward: list[dict[str, Any]] = []
        self.backward: list[dict[str, Any]] = []


def _kind(x: Any) -> str:
    data = getattr(x, "data", None)
    if isinstance(data, np.ndarray):
        return str(data.dtype)
    return "None" if x is None else type(x).__name__


def recorders(tt: Any) -> tuple[dict[str, type], _Log]:
    """A Function per autocast policy (and an in-place one that declares a casting
    policy): forward logs its arguments and returns a copy of the first one; backward
    logs the gradient's dtype and passes it to every tensor argument."""
    cached = _Cache.get(id(tt))
    if cached is not None:
        return cached
    log = _Log()
    base = type("Recorder", (tt.autograd.Function,), {"opmath": False})

    def make(name: str, policy: str, inplace: bool = False) -> type:
        def forward(ctx: Any, *args: Any) -> np.ndarray:
            ctx.kinds = [_kind(a) for a in args]
            log.forward.append({"fn": name, "kinds": ctx.kinds, "ids": [id(a) for a in args],
                                "objects": list(args)})
            return args[0].data if inplace else args[0].data.copy()

        def backward(ctx: Any, g: np.ndarray) -> tuple[Any, ...]:
            log.backward.append({"fn": name, "grad": str(g.dtype)})
            return tuple(g if kind not in ("None", "int", "float") and "int" not in kind
                         else None for kind in ctx.kinds)

        attrs = {"autocast_policy": policy, "is_inplace": inplace,
                 "forward": staticmethod(forward), "backward": staticmethod(backward)}
        return type(name, (base,), attrs)

    class Narrow(base):
        """``a[:rows]``, a view."""

        is_view = True

        @staticmethod
        def forward(ctx: Any, a: Any, rows: int) -> np.ndarray:
            ctx.shape, ctx.rows = a.data.shape, rows
            return a.data[:rows]

        @staticmethod
        def backward(ctx: Any, g: np.ndarray) -> tuple[Any, None]:
            out = np.zeros(ctx.shape, g.dtype)
            out[:ctx.rows] = g
            return out, None

    class Identity(base):
        """A copy of ``a`` (so the result is not a leaf)."""

        @staticmethod
        def forward(ctx: Any, a: Any) -> np.ndarray:
            return a.data.copy()

        @staticmethod
        def backward(ctx: Any, g: np.ndarray) -> np.ndarray:
            return g

    fns = {policy: make(f"Probe_{policy}", policy) for policy in
           ("lower_precision", "fp32", "promote", "none")}
    fns["inplace_lower_precision"] = make("Probe_inplace", "lower_precision", inplace=True)
    fns["narrow"], fns["identity"] = Narrow, Identity
    _Cache[id(tt)] = (fns, log)
    return fns, log


def _reset(log: _Log) -> None:
    log.forward.clear()
    log.backward.clear()


def _argument(tt: Any, spec: list[Any]) -> Any:
    """["tensor", dtype, requires_grad, value], ["number", v] or ["none"]."""
    if spec[0] == "number":
        return spec[1]
    if spec[0] == "none":
        return None
    value = np.asarray(spec[3]).astype(getattr(tt, spec[1]).np)
    tensor = tt.Tensor(value)
    return tensor.requires_grad_() if spec[2] else tensor


def _region(tt: Any, spec: dict[str, Any]) -> Any:
    kwargs = {}
    if spec.get("dtype") is not None:
        kwargs["dtype"] = getattr(tt, spec["dtype"])
    if "enabled" in spec:
        kwargs["enabled"] = spec["enabled"]
    if "cache_enabled" in spec:
        kwargs["cache_enabled"] = spec["cache_enabled"]
    return tt.amp.autocast(spec.get("device", "cuda"), **kwargs)


@probe
def policy_casts(tt: Any, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each case: the probe Function of ``policy`` called with ``args`` inside
    ``tt.amp.autocast("cuda", dtype=...)``: what its forward received and its output."""
    fns, log = recorders(tt)
    found = []
    for case in cases:
        _reset(log)
        args = [_argument(tt, a) for a in case["args"]]
        with _region(tt, {"dtype": case["autocast_dtype"]}):
            out = fns[case["policy"]].apply(*args)
        received = log.forward[0]["kinds"] if log.forward else None
        found.append({"received": received, "output": _kind(out),
                      "same_object": out is args[0]})
    return found


@probe
def regions(tt: Any, script: list[list[Any]], value: np.ndarray) -> list[Any]:
    """Play a script of nested regions and calls: ["enter", region spec], ["exit"],
    ["call", policy, input dtype] (the probe Function of that policy on a fresh tensor of
    that dtype), ["state"] (is_autocast_enabled(), get_autocast_dtype()),
    ["decorated", region spec, policy, dtype] (a function decorated with the region).
    Returns one record per call/state step."""
    fns, log = recorders(tt)
    stack: list[Any] = []
    records: list[Any] = []

    def call(policy: str, dtype: str) -> str:
        _reset(log)
        out = fns[policy].apply(tt.Tensor(np.asarray(value).astype(getattr(tt, dtype).np)))
        return log.forward[0]["kinds"][0] + "->" + _kind(out)

    for step in script:
        if step[0] == "enter":
            region = _region(tt, step[1])
            region.__enter__()
            stack.append(region)
        elif step[0] == "exit":
            stack.pop().__exit__(None, None, None)
        elif step[0] == "call":
            records.append(call(step[1], step[2]))
        elif step[0] == "state":
            records.append([bool(tt.amp.is_autocast_enabled()),
                            str(tt.amp.get_autocast_dtype()).removeprefix("tinytrain.")])
        elif step[0] == "decorated":
            decorated = _region(tt, step[1])(call)
            records.append(decorated(step[2], step[3]))
    while stack:
        stack.pop().__exit__(None, None, None)
    return records


@probe
def cache(tt: Any, value: np.ndarray) -> dict[str, Any]:
    """Which casts are cached: whether two lower-precision calls in one region receive
    the very same cast tensor, for a float32 parameter and for tensors that must not be
    cached; whether the cache survives nested regions and is gone in the next region;
    and the parameter's gradient through the cached cast."""
    fns, log = recorders(tt)
    lp = fns["lower_precision"]

    def tensor(dtype: str = "float32", requires_grad: bool = True) -> Any:
        t = tt.Tensor(np.asarray(value).astype(getattr(tt, dtype).np))
        return t.requires_grad_() if requires_grad else t

    def received(fn: Any, x: Any) -> Any:
        _reset(log)
        out = fn.apply(x)
        return log.forward[0]["objects"][0], out

    def twice_same(x: Any, fn: Any = lp, **region: Any) -> bool:
        with _region(tt, region):
            first, _ = received(fn, x)
            second, _ = received(fn, x)
        return first is second

    w = tensor()
    out: dict[str, Any] = {}
    out["parameter"] = twice_same(w)
    out["requires_grad_false"] = twice_same(tensor(requires_grad=False))
    out["non_leaf"] = twice_same(fns["identity"].apply(tensor()))
    out["view"] = twice_same(fns["narrow"].apply(tensor(), 1))
    out["cache_enabled_false"] = twice_same(w, cache_enabled=False)
    out["fp32_policy_cast"] = twice_same(tensor("bfloat16"), fns["fp32"])
    out["float64"] = twice_same(tensor("float64"))
    out["other_dtype_region"] = twice_same(w, dtype="bfloat16")
    with _region(tt, {}):
        first, a = received(lp, w)
        with _region(tt, {"enabled": False}):
            plain, _ = received(lp, w)
        with _region(tt, {}):
            inner, b = received(lp, w)
        after_inner, c = received(lp, w)
    with _region(tt, {}):
        next_region, d = received(lp, w)
    out["disabled_region_gets_parameter"] = plain is w
    out["nested_region_hits"] = inner is first
    out["after_nested_exit_hits"] = after_inner is first
    out["next_region_misses"] = next_region is not first
    out["cast_dtype"] = _kind(first)
    for y in (a, b, c, d):  # the gradient reaches w through the cached cast, each time
        y.backward(tt.Tensor(np.ones(y.shape, y.data.dtype)))
    out["grad"] = None if w._grad is None else array(w._grad)
    out["grad_dtype"] = None if w._grad is None else str(w._grad.data.dtype)
    return out


@probe
def backward_dtypes(tt: Any, value: np.ndarray, autocast_dtype: str) -> dict[str, Any]:
    """Under autocast: h = lower_precision(x), y = fp32(h), z = none(y), then outside the
    region z.backward(): the gradient dtype each Function's backward received, and the
    leaves' gradient dtypes (x float32, b float64)."""
    fns, log = recorders(tt)
    _reset(log)
    x = tt.Tensor(np.asarray(value, dtype=np.float32)).requires_grad_()
    b = tt.Tensor(np.asarray(value, dtype=np.float64)).requires_grad_()
    with _region(tt, {"dtype": autocast_dtype}):
        h = fns["lower_precision"].apply(x)
        y = fns["fp32"].apply(h)
        z = fns["none"].apply(y)
        e = fns["lower_precision"].apply(b)
    forward = {"h": _kind(h), "y": _kind(y), "z": _kind(z), "e": _kind(e)}
    z.backward(tt.Tensor(np.ones(z.shape, z.data.dtype)))
    e.backward(tt.Tensor(np.ones(e.shape, e.data.dtype)))
    return {"forward": forward, "backward": [[r["fn"], r["grad"]] for r in log.backward],
            "x_grad": _kind(x._grad), "b_grad": _kind(b._grad)}


@probe
def inplace_and_explicit(tt: Any, value: np.ndarray) -> dict[str, Any]:
    """Under ``autocast("cuda")``: in-place ops keep their target's dtype (the student's
    add_/mul_, and the probes' in-place Function that declares a casting policy); calls
    with an explicit dtype run in it; the same calls without one, for contrast."""
    fns, _ = recorders(tt)

    def t(dtype: str) -> Any:
        return tt.Tensor(np.asarray(value).astype(getattr(tt, dtype).np))

    out: dict[str, Any] = {}
    with tt.amp.autocast("cuda"):
        a = t("float32")
        out["inplace_probe"] = [_kind(fns["inplace_lower_precision"].apply(a)),
                                fns["inplace_lower_precision"].apply(a) is a]
        b = t("float32")
        b.add_(t("float16"))
        c = t("float16")
        c.mul_(t("float32"))
        out["add_"], out["mul_"] = _kind(b), _kind(c)
        x32, x16 = t("float32"), t("float16")
        out["softmax"] = _kind(tt.softmax(x16, 0))
        out["softmax_dtype_float16"] = _kind(tt.softmax(x32, 0, dtype=tt.float16))
        out["log_softmax"] = _kind(tt.log_softmax(x16, 0))
        out["log_softmax_dtype_float64"] = _kind(tt.log_softmax(x32, 0, dtype=tt.float64))
        out["sum"] = _kind(tt.sum(x16))
        out["sum_dtype_float16"] = _kind(tt.sum(x16, dtype=tt.float16))
        out["sum_dtype_bfloat16"] = _kind(x32.sum(0, dtype=tt.bfloat16))
    return out


@probe
def arguments(tt: Any, value: np.ndarray) -> dict[str, Any]:
    """tt.autocast is tt.amp.autocast; both device types apply the policy, float16 by
    default; unsupported device types and dtypes; autocast state inside and outside."""
    fns, _log = recorders(tt)
    x = tt.Tensor(np.asarray(value, dtype=np.float32))

    def lp() -> str:
        return _kind(fns["lower_precision"].apply(x))

    out: dict[str, Any] = {"same_class": tt.autocast is tt.amp.autocast,
                           "outside": [bool(tt.amp.is_autocast_enabled()), lp()]}
    for device in ("cuda", "cpu"):
        with tt.autocast(device):
            out[device] = [bool(tt.amp.is_autocast_enabled()),
                           str(tt.amp.get_autocast_dtype()).removeprefix("tinytrain."), lp()]
    out["bad_device"] = raised(lambda: tt.amp.autocast("tpu"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tt.amp.autocast("cuda", dtype=tt.float64):
            out["float64_region"] = [bool(tt.amp.is_autocast_enabled()), lp()]
    out["float64_warning"] = [str(w.message) for w in caught]
    out["after"] = [bool(tt.amp.is_autocast_enabled()), lp()]
    return out


@probe
def op_dtypes(tt: Any, call: str, cases: list[list[Any]]) -> list[Any]:
    """An op-table call inside ``tt.amp.autocast("cuda", dtype=...)`` for each case
    ``[args, kwargs, autocast dtype]``: the dtype of each output (graph recording stubbed
    out: assignment 1 is not needed)."""
    found = []
    for args, kwargs, dtype in cases:
        inputs = _Inputs(tt, args, kwargs, requires_grad=False)
        with tt.amp.autocast("cuda", dtype=getattr(tt, dtype)):
            result, _ = _run_isolated(tt, call, inputs)
        found.append([_kind(o) for o in _outputs(result)])
    return found
