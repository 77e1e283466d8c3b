"""Probes for task 4.2: ``tt.amp.autocast``.

Most of them apply Functions of their own that declare an ``autocast_policy`` and record
what reaches them: the dtype (and identity) of each argument forward receives, and the
dtype of the gradient backward receives. They compute nothing in float32 themselves
(``opmath = False``), so these checks depend neither on the student's operators
(assignment 2) nor on task 4.1's float32 opmath. Grad mode is switched through the
framework's own state holder (not ``tt.no_grad``, task 1.3), and in-place calls stop at
``apply_inplace`` (task 3.1) once autocast has had its say. The op-table probe
(``op_dtypes``) runs the student's operators, with graph recording stubbed out and
task 4.1's opmath stood in for (``_plain_low_precision``). What still rests on task 4.1:
backward through autocast's casts (the cast's backward) and a low-precision tensor with
a Python scalar (``x16 * 2.0``: the scalar path of ``apply_binary``).
"""

from __future__ import annotations

import contextlib
import importlib
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from . import probe
from ._observe import raised
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
            log.forward.append({"fn": name, "kinds": ctx.kinds, "objects": list(args)})
            return args[0].data if inplace else args[0].data.copy()

        def backward(ctx: Any, g: np.ndarray) -> tuple[Any, ...]:
            log.backward.append({"fn": name, "grad": str(g.dtype)})
            return tuple(None if kind in ("None", "int", "float") or "int" in kind else g
                         for kind in ctx.kinds)

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


def _argument(tt: Any, spec: list[Any], value: np.ndarray) -> Any:
    """["tensor", dtype, requires_grad], ["number", v] or ["none"]."""
    if spec[0] == "number":
        return spec[1]
    if spec[0] == "none":
        return None
    tensor = tt.Tensor(np.asarray(value).astype(getattr(tt, spec[1]).np))
    return tensor.requires_grad_() if spec[2] else tensor


def _region(tt: Any, spec: dict[str, Any]) -> Any:
    kwargs = {}
    if spec.get("dtype") is not None:
        kwargs["dtype"] = getattr(tt, spec["dtype"])
    for name in ("enabled", "cache_enabled"):
        if name in spec:
            kwargs[name] = spec[name]
    return tt.amp.autocast(spec.get("device", "cuda"), **kwargs)


def _grad_mode(tt: Any, enabled: bool) -> None:
    """Switch grad mode through the framework's state holder (not tt.no_grad: task 1.3)."""
    tt.autograd.grad_mode._state.grad_enabled = enabled


@probe
def policy_casts(tt: Any, cases: list[dict[str, Any]], value: np.ndarray) -> list[Any]:
    """Each case: the probe Function of ``policy`` called with ``args`` inside
    ``tt.amp.autocast("cuda", dtype=...)``: the kind of each argument its forward
    received, or what the call raised."""
    fns, log = recorders(tt)
    found: list[Any] = []
    for case in cases:
        _reset(log)
        args = [_argument(tt, a, value) for a in case["args"]]

        def call(args: list[Any] = args, case: dict[str, Any] = case) -> None:
            with _region(tt, {"dtype": case["autocast_dtype"]}):
                fns[case["policy"]].apply(*args)

        error = raised(call)
        if error["type"] is not None:
            found.append({"error": error["type"], "message": error["message"]})
        else:
            found.append({"received": log.forward[0]["kinds"] if log.forward else None})
    return found


class _RaisedInside(Exception):
    """The exception a ["raise"] step raises inside a region."""


@probe
def regions(tt: Any, script: list[list[Any]], value: np.ndarray) -> list[Any]:
    """Play a script of nested regions and calls: ["enter", region spec], ["exit"],
    ["call", policy, input dtype] (the probe Function of that policy on a fresh tensor of
    that dtype), ["state"] (is_autocast_enabled(), get_autocast_dtype()),
    ["decorated", region spec, policy, dtype] (a function decorated with the region),
    ["raise"] (the innermost region left through an exception raised inside it).
    Returns one record per call/state/raise step: "received->output" dtypes, the state,
    or whether the exception propagated."""
    fns, log = recorders(tt)
    stack: list[Any] = []
    records: list[Any] = []

    def call(policy: str, dtype: str) -> str:
        _reset(log)
        out = fns[policy].apply(tt.Tensor(np.asarray(value).astype(getattr(tt, dtype).np)))
        return log.forward[0]["kinds"][0] + "->" + _kind(out)

    try:
        for step in script:
            if step[0] == "enter":
                region = _region(tt, step[1])
                region.__enter__()
                stack.append(region)
            elif step[0] == "exit":
                stack.pop().__exit__(None, None, None)
            elif step[0] == "raise":
                # what ``with`` does when the block raises: __exit__ gets the exception
                # and a true result would swallow it
                try:
                    raise _RaisedInside("raised inside the region")
                except _RaisedInside as exc:
                    swallowed = stack.pop().__exit__(type(exc), exc, exc.__traceback__)
                records.append("exception swallowed" if swallowed else "exception propagated")
            elif step[0] == "call":
                records.append(call(step[1], step[2]))
            elif step[0] == "state":
                records.append([bool(tt.amp.is_autocast_enabled()),
                                str(tt.amp.get_autocast_dtype()).removeprefix("tinytrain.")])
            elif step[0] == "decorated":
                decorated = _region(tt, step[1])(call)
                records.append(decorated(step[2], step[3]))
    finally:
        while stack:
            stack.pop().__exit__(None, None, None)
    return records


@probe
def cache(tt: Any, value: np.ndarray) -> dict[str, Any]:
    """Which casts are cached: whether two lower-precision calls in one region receive
    the very same cast tensor, for a float32 parameter and for tensors that must not be
    cached; whether the cache survives nested (and disabled) regions and is gone in the
    next region; a cast cached under no_grad; and whether each cast the probe Function
    received is recorded in the graph with the parameter behind it."""
    fns, log = recorders(tt)
    lp = fns["lower_precision"]

    def tensor(dtype: str = "float32", requires_grad: bool = True) -> Any:
        t = tt.Tensor(np.asarray(value).astype(getattr(tt, dtype).np))
        return t.requires_grad_() if requires_grad else t

    def received(fn: Any, x: Any) -> Any:
        _reset(log)
        fn.apply(x)
        return log.forward[0]["objects"][0]

    def twice_same(x: Any, fn: Any = lp, **region: Any) -> bool:
        with _region(tt, region):
            first = received(fn, x)
            second = received(fn, x)
        return first is second

    def from_parameter(cast: Any, w: Any) -> bool:
        """``cast`` is recorded: its grad_fn leads straight to w's gradient accumulator."""
        node = getattr(cast, "grad_fn", None)
        edges = getattr(node, "next_functions", ())
        return bool(edges) and getattr(edges[0][0], "variable", None) is w

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
        first = received(lp, w)
        with _region(tt, {"enabled": False}):
            plain = received(lp, w)
            with _region(tt, {}):
                under_disabled = received(lp, w)
        with _region(tt, {}):
            inner = received(lp, w)
        after_inner = received(lp, w)
    with _region(tt, {}):
        next_region = received(lp, w)
    out["cast_dtype"] = _kind(first)
    out["disabled_region_gets_parameter"] = plain is w
    out["enabled_under_disabled_hits"] = under_disabled is first
    out["nested_region_hits"] = inner is first
    out["after_nested_exit_hits"] = after_inner is first
    out["next_region_misses"] = next_region is not first
    out["recorded"] = [from_parameter(c, w) for c in (first, next_region)]
    w2 = tensor()
    with _region(tt, {}):
        _grad_mode(tt, False)
        try:
            quiet = received(lp, w2)
        finally:
            _grad_mode(tt, True)
        loud = received(lp, w2)
    out["no_grad_then_grad_hits"] = quiet is loud
    out["no_grad_cast_recorded"] = from_parameter(loud, w2)
    # weights of one shape in one region: each gets its own cast (the cache is keyed by
    # the weight)
    wb = tt.Tensor(np.asarray(value, dtype=np.float32) * 2).requires_grad_()
    wc = tt.Tensor(np.asarray(value, dtype=np.float32) * 3).requires_grad_()
    with _region(tt, {}):
        received(lp, tensor())
        cb, cc = received(lp, wb), received(lp, wc)
        out["weights_keep_their_casts"] = [
            received(lp, wb) is cb, cc is not cb,
            bool(np.array_equal(cb.data, (np.asarray(value) * 2).astype(np.float16))),
            bool(np.array_equal(cc.data, (np.asarray(value) * 3).astype(np.float16)))]
    return out


@probe
def backward_dtypes(tt: Any, value: np.ndarray, autocast_dtype: str) -> dict[str, Any]:
    """Under autocast: h = lower_precision(x), y = fp32(h), z = none(y), e =
    lower_precision(b); then, outside the region, backward from z and from e: the dtypes
    in forward, the gradient dtype each Function's backward received (in order), and the
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
    """Under ``autocast("cuda")``: what an in-place Function that declares a casting policy
    receives (in-place ops are never autocast; the call stops at apply_inplace, task 3.1),
    and the output dtypes of softmax/log_softmax/sum with and without an explicit dtype
    (with one, the op runs in it; float32 opmath stood in for, see
    ``_plain_low_precision``)."""
    fns, _log = recorders(tt)
    inplace = importlib.import_module(f"{tt.__name__}.autograd.inplace")
    seen: list[list[str]] = []

    def stop(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        seen.append([_kind(a) for a in args])
        return args[0]

    def t(dtype: str) -> Any:
        return tt.Tensor(np.asarray(value).astype(getattr(tt, dtype).np))

    out: dict[str, Any] = {}
    original = inplace.apply_inplace
    inplace.apply_inplace = stop
    try:
        with tt.amp.autocast("cuda"):
            fns["inplace_lower_precision"].apply(t("float32"), t("float32"))
            fns["inplace_lower_precision"].apply(t("bfloat16"), t("float32"))
    finally:
        inplace.apply_inplace = original
    out["inplace_received"] = seen
    with _plain_low_precision(tt), tt.amp.autocast("cuda"):
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
    default; an unsupported device type raises; an unsupported dtype on "cpu" warns and
    disables the region; the state outside, inside and after."""
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
        with tt.amp.autocast("cpu", dtype=tt.float64):
            out["float64_region"] = [bool(tt.amp.is_autocast_enabled()), lp()]
    out["float64_warning"] = [str(w.message) for w in caught]
    out["after"] = [bool(tt.amp.is_autocast_enabled()), lp()]
    return out


@contextlib.contextmanager
def _plain_low_precision(tt: Any) -> Iterator[None]:
    """Function.apply's float32 opmath (task 4.1) stood in for: a call whose result is
    float16/bfloat16 runs forward on its inputs as they are and has its floating point
    outputs converted with the framework's own ``_round_to``. The output dtypes are those
    opmath gives (task 4.1's graders check its values and dtypes), so autocast's dtypes
    are graded even while task 4.1 is unfinished."""
    function = importlib.import_module(f"{tt.__name__}.amp.opmath")
    original, round_to = function.forward_in_float32, function._round_to

    def as_is(cls: Any, ctx: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
              dtype: np.dtype) -> Any:
        with np.errstate(all="ignore"):
            result = cls.forward(ctx, *args, **kwargs)
        if isinstance(result, tuple):
            return tuple(round_to(r, dtype) for r in result)
        return round_to(result, dtype)

    function.forward_in_float32 = as_is
    try:
        yield
    finally:
        function.forward_in_float32 = original


@probe
def op_dtypes(tt: Any, call: str, cases: list[list[Any]]) -> list[Any]:
    """An op-table call inside ``tt.amp.autocast("cuda", dtype=...)`` for each case
    ``[args, kwargs, autocast dtype]``: the dtype of each output, or what the call
    raised (graph recording stubbed out: assignment 1 is not needed; float32 opmath
    stood in for: see ``_plain_low_precision``)."""
    found: list[Any] = []
    for args, kwargs, dtype in cases:
        inputs = _Inputs(tt, args, kwargs, requires_grad=False)
        result: list[Any] = []

        def run(inputs: _Inputs = inputs, dtype: str = dtype, result: list[Any] = result) -> None:
            with _plain_low_precision(tt), tt.amp.autocast("cuda", dtype=getattr(tt, dtype)):
                out, _ = _run_isolated(tt, call, inputs)
            result.append([_kind(o) for o in _outputs(out)])

        error = raised(run)
        found.append(result[0] if error["type"] is None else
                     {"error": error["type"], "message": error["message"]})
    return found
