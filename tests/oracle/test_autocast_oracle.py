"""The autocast facts task 4.2's graders encode (graders/oracle/autocast.py) hold in the
installed torch, without a GPU:

- torch's CUDA autocast kernels run on fake CUDA tensors (FakeTensorMode: no memory, no
  GPU) once the CUDA autocast state is switched on by hand, so the op table's categories
  and the promote and explicit-dtype rules are checked against the real CUDA policy;
- the weight-cast cache and the region state are device independent in torch (CPU
  autocast shares cached_cast and the nesting count with CUDA), so they are checked with
  torch.autocast("cpu").
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode

from graders.optable import OPS
from graders.oracle import autocast as oracle
from graders.oracle import precision
from graders.strategies.autocast import INPUT_MODES, LOW, input_dtypes, region_scripts
from graders.strategies.ops import Draw

FAST = settings(max_examples=3, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))
TORCH = precision.TORCH_DTYPES


@contextlib.contextmanager
def fake_cuda_autocast(dtype: str):
    """CUDA autocast switched on by hand (torch.autocast("cuda") refuses without a GPU),
    inside a FakeTensorMode where tensors may live on a fake "cuda" device."""
    with FakeTensorMode():
        prev = torch.is_autocast_enabled("cuda"), torch.get_autocast_dtype("cuda")
        torch.set_autocast_enabled("cuda", True)
        torch.set_autocast_dtype("cuda", TORCH[dtype])
        try:
            yield
        finally:
            torch.set_autocast_enabled("cuda", prev[0])
            torch.set_autocast_dtype("cuda", prev[1])


def fake(x: Any) -> Any:
    """A fake CUDA tensor with ``x``'s shape, strides and dtype (lists and tuples too)."""
    if isinstance(x, torch.Tensor):
        return torch.empty_strided(tuple(x.shape), x.stride(), dtype=x.dtype, device="cuda")
    if isinstance(x, list):
        return [fake(v) for v in x]
    if isinstance(x, tuple):
        return tuple(fake(v) for v in x)
    return x


def cuda_autocast_dtypes(op: Any, sample: Any, dtype: str) -> list[str] | None:
    args, kwargs, _ = precision.torch_args(sample, requires_grad=False)
    try:
        with fake_cuda_autocast(dtype):
            out = op.torch(*fake(args), **{k: fake(v) for k, v in kwargs.items()})
    except RuntimeError as exc:  # data-dependent calls need a real device
        if "not linked with support for cuda" in str(exc):
            return None
        raise
    outs = list(out) if isinstance(out, tuple) else [out]
    return [str(o.dtype).removeprefix("torch.") for o in outs]


@pytest.mark.parametrize("op", OPS, ids=[op.name for op in OPS])
def test_op_table_categories_follow_cuda_autocast(op):
    """For every op: the output dtypes the graders expect (inputs cast per the op's
    category, op run on the CPU) are those of torch's CUDA autocast kernels."""
    compared = []

    @FAST
    @given(data=st.data())
    def check(data):
        d = Draw(data)
        base = op.sample(d, np.dtype(np.float32))
        n = len(oracle.float_tensors(base))
        for autocast_dtype in LOW:
            for mode in INPUT_MODES:
                if mode == "mixed" and n < 2:
                    continue
                dtypes = input_dtypes(data.draw, mode, n, autocast_dtype)
                sample = oracle.with_dtypes(base, dtypes)
                expected = oracle.autocast_dtypes(op, sample, autocast_dtype)
                found = cuda_autocast_dtypes(op, sample, autocast_dtype)
                if found is None:
                    continue
                compared.append(mode)
                assert expected == found, (op.name, autocast_dtype, mode)

    check()
    if op.name != "getitem":  # indexing a fake CUDA tensor needs the device
        assert compared, f"{op.name}: no sample could run on fake CUDA tensors"


def test_promote_rule_and_explicit_dtypes_follow_cuda_autocast():
    """promote (addcmul is in torch's promote list): float32 wins, the autocast dtype
    alone stays, another low-precision type raises; explicit dtypes are kept."""
    with fake_cuda_autocast("float16"):
        x = torch.empty(3, device="cuda")
        h, b = x.half(), x.bfloat16()
        assert torch.addcmul(h, h, x).dtype == torch.float32
        assert torch.addcmul(h, h, h).dtype == torch.float16
        with pytest.raises(RuntimeError, match="Unexpected floating ScalarType"):
            torch.addcmul(b, b, b)
        found = {
            "softmax": torch.softmax(h, 0), "softmax_dtype_float16":
            torch.softmax(x, 0, dtype=torch.float16), "log_softmax": torch.log_softmax(h, 0),
            "log_softmax_dtype_float64": torch.log_softmax(x, 0, dtype=torch.float64),
            "sum": torch.sum(h), "sum_dtype_float16": torch.sum(h, dtype=torch.float16),
            "sum_dtype_bfloat16": x.sum(0, dtype=torch.bfloat16)}
        dtypes = {k: str(v.dtype).removeprefix("torch.") for k, v in found.items()}
        a = x.clone()
        a.add_(h)  # in-place: never autocast, the target keeps its dtype
        assert a.dtype == torch.float32
    with fake_cuda_autocast("bfloat16"):  # argument order matters: h then x raises
        x = torch.empty(3, device="cuda")
        h = x.half()
        assert torch.addcmul(x, h, h).dtype == torch.float32
        with pytest.raises(RuntimeError, match="Unexpected floating ScalarType"):
            torch.addcmul(h, h, x)
    f16, f32, b16 = (["tensor", d, False] for d in ("float16", "float32", "bfloat16"))
    assert oracle.received("promote", [f16, f32], "float16") == {"received": ["float32"] * 2}
    assert oracle.received("promote", [b16, b16], "float16") == {"error": "RuntimeError"}
    assert oracle.received("promote", [f16, f32], "bfloat16") == {}  # order-dependent
    assert oracle.received("promote", [f32, f16], "bfloat16") == {}
    assert dtypes == {"softmax": "float32", "softmax_dtype_float16": "float16",
                      "log_softmax": "float32", "log_softmax_dtype_float64": "float64",
                      "sum": "float32", "sum_dtype_float16": "float16",
                      "sum_dtype_bfloat16": "bfloat16"}


class CastLog(TorchDispatchMode):
    """Counts the casts (aten._to_copy) run while it is active."""

    def __init__(self) -> None:
        super().__init__()
        self.casts = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._to_copy.default:
            self.casts += 1
        return func(*args, **(kwargs or {}))


def _cast_node(y: torch.Tensor) -> Any:
    """The node of the cast that fed the weight (mm's second input) into ``y``."""
    return y.grad_fn.next_functions[1][0]


def test_cache_facts_hold_in_torch():
    """graders.oracle.autocast.CACHE, observed in torch (CPU autocast, float16; mm is in
    the CPU lower-precision list too, mse_loss in its float32 list)."""
    x = torch.rand(2, 3, dtype=torch.float16)

    def autocast(**kwargs: Any) -> Any:
        return torch.autocast("cpu", **{"dtype": torch.float16, **kwargs})

    def twice_same(w: torch.Tensor, op: Any = None, **region: Any) -> bool:
        xx = x.to(region.get("dtype", torch.float16))  # in the region's dtype: never cast
        op = op or (lambda t: xx @ t if t.dtype != torch.float64 else t @ t)
        with autocast(**region):
            op(w)
            with CastLog() as log:
                op(w)
        return log.casts == 0

    w = torch.rand(3, 3, requires_grad=True)
    found = {
        "parameter": twice_same(w),
        "requires_grad_false": twice_same(torch.rand(3, 3)),
        "non_leaf": twice_same(torch.rand(3, 3, requires_grad=True) * 1),
        "view": twice_same(torch.rand(4, 3, requires_grad=True)[:3]),
        "cache_enabled_false": twice_same(w, cache_enabled=False),
        "fp32_policy_cast": twice_same(
            torch.rand(3, dtype=torch.bfloat16, requires_grad=True),
            lambda t: torch.nn.functional.mse_loss(t, t.detach())),
        "float64": twice_same(torch.rand(3, 3, dtype=torch.float64, requires_grad=True)),
        "other_dtype_region": twice_same(w, dtype=torch.bfloat16),
    }
    with autocast():
        first = x @ w
        found["cast_dtype"] = str(first.dtype).removeprefix("torch.")
        with autocast(enabled=False):
            plain = x.float() @ w
            with autocast():
                under_disabled = x @ w
        with autocast():
            inner = x @ w
        after_inner = x @ w
    with autocast():
        next_region = x @ w
    found["disabled_region_gets_parameter"] = _cast_node(plain) is not None and \
        type(_cast_node(plain)).__name__ == "AccumulateGrad"
    found["enabled_under_disabled_hits"] = _cast_node(under_disabled) is _cast_node(first)
    found["nested_region_hits"] = _cast_node(inner) is _cast_node(first)
    found["after_nested_exit_hits"] = _cast_node(after_inner) is _cast_node(first)
    found["next_region_misses"] = _cast_node(next_region) is not _cast_node(first)
    found["recorded"] = [_cast_node(y).next_functions[0][0].variable is w
                         for y in (first, next_region)]
    w2 = torch.rand(3, 3, requires_grad=True)
    with autocast():
        with torch.no_grad(), CastLog() as quiet:
            x @ w2
        with CastLog() as loud:
            y = x @ w2
    found["no_grad_then_grad_hits"] = quiet.casts == 1 and loud.casts == 0
    found["no_grad_cast_recorded"] = _cast_node(y).next_functions[0][0].variable is w2
    base = torch.rand(3, 3)
    wb = (base * 2).requires_grad_()
    wc = (base * 3).requires_grad_()
    with autocast():
        x @ w
        yb, yc, yb_again = x @ wb, x @ wc, x @ wb
        cb, cc = _cast_node(yb), _cast_node(yc)
    # each product is x times its own weight's float16 cast
    found["weights_keep_their_casts"] = [
        _cast_node(yb_again) is cb, cc is not cb,
        torch.equal(yb, x @ (base * 2).half()), torch.equal(yc, x @ (base * 3).half())]
    assert found == oracle.CACHE


@FAST
@given(script=region_scripts())
def test_region_states_follow_torch(script):
    """The state queries of a region script (graders.oracle.autocast.script_records) are
    torch's is_autocast_enabled / get_autocast_dtype, played with torch.autocast("cpu"),
    and an exception raised inside a region propagates out of it
    (torch's CPU default dtype is bfloat16; tinytrain's is float16 everywhere, so the
    script starts from float16)."""
    expected = [r for r in oracle.script_records(script) if isinstance(r, list)
                or r.startswith("exception")]
    found, stack = [], []
    prev = torch.get_autocast_dtype("cpu")
    torch.set_autocast_dtype("cpu", torch.float16)
    try:
        for step in script:
            if step[0] == "enter":
                spec = step[1]
                kwargs = {"enabled": spec["enabled"]}
                if spec.get("dtype"):
                    kwargs["dtype"] = TORCH[spec["dtype"]]
                region = torch.autocast("cpu", **kwargs)
                region.__enter__()
                stack.append(region)
            elif step[0] == "exit":
                stack.pop().__exit__(None, None, None)
            elif step[0] == "raise":  # the region left by an exception raised inside it
                region = stack.pop()
                try:
                    with contextlib.ExitStack() as inside:
                        inside.push(region)
                        raise LookupError("inside")
                except LookupError:
                    found.append("exception propagated")
                else:
                    found.append("exception swallowed")
            elif step[0] == "state":
                found.append([torch.is_autocast_enabled("cpu"),
                              str(torch.get_autocast_dtype("cpu")).removeprefix("torch.")])
    finally:
        while stack:
            stack.pop().__exit__(None, None, None)
        torch.set_autocast_dtype("cpu", prev)
    assert found == expected
