"""Opmath (task 4.1): a call whose result is float16 or bfloat16 computes in float32.

Registered with ``Function.apply`` (``autograd.dispatch``): forward and backward of such a
call run on float32 copies of its inputs and its outputs are rounded once, as PyTorch's
kernels compute (so a low-precision matmul accumulates in float32).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..autograd.dispatch import dispatch
from ..autograd.node import BackwardNode, _float32_alias
from ..tensor import Tensor

Function = Any  # autograd.function.Function (a class whose forward is called here)


def _low_precision_result(args: tuple[Any, ...]) -> np.dtype | None:
    """float16 or bfloat16 when that is the dtype of this call's floating point result
    (PyTorch's promotion over its floating point tensor arguments), else None."""
    if not any(isinstance(a, Tensor) and a.data.dtype in dtypes.LOW_PRECISION for a in args):
        return None
    floating = [a for a in args if isinstance(a, Tensor) and a.data.dtype in dtypes.FLOATING]
    result = dtypes.result_type(*floating)
    return result if result in dtypes.LOW_PRECISION else None


def _round_to(result: Any, dtype: np.dtype) -> Any:
    """A forward result in ``dtype`` when it is floating point (indices stay integers)."""
    array = np.asarray(result)
    if array.dtype not in dtypes.FLOATING:
        return result
    with np.errstate(over="ignore"):  # beyond float16's range: inf, as in PyTorch
        return array.astype(dtype)


def forward_in_float32(cls: type[Function], ctx: BackwardNode, args: tuple[Any, ...],
                       kwargs: dict[str, Any], dtype: np.dtype) -> Any:
    """``cls.forward`` for a call whose result is ``dtype`` (float16 or bfloat16), computed
    the way PyTorch's kernels compute it: on float32 values, with the outputs rounded to
    ``dtype`` once at the end. A matmul then accumulates its products in float32 (as
    tensor cores do) and a sum or softmax does not lose precision term by term.

    Afterwards forward's saves refer to the real inputs and outputs (low precision, as
    PyTorch keeps them; ``saved_tensors`` widens them again for backward), and the node is
    marked, so that backward computes in float32 too."""
    # BEGIN SOLUTION 4.1
    # HINT: _float32_alias(arg) gives a float32 stand-in for each floating point Tensor;
    # HINT: run forward on those, then round every output with _round_to(output, dtype).
    # HINT: The lines after this block use four names it must define: `wide` (the
    # HINT: arguments forward ran on, stand-ins included, a tuple in the order of args),
    # HINT: `single` (True when forward returned one array, not a tuple), `raw` (forward's
    # HINT: outputs as a tuple) and `rounded` (raw's outputs rounded, a tuple).
    wide = tuple([_float32_alias(a) for a in args])
    result = cls.forward(ctx, *wide, **kwargs)
    single = not isinstance(result, tuple)
    raw = (result,) if single else result
    rounded = tuple([_round_to(r, dtype) for r in raw])
    # END SOLUTION
    standins = {id(w): a for w, a in zip(wide, args, strict=True) if w is not a}
    standins.update({id(r): o for r, o in zip(raw, rounded, strict=True)})
    ctx._to_save = tuple(standins.get(id(x), x) for x in ctx._to_save)
    ctx._opmath = True
    return rounded[0] if single else rounded


def _forward_in_float32(cls: type[Function], ctx: BackwardNode, args: tuple[Any, ...],
                        kwargs: dict[str, Any], dtype: np.dtype) -> Any:
    # the module's forward_in_float32 looked up at each call: the graders' probes put their
    # own copy in its place while they grade other tasks' operators in low precision
    return forward_in_float32(cls, ctx, args, kwargs, dtype)


dispatch.register(low_precision_result=_low_precision_result,
                  forward_in_float32=_forward_in_float32)
