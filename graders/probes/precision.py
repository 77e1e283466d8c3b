"""Probes for task 4.1: low-precision dtypes, casts, type promotion, float32 "opmath".

Where they can, they avoid the student's operators (assignment 2): the opmath probes
apply small Functions of their own (plain NumPy math, no dtype handling) through the
submission's ``Function.apply``, which is where low-precision calls are widened to float32
and rounded; the cast probe calls the cast's backward directly (no engine). The op-table
probe (``low_precision_op``) runs the student's operators on purpose: every op must work
in float16 and bfloat16.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from . import probe
from ._observe import array, grad
from .ops import _Inputs, _invoke, _outputs, _run_isolated

_Cache: dict[int, dict[str, type]] = {}


def functions(tt: Any) -> dict[str, type]:
    """Probe Functions that compute in whatever dtype their inputs arrive in: with
    float16 inputs, the submission's Function.apply decides what they see."""
    found = _Cache.get(id(tt))
    if found is not None:
        return found
    base = tt.autograd.Function

    class Matmul(base):
        """``a @ b`` for matrices."""

        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return np.matmul(a.data, b.data)

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return np.matmul(g, b.data.T), np.matmul(a.data.T, g)

    class SumLast(base):
        """The sum over the last dim."""

        @staticmethod
        def forward(ctx, a):
            ctx.shape = a.data.shape
            return np.asarray(a.data.sum(axis=-1))

        @staticmethod
        def backward(ctx, g):
            return np.broadcast_to(np.expand_dims(g, -1), ctx.shape).copy()

    class Exp(base):
        """``exp(a)``, saving its result."""

        @staticmethod
        def forward(ctx, a):
            out = np.exp(a.data)
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, g):
            (out,) = ctx.saved_tensors
            return g * out.data

    class Mul(base):
        """``a * b`` (same shapes)."""

        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a.data * b.data

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b.data, g * a.data

    class Scale(base):
        """``a * k`` for a Python number ``k``."""

        @staticmethod
        def forward(ctx, a, k):
            ctx.k = k
            return a.data * k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    class Total(base):
        """The sum of all elements."""

        @staticmethod
        def forward(ctx, a):
            ctx.shape = a.data.shape
            return np.asarray(a.data.sum())

        @staticmethod
        def backward(ctx, g):
            return np.broadcast_to(g, ctx.shape).copy()

    found = {"matmul": Matmul, "sum_last": SumLast, "exp": Exp, "mul": Mul, "scale": Scale,
             "total": Total}
    _Cache[id(tt)] = found
    return found


def _dtype(tt: Any, name: str) -> Any:
    return getattr(tt, name)


def _tensor(tt: Any, value: np.ndarray, dtype: str, requires_grad: bool = False) -> Any:
    """A leaf of ``dtype`` holding ``value`` (converted with NumPy, not with tinytrain)."""
    t = tt.Tensor(np.asarray(value).astype(_dtype(tt, dtype).np))
    return t.requires_grad_() if requires_grad else t


def _observed(t: Any) -> dict[str, Any]:
    return {"dtype": str(t.data.dtype), "value": array(t)}


@probe
def promotion(tt: Any, pairs: list[list[str]], operands: list[list[Any]]) -> dict[str, Any]:
    """``tt.promote_types(a, b)`` for each pair of dtype names, and ``tt.result_type(x, y)``
    for tensors (``["tensor", dtype, ndim]``) and Python numbers (``["number", value]``)."""

    def operand(spec: list[Any]) -> Any:
        if spec[0] == "number":
            return spec[1]
        return tt.Tensor(np.zeros((2,) * spec[2], dtype=_dtype(tt, spec[1]).np))

    types = [str(tt.promote_types(_dtype(tt, a), _dtype(tt, b))).removeprefix("tinytrain.")
             for a, b in pairs]
    results = [str(tt.result_type(operand(a), operand(b))).removeprefix("tinytrain.")
               for a, b in operands]
    return {"promote_types": types, "result_type": results}


@probe
def cast(tt: Any, value: np.ndarray, source: str, call: str, target: str,
         grad_value: np.ndarray) -> dict[str, Any]:
    """``x.<call>`` for a leaf ``x`` of ``source`` holding ``value`` ("half", "bfloat16",
    "float", "double", "to", "to_kw"), then the cast's own backward called directly with
    ``grad_value`` (in the output's dtype): the gradient it returns, before any engine
    would convert it. Graph recording is stubbed out (assignment 1 is not needed)."""
    x = _tensor(tt, value, source, requires_grad=True)
    if call == "to":
        args, name, kwargs = [x, _dtype(tt, target)], "Tensor.to", {}
    elif call == "to_kw":
        args, name, kwargs = [x], "Tensor.to", {"dtype": _dtype(tt, target)}
    else:
        args, name, kwargs = [x], f"Tensor.{call}", {}
    y, capture = _run_isolated(tt, name, SimpleNamespace(args=args, kwargs=kwargs, wanted=[x]))
    out = {"output": _observed(y), "same_object": y is x, "functions": len(capture.calls)}
    if len(capture.calls) != 1:
        return {**out, "grad": None}
    ctx = capture.calls[0][0]
    g = np.asarray(grad_value).astype(y.data.dtype)
    returned = type(ctx)._function.backward(ctx, g)
    first = returned[0] if isinstance(returned, tuple) else returned
    if isinstance(first, tt.Tensor):  # a Tensor is accepted, as the engine accepts it
        first = first.data
    if not isinstance(first, np.ndarray):
        return {**out, "grad": {"dtype": type(first).__name__, "value": None}}
    return {**out, "grad": {"dtype": str(first.dtype), "value": np.array(first, copy=True)}}


@probe
def opmath(tt: Any, name: str, values: list[np.ndarray], dtype: str,
           grad_output: np.ndarray | None, keywords: dict[str, Any] | None = None,
           ) -> dict[str, Any]:
    """One of the probes' own Functions (``functions``) applied to leaves of ``dtype``
    (and ``keywords`` as keyword arguments); then, with ``grad_output``, backward through
    the engine: output and input gradients (values and dtypes)."""
    fn = functions(tt)[name]
    leaves = [_tensor(tt, v, dtype, requires_grad=grad_output is not None) for v in values]
    out = fn.apply(*leaves, **(keywords or {}))
    result = {"output": _observed(out)}
    if grad_output is not None:
        out.backward(tt.Tensor(np.asarray(grad_output).astype(out.data.dtype)))
        result["grads"] = [None if t._grad is None else _observed(t._grad) for t in leaves]
    return result


@probe
def underflow(tt: Any, x: np.ndarray, c: np.ndarray, k: float, dtype: str) -> dict[str, Any]:
    """``loss = sum(x.to(dtype) * c) * k`` for a float32 leaf ``x`` and ``c`` of ``dtype``
    (the probes' own mul, sum and scale; the student's cast): the loss, and ``x.grad``,
    which passes through ``dtype`` (k * c there: below float16's smallest subnormal it
    is 0)."""
    fns = functions(tt)
    leaf = _tensor(tt, x, "float32", requires_grad=True)
    y = leaf.to(_dtype(tt, dtype))
    loss = fns["scale"].apply(fns["total"].apply(fns["mul"].apply(y, _tensor(tt, c, dtype))), k)
    loss.backward()
    return {"loss": _observed(loss), "grad": _observed(leaf._grad) if leaf._grad is not None
            else None, "y": _observed(y)}


@probe
def scalar_operand(tt: Any, op: str, x: np.ndarray, dtype: str, scalar: float,
                   scalar_kind: str, scalar_first: bool, grad_output: np.ndarray
                   ) -> dict[str, Any]:
    """``x <op> s`` (or ``s <op> x``) with the student's operators for a tensor ``x`` of
    ``dtype`` and a scalar ``s``: a Python number (``scalar_kind`` "number") or a zero-dim
    tensor of ``scalar_kind``; the result, and x's gradient through the engine."""
    leaf = _tensor(tt, x, dtype, requires_grad=True)
    s = scalar if scalar_kind == "number" else tt.Tensor(np.asarray(
        scalar, dtype=_dtype(tt, scalar_kind).np))
    fn = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
          "div": lambda a, b: a / b, "pow": lambda a, b: a ** b}[op]
    out = fn(s, leaf) if scalar_first else fn(leaf, s)
    out.backward(tt.Tensor(np.asarray(grad_output).astype(out.data.dtype)))
    return {"output": _observed(out), "grad": None if leaf._grad is None
            else _observed(leaf._grad)}


@probe
def low_precision_op(tt: Any, call: str, args: list[Any], kwargs: dict[str, Any],
                     grad_outputs: list[np.ndarray | None] | None) -> dict[str, Any]:
    """An op-table call on float16/bfloat16 tensors (as sent) with the student's operators:
    outputs and, with ``grad_outputs``, every wanted input's gradient through the engine."""
    inputs = _Inputs(tt, args, kwargs, requires_grad=grad_outputs is not None)
    results = _outputs(_invoke(tt, call, inputs.args, inputs.kwargs))
    found: dict[str, Any] = {"outputs": [array(o) for o in results]}
    if grad_outputs is not None:
        roots = [(o, tt.Tensor(np.asarray(g).astype(o.data.dtype)))
                 for o, g in zip(results, grad_outputs, strict=False) if g is not None]
        if inputs.wanted:
            tt.autograd.backward([o for o, _ in roots], [g for _, g in roots])
        found["grads"] = [grad(t) for t in inputs.wanted]
    return found

