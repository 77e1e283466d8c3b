"""torch's CUDA autocast, for task 4.2's graders.

There may be no GPU here, and torch's *CPU* autocast follows other lists (it keeps softmax
in low precision, for one). tinytrain follows the CUDA policy on every device, so without
a GPU the expectation is built the way torch's CUDA autocast wrappers build it
(aten/src/ATen/autocast_mode.h): "lower_precision" casts every eligible input to the
autocast dtype, "fp32" to float32, "promote" to the widest eligible type (float32 if any
eligible input is float32, else the autocast dtype; any other mix is an error), "none"
casts nothing; eligible means floating point and not float64. Then the op runs in torch,
on the CPU, on those inputs. With a GPU, ``torch.autocast("cuda")`` itself is the oracle.
tests/optable/test_optable.py checks the op table's categories against torch's own AutocastCUDA
kernels (on fake CUDA tensors, no GPU needed), and tests/oracle/test_autocast_oracle.py checks
the facts below against torch's autocast.
"""

from __future__ import annotations

from typing import Any

import torch

from ..optable.spec import OpInfo
from ..strategies.ops import Sample, T
from . import precision

SUPPORTED = ("float16", "bfloat16")
FLOATS = ("float16", "bfloat16", "float32", "float64")


class PromoteError(Exception):
    """torch's "Unexpected floating ScalarType in at::autocast::prioritize"."""


def promote_target(autocast_dtype: str, eligible: list[str]) -> str:
    """torch's ``promote_type``/``prioritize``, argument by argument: start from the
    autocast dtype; float32 wins over it; another low-precision type (bfloat16 under
    float16 autocast) met before any float32 is an error. float64 inputs are ignored
    (never eligible)."""
    current = autocast_dtype
    for dtype in eligible:
        if dtype == "float64":
            continue
        if current == "float32" or dtype == "float32":
            current = "float32"
        elif dtype != autocast_dtype:
            raise PromoteError(f"promote: {dtype} under {autocast_dtype} autocast")
    return current


def promote_depends_on_order(autocast_dtype: str, eligible: list[str]) -> bool:
    """Whether torch's promote gives float32 for one order of these inputs and raises for
    another (another low-precision type together with float32): the graders skip those,
    as a student reading "float32 if any input is float32" cannot be faulted there."""
    other = {d for d in eligible if d not in ("float32", "float64", autocast_dtype)}
    return bool(other) and "float32" in eligible


def cast_by_policy(category: str, autocast_dtype: str, tensor_dtypes: list[str]) -> list[str]:
    """The dtype each tensor input of an op of ``category`` has once torch's CUDA
    autocast (with ``autocast_dtype``) has cast it: floating point tensors other than
    float64 are cast; integer and bool tensors, and float64, are left alone. Raises
    PromoteError where torch raises."""
    eligible = [d for d in tensor_dtypes if d in FLOATS and d != "float64"]
    if category == "lower_precision":
        target = autocast_dtype
    elif category == "fp32":
        target = "float32"
    elif category == "promote":
        target = promote_target(autocast_dtype, eligible)
    else:
        return list(tensor_dtypes)
    return [target if d in FLOATS and d != "float64" else d for d in tensor_dtypes]


# ----- the op table under autocast -------------------------------------------------
def autocast_dtypes(op: OpInfo, sample: Sample, autocast_dtype: str) -> list[str] | None:
    """The dtype of each output of ``op`` on ``sample`` under torch's CUDA autocast with
    ``autocast_dtype``, or None where torch rejects the call (a mix of dtypes the op does
    not take, even after autocast's casts)."""
    try:
        if torch.cuda.is_available():
            return _on_cuda(op, sample, autocast_dtype)
        return _cast_on_cpu(op, sample, autocast_dtype)
    except (RuntimeError, TypeError, PromoteError):
        return None


def _cast_on_cpu(op: OpInfo, sample: Sample, autocast_dtype: str) -> list[str]:
    tensors = sample.tensors()
    targets = cast_by_policy(op.autocast, autocast_dtype, [t.value.dtype.name for t in tensors])
    cast = {id(t): d for t, d in zip(tensors, targets, strict=True)
            if d != t.value.dtype.name}
    with torch.no_grad():
        return [a.dtype.name for a in precision.run(op, sample, None, cast)["outputs"]]


def _on_cuda(op: OpInfo, sample: Sample, autocast_dtype: str) -> list[str]:
    args, kwargs, _ = precision.torch_args(sample, requires_grad=False)

    def to_cuda(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            return x.cuda()
        if isinstance(x, list):
            return [to_cuda(v) for v in x]
        if isinstance(x, tuple):
            return tuple(to_cuda(v) for v in x)
        return x

    args, kwargs = to_cuda(args), {k: to_cuda(v) for k, v in kwargs.items()}
    with torch.no_grad(), torch.autocast("cuda", dtype=precision.TORCH_DTYPES[autocast_dtype]):
        result = op.torch(*args, **kwargs)
    outputs = list(result) if isinstance(result, tuple) else [result]
    return [str(o.dtype).removeprefix("torch.") for o in outputs]


def with_dtypes(sample: Sample, dtypes: list[str]) -> Sample:
    """A copy of ``sample`` whose floating point tensors hold their values in ``dtypes``
    (one per floating point tensor, in order)."""
    out = precision.copy_sample(sample)
    floats = [t for t in out.tensors() if precision.is_float(t.value)]
    for t, dtype in zip(floats, dtypes, strict=True):
        t.value = precision.cast_values(t.value, dtype)
    return out


def float_tensors(sample: Sample) -> list[T]:
    return [t for t in sample.tensors() if precision.is_float(t.value)]


# ----- the probe Functions (graders.probes.autocast.recorders) --------------------------
def received(policy: str, specs: list[list[Any]], autocast_dtype: str) -> dict[str, Any]:
    """What a probe Function of ``policy`` receives for argument ``specs`` (["tensor",
    dtype, requires_grad], ["number", v], ["none"]) inside an enabled region: the kind of
    each argument, {"error": "RuntimeError"} where torch's promote raises, or {} where
    torch's promote depends on the order of the arguments (not graded)."""
    tensor_dtypes = [s[1] for s in specs if s[0] == "tensor"]
    if policy == "promote" and promote_depends_on_order(autocast_dtype, tensor_dtypes):
        return {}
    try:
        cast = iter(cast_by_policy(policy, autocast_dtype, tensor_dtypes))
    except PromoteError:
        return {"error": "RuntimeError"}
    kinds = []
    for spec in specs:
        if spec[0] == "tensor":
            kinds.append(next(cast))
        elif spec[0] == "number":
            kinds.append(type(spec[1]).__name__)
        else:
            kinds.append("None")
    return {"received": kinds}


# ----- regions (torch/amp/autocast_mode.py) ----------------------------------------
# autocast.__init__ takes dtype=None as the current autocast dtype (float16 for CUDA
# outside any region) and cache_enabled=None as the current setting; an unsupported dtype
# disables the region (with a warning). __enter__ saves the state, sets enabled, dtype
# and cache_enabled, and counts the nesting; __exit__ clears the cast cache when the count
# returns to 0 and restores the saved state. tinytrain keeps one state for every device
# type (torch keeps one per device type), so "cuda" and "cpu" regions share it here.
def region_state(spec: dict[str, Any], outer: tuple[bool, str]) -> tuple[bool, str]:
    dtype = spec.get("dtype") or outer[1]
    return bool(spec.get("enabled", True)) and dtype in SUPPORTED, dtype


def script_records(script: list[list[Any]]) -> list[Any]:
    """What ``graders.probes.autocast.regions`` records for ``script`` in torch's
    semantics: each call's "received->output" dtype, each state query's [enabled, dtype],
    each exception raised inside a region propagated (and the state restored)."""
    stack: list[tuple[bool, str]] = []
    current = (False, "float16")

    def call(state: tuple[bool, str], policy: str, dtype: str) -> str:
        enabled, autocast_dtype = state
        got = dtype if not enabled else cast_by_policy(policy, autocast_dtype, [dtype])[0]
        return f"{got}->{got}"

    records: list[Any] = []
    for step in script:
        if step[0] == "enter":
            stack.append(current)
            current = region_state(step[1], current)
        elif step[0] == "exit":
            current = stack.pop()
        elif step[0] == "raise":  # torch's __exit__ restores the state and returns False
            current = stack.pop()
            records.append("exception propagated")
        elif step[0] == "call":
            records.append(call(current, step[1], step[2]))
        elif step[0] == "state":
            records.append([current[0], current[1]])
        elif step[0] == "decorated":
            records.append(call(region_state(step[1], current), step[2], step[3]))
    return records


# ----- the weight-cast cache (at::autocast::cached_cast) -----------------------------
# A cast to the autocast dtype of a float32 leaf that requires grad and is not a view is
# cached while cache_enabled, for the outermost region (nested regions, enabled or not,
# share it; the outermost exit clears it). A cast made under no_grad is made with its
# graph and cached, so a later call in grad mode gets it and the gradient reaches the
# weight. Seen on torch 2.13 (CPU autocast, which shares cached_cast with CUDA): see
# tests/oracle/test_autocast_oracle.py. Keys are graders.probes.autocast.cache's.
CACHE = {
    "parameter": True,  # a float32 leaf that requires grad: the same cast twice
    "requires_grad_false": False,  # cast anew for each call
    "non_leaf": False,
    "view": False,
    "cache_enabled_false": False,
    "fp32_policy_cast": False,  # only casts to the autocast dtype are cached
    "float64": True,  # never cast: the tensor itself, both times
    "other_dtype_region": True,  # a bfloat16 region caches bfloat16 casts
    "cast_dtype": "float16",
    "disabled_region_gets_parameter": True,  # enabled=False: no cast at all
    "enabled_under_disabled_hits": True,  # still inside the outermost region
    "nested_region_hits": True,
    "after_nested_exit_hits": True,  # a nested exit does not clear the cache
    "next_region_misses": True,  # the outermost exit did
    "recorded": [True, True],  # each cast leads back to the parameter in the graph
    "no_grad_then_grad_hits": True,
    "no_grad_cast_recorded": True,
    # [w2's cast again is its cast, w3's cast is not w2's, w2's values, w3's values]
    "weights_keep_their_casts": [True, True, True, True],
}
