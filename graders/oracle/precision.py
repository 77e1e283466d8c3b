"""Low precision in PyTorch, for task 4.1's graders: op-table samples run with their
floating point tensors in float16/bfloat16 (bfloat16 through ml_dtypes on the NumPy side),
their float32 reference (the same rounded inputs, computed in float32, rounded once), and
conversions between torch and NumPy that keep bfloat16.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

from ..optable.spec import OpInfo
from ..strategies.ops import Sample
from . import ops

BFLOAT16 = ops.BFLOAT16
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


torch_of = ops.with_layout


def is_float(value: np.ndarray) -> bool:
    """Whether an array holds floating point values (bfloat16 included)."""
    return value.dtype.kind == "f" or value.dtype == BFLOAT16


def cast_values(value: np.ndarray, dtype: str) -> np.ndarray:
    """``value`` converted to ``dtype`` as torch converts (float64 to float16/bfloat16
    goes through float32; beyond float16's range, inf)."""
    value = np.asarray(value)
    if value.dtype.name == dtype:
        return value
    return numpy_of(torch_of(value).to(TORCH_DTYPES[dtype]))


def copy_sample(sample: Sample) -> Sample:
    return copy.deepcopy(sample)


def in_dtype(sample: Sample, dtype: str) -> Sample:
    """A copy of ``sample`` whose floating point tensors hold their values rounded to
    ``dtype`` (stored in that dtype)."""
    out = copy_sample(sample)
    for t in out.tensors():
        if is_float(t.value):
            t.value = cast_values(t.value, dtype)
    return out


def torch_args(sample: Sample, requires_grad: bool, cast: dict[int, str] | None = None
               ) -> tuple[list[Any], dict[str, Any], list[torch.Tensor]]:
    """The sample as torch arguments; ``cast`` maps ``id(T)`` to the name of a dtype each
    float tensor is cast to (differentiably, as autocast does) after being made a leaf."""
    dtypes = None if cast is None else {k: TORCH_DTYPES[v] for k, v in cast.items()}
    return ops.torch_args(sample, requires_grad=requires_grad, cast=dtypes)


def _outputs(result: Any) -> list[torch.Tensor]:
    return list(result) if isinstance(result, tuple) else [result]


def run(op: OpInfo, sample: Sample, grads: list[np.ndarray | None] | None = None,
        cast: dict[int, str] | None = None) -> dict[str, Any]:
    """torch's outputs (and, with ``grads``, the gradient of each differentiable input)
    for the sample as it is (its tensors in their own dtypes), its float tensors cast
    per ``cast`` first."""
    args, kwargs, leaves = torch_args(sample, grads is not None, cast)
    outs = _outputs(op.torch(*args, **kwargs))
    result: dict[str, Any] = {"outputs": [numpy_of(o) for o in outs]}
    if grads is not None:
        pairs = [(o, torch_of(g).to(o.dtype)) for o, g in zip(outs, grads, strict=True)
                 if g is not None]
        computed = torch.autograd.grad([o for o, _ in pairs], leaves, [g for _, g in pairs],
                                       allow_unused=True, materialize_grads=True)
        result["grads"] = [numpy_of(g) for g in computed]
    return result


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
