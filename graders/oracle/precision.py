"""Mixed precision in PyTorch, for assignment 4's graders: op-table samples run with their
floating point tensors in another dtype, torch's CUDA autocast policy applied on the CPU
(the inputs cast per the op's category, then the op run in those dtypes), and small
reference computations (casts, float32-accumulating matmul, opmath with scalars).

There is no GPU here, and torch's *CPU* autocast follows other lists (it keeps softmax in
low precision, for one). tinytrain follows the CUDA policy on every device, so the
expectation is built as torch's CUDA autocast wrappers do it (aten/src/ATen/
autocast_mode.h): "lower_precision" casts every eligible input to the autocast dtype,
"fp32" to float32, "promote" to float32 if any eligible input is float32 (else the
autocast dtype), "none" casts nothing; eligible means floating point and not float64.
tests/test_autocast_policy.py checks the op table's categories against torch's own
AutocastCUDA kernels (on fake CUDA tensors).
"""

from __future__ import annotations

import copy
from typing import Any

import ml_dtypes
import numpy as np
import torch

from ..optable.spec import OpInfo
from ..strategies.ops import Index, Sample, T
from .ops import _with_layout

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
LOW = ("float16", "bfloat16")
TORCH_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16,
                "float32": torch.float32, "float64": torch.float64}
NUMPY_DTYPES = {"float16": np.dtype(np.float16), "bfloat16": BFLOAT16,
                "float32": np.dtype(np.float32), "float64": np.dtype(np.float64)}
# a dtype's epsilon: the gap between 1 and the next value (2**-mantissa bits)
EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52}


def numpy_of(t: torch.Tensor) -> np.ndarray:
    """A torch tensor as a NumPy array of the same dtype (bfloat16 through ml_dtypes)."""
    t = t.detach()
    if t.dtype == torch.bfloat16:
        return t.float().numpy().astype(BFLOAT16)
    return np.array(t.numpy(), copy=True)


def torch_of(value: np.ndarray, layout: str = "contiguous") -> torch.Tensor:
    """A NumPy array (bfloat16 too) as a torch tensor with the probe's memory layout."""
    value = np.asarray(value)
    if value.dtype == BFLOAT16:
        return _with_layout(value.astype(np.float32), layout).bfloat16()
    return _with_layout(value, layout)


def float_tensors(sample: Sample) -> list[T]:
    return [t for t in sample.tensors() if t.value.dtype.kind == "f" or t.value.dtype == BFLOAT16]


def in_dtype(sample: Sample, dtype: str) -> Sample:
    """A copy of ``sample`` whose floating point tensors hold their values rounded to
    ``dtype`` (stored in that dtype)."""
    out = copy.deepcopy(sample)
    for t in float_tensors(out):
        with np.errstate(over="ignore"):
            t.value = np.asarray(t.value).astype(NUMPY_DTYPES[dtype])
    return out


def cast_by_policy(dtype: str, category: str, autocast_dtype: str,
                   tensor_dtypes: list[str]) -> list[str]:
    """The dtype each floating point input of an op of ``category`` has once torch's CUDA
    autocast (with ``autocast_dtype``) has cast it; float64 inputs are never cast."""
    eligible = [d for d in tensor_dtypes if d != "float64"]
    if category == "lower_precision":
        target = autocast_dtype
    elif category == "fp32":
        target = "float32"
    elif category == "promote":
        target = "float32" if "float32" in eligible else autocast_dtype
    else:
        return list(tensor_dtypes)
    return [target if d != "float64" else d for d in tensor_dtypes]


def _torch_args(sample: Sample, requires_grad: bool, cast: dict[int, str] | None = None
                ) -> tuple[list[Any], dict[str, Any], list[torch.Tensor]]:
    """The sample as torch arguments; ``cast`` maps ``id(T)`` to a dtype each float tensor
    is cast to (differentiably, as autocast does) after being made a leaf."""
    leaves: list[torch.Tensor] = []

    def convert(x: Any) -> Any:
        if isinstance(x, T):
            tensor = torch_of(x.value, x.layout)
            is_float = tensor.is_floating_point()
            if x.grad and requires_grad and is_float:
                tensor.requires_grad_(True)
                leaves.append(tensor)
            if cast is not None and is_float and id(x) in cast:
                tensor = tensor.to(TORCH_DTYPES[cast[id(x)]])
            return tensor
        if isinstance(x, Index):
            return x.items
        if isinstance(x, list):
            return [convert(v) for v in x]
        if isinstance(x, tuple):
            return tuple(convert(v) for v in x)
        return x

    args = [convert(a) for a in sample.args]
    kwargs = {k: convert(v) for k, v in sample.kwargs.items()}
    return args, kwargs, leaves


def _outputs(result: Any) -> list[torch.Tensor]:
    return list(result) if isinstance(result, tuple) else [result]


def run(op: OpInfo, sample: Sample, grads: list[np.ndarray | None] | None = None,
        cast: dict[int, str] | None = None) -> dict[str, Any]:
    """torch's outputs (and, with ``grads``, the gradient of each differentiable input)
    for the sample as it is (its tensors in their own dtypes), its float tensors cast
    per ``cast`` first."""
    args, kwargs, leaves = _torch_args(sample, grads is not None, cast)
    outs = _outputs(op.torch(*args, **kwargs))
    result: dict[str, Any] = {"outputs": [numpy_of(o) for o in outs]}
    if grads is not None:
        pairs = [(o, torch_of(g).to(o.dtype)) for o, g in zip(outs, grads, strict=True)
                 if g is not None]
        computed = torch.autograd.grad([o for o, _ in pairs], leaves, [g for _, g in pairs],
                                       allow_unused=True, materialize_grads=True)
        result["grads"] = [numpy_of(g) for g in computed]
    return result


def autocast_dtypes(op: OpInfo, sample: Sample, autocast_dtype: str) -> list[str]:
    """The dtype of each output of ``op`` on ``sample`` under torch's CUDA autocast with
    ``autocast_dtype``: the inputs cast per the op's category, the op run on the CPU."""
    floats = float_tensors(sample)
    targets = cast_by_policy("", op.autocast, autocast_dtype,
                             [t.value.dtype.name for t in floats])
    cast = {id(t): d for t, d in zip(floats, targets, strict=True)}
    with torch.no_grad():
        return [a.dtype.name for a in run(op, sample, None, cast)["outputs"]]


def float32_reference(op: OpInfo, sample: Sample, grads: list[np.ndarray | None] | None,
                      dtype: str) -> dict[str, Any]:
    """torch's float32 results on the sample's (already rounded) values, rounded to
    ``dtype`` once: what a low-precision op computing in float32 and rounding once gives
    (the incoming gradients too are the low-precision ones, widened)."""
    wide = in_dtype(sample, "float32")
    wide_grads = None if grads is None else [
        None if g is None else np.asarray(g).astype(np.float32) for g in grads]
    result = run(op, wide, wide_grads)
    low = NUMPY_DTYPES[dtype]

    def rounded(a: np.ndarray) -> np.ndarray:
        if a.dtype != np.float32:
            return a
        with np.errstate(over="ignore"):
            return a.astype(low)

    return {k: [rounded(a) for a in v] for k, v in result.items()}


# ----- autocast semantics (torch.amp.autocast, CUDA) ---------------------------------
# torch.amp.autocast.__init__ takes dtype=None as the current autocast dtype (float16 for
# CUDA outside any region) and cache_enabled=None as the current setting; __enter__ sets
# enabled/dtype/cache_enabled and counts the nesting; __exit__ restores them and clears
# the cast cache when the count returns to 0 (torch/amp/autocast_mode.py). An unsupported
# dtype disables the region with a warning.
SUPPORTED = ("float16", "bfloat16")


def argument_kind(spec: list[Any], policy: str, enabled: bool, autocast_dtype: str,
                  eligible: list[str]) -> str:
    """What a probe Function's forward receives for one argument spec (see
    graders.probes.autocast._argument) under autocast."""
    if spec[0] == "number":
        return type(spec[1]).__name__
    if spec[0] == "none":
        return "None"
    dtype = spec[1]
    if not enabled or dtype not in NUMPY_DTYPES:  # integer tensors are never cast
        return dtype
    return cast_by_policy("", policy, autocast_dtype, [*eligible, dtype])[-1]


def policy_call(policy: str, specs: list[list[Any]], autocast_dtype: str) -> list[str]:
    """The kinds a Function of ``policy`` receives for ``specs`` inside an enabled region
    (PyTorch's promote: float32 if any eligible input is float32, else the autocast
    dtype)."""
    floats = [s[1] for s in specs if s[0] == "tensor" and s[1] in NUMPY_DTYPES]
    return [argument_kind(s, policy, True, autocast_dtype, floats) for s in specs]


def autocast_script(script: list[list[Any]]) -> list[Any]:
    """What ``graders.probes.autocast.regions`` records for ``script`` in torch's
    semantics: each call's "received->output" dtype, each state query's
    [enabled, dtype]."""
    stack: list[tuple[bool, str]] = []
    current = (False, "float16")

    def region(spec: dict[str, Any], outer: tuple[bool, str]) -> tuple[bool, str]:
        dtype = spec.get("dtype", outer[1])
        enabled = spec.get("enabled", True) and dtype in SUPPORTED
        return enabled, dtype

    def call(state: tuple[bool, str], policy: str, dtype: str) -> str:
        enabled, ac = state
        got = dtype if not enabled else cast_by_policy("", policy, ac, [dtype])[0]
        return f"{got}->{got}"

    records: list[Any] = []
    for step in script:
        if step[0] == "enter":
            stack.append(current)
            current = region(step[1], current)
        elif step[0] == "exit":
            current = stack.pop()
        elif step[0] == "call":
            records.append(call(current, step[1], step[2]))
        elif step[0] == "state":
            records.append([current[0], current[1]])
        elif step[0] == "decorated":
            records.append(call(region(step[1], current), step[2], step[3]))
    return records
