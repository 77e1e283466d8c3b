"""Entries for elementwise ops: arithmetic with broadcasting (2.1) and unary math (2.2)."""

from __future__ import annotations

import math

import numpy as np
import torch

from ..strategies.ops import Draw, Sample
from ._build import (
    DEFAULT_VALUES,
    SampleFn,
    Values,
    among,
    binary,
    close_to,
    near_zero,
    nonzero,
    scalar_low_precision,
    tensor_arg,
    unary,
    uniform,
)
from .spec import Kink, OpInfo

# The backward check's NaN inputs (the value axis in gradients) where the reference's
# gradient is not torch's at NaN (left open: the reference follows NumPy's comparisons)
_MAXIMUM_NAN = ("torch 2.13's maximum/minimum backward gives the full incoming gradient to "
                "both inputs where either is NaN; the reference gives the NaN side 0")
_ABS_NAN = "torch 2.13's abs backward at NaN is grad * sgn(NaN) = 0 (-0.0); the reference's NaN"


def _binary_ops() -> list[OpInfo]:
    ops = []
    for name, fn in (("add", torch.add), ("sub", torch.sub), ("mul", torch.mul)):
        ops.append(OpInfo(
            name, "2.1", fn, (f"tt.{name}", f"Tensor.{name}", f"operator.{name}"), binary(),
            autocast="none",
        ))
    ops.append(OpInfo(
        "div", "2.1", torch.div, ("tt.div", "Tensor.div", "operator.truediv"),
        binary(b=nonzero()), autocast="none",
    ))
    return ops


def _scalar_operand(name: str, symbol: str, fn: object, tensor_values: Values,
                    order: str = "either", autocast: str = "none") -> OpInfo:
    """``x <op> s`` and ``s <op> x`` for a Python number ``s`` (type promotion keeps x's
    dtype); ``order`` "tensor_first" or "scalar_first" keeps one of them."""

    def sample(d: Draw, dtype: np.dtype) -> Sample:
        x = d.tensor(tensor_values(d, d.shape(0, 3, empty=True), dtype))
        s = d.pick([2.0, -1.5, 0.5, 3, 0.0, 0])  # 0 too: the options axis at a falsy value
        first = d.flag() if order == "either" else order == "tensor_first"
        return Sample((x, s) if first else (s, x))

    prefix = "r" if order == "scalar_first" else ""
    return OpInfo(f"{prefix}{name}_scalar", "2.1", fn, (f"operator.{symbol}",), sample,
                  autocast=autocast, exempt=scalar_low_precision())


def _pow_scalar_sample(d: Draw, dtype: np.dtype) -> Sample:
    p = d.pick([2, 3, 0.5, -1, 1.5, -0.5, 1, 0])
    shape = d.shape(0, 3, empty=True)
    # integral powers take bases of either sign; fractional ones need positive bases
    values = nonzero(0.25, 2.0) if float(p).is_integer() else uniform(0.25, 2.0)
    return Sample((d.tensor(values(d, shape, dtype)), p))


def _pow_scalar_at_zero(d: Draw, dtype: np.dtype) -> Sample:
    p = d.pick([0, 1, 2, 3, 0.5, 1.5, -1, -0.5])
    bases = (among(-1.0, 0.0, 1.0, force=0.0) if float(p).is_integer()
             else among(0.0, 0.5, 1.0, force=0.0))
    return Sample((d.tensor(bases(d, d.shape(1, 2), dtype)), p))


def _pow_at_zero(d: Draw, dtype: np.dtype) -> Sample:
    sa, sb = d.broadcastable(2)
    return Sample((d.tensor(among(0.0, 1.0, 2.0, force=0.0)(d, sa, dtype)),
                   d.tensor(among(-1.0, 0.0, 0.5, 1.0, 2.0)(d, sb, dtype))))


def _rpow_sample(d: Draw, dtype: np.dtype) -> Sample:
    base = d.pick([2.0, 0.5, 3.0])
    return Sample((base, d.tensor(uniform()(d, d.shape(0, 3, empty=True), dtype))))


def _rpow_at_zero(d: Draw, dtype: np.dtype) -> Sample:
    return Sample((0.0, d.tensor(among(0.0, 0.5, 1.0, 2.0, force=0.0)(d, d.shape(1, 2), dtype))))


def _tied_pair(d: Draw, dtype: np.dtype) -> Sample:
    """Two broadcastable tensors from {-1, 0, 1}, tied at least at output position 0."""
    sa, sb = d.broadcastable(2)
    a, b = among(-1.0, 0.0, 1.0)(d, sa, dtype), among(-1.0, 0.0, 1.0)(d, sb, dtype)
    b.flat[0] = a.flat[0]  # element 0 of each input meets at output position 0
    return Sample((d.tensor(a), d.tensor(b)))


def _pair_near_tie(sample: Sample) -> bool:
    a, b = (t.value for t in sample.tensors())
    return close_to(np.subtract(*np.broadcast_arrays(a, b)), 0.0)


def _where_sample(values: Values = DEFAULT_VALUES) -> SampleFn:
    def sample(d: Draw, dtype: np.dtype) -> Sample:
        sc, sa, sb = d.broadcastable(3, empty=True)
        condition = d.tensor(d.rng.random(sc) < 0.5, grad=False)
        a = d.tensor(values(d, sa, dtype))
        b = d.tensor(values(d, sb, dtype)) if d.integer(0, 3) else d.pick([0.0, -1.5])
        return Sample((condition, a, b))

    return sample


ARITHMETIC = [
    *_binary_ops(),
    OpInfo("neg", "2.1", torch.neg, ("tt.neg", "Tensor.neg", "operator.neg"), unary(),
           autocast="none"),
    OpInfo(
        "pow", "2.1", torch.pow, ("tt.pow", "Tensor.pow", "operator.pow"),
        binary(a=uniform(0.5, 2.0)), autocast="fp32",
        kinks=(Kink("zero_base", _pow_at_zero,
                    "at a == 0: d/da is b * 0^(b-1), but 0 where b == 0; d/db is 0 where "
                    "b >= 0 (not 0 * log 0)"),),
    ),
    OpInfo(
        "pow_scalar", "2.1", torch.pow, ("tt.pow", "Tensor.pow", "operator.pow"),
        _pow_scalar_sample, autocast="fp32", exempt=scalar_low_precision(),
        kinks=(Kink("zero_base", _pow_scalar_at_zero,
                    "d/dx x^p at x == 0 is p * 0^(p-1): 0 for p = 0 and p = 2, 1 for p = 1, "
                    "+inf for p = 0.5, -inf for p = -1"),),
    ),
    OpInfo(
        "rpow", "2.1", lambda base, x: base ** x, ("operator.pow",), _rpow_sample,
        autocast="fp32", exempt=scalar_low_precision(),
        kinks=(Kink("zero_base", _rpow_at_zero,
                    "d/dx 0 ** x is 0 for x >= 0 (PyTorch masks 0 * log 0)"),),
    ),
    _scalar_operand("add", "add", lambda a, b: a + b, uniform()),
    _scalar_operand("sub", "sub", lambda a, b: a - b, uniform()),
    _scalar_operand("mul", "mul", lambda a, b: a * b, uniform()),
    _scalar_operand("div", "truediv", lambda a, b: a / b, nonzero(), order="tensor_first"),
    # s / x is x.reciprocal() * s in PyTorch (Tensor.__rtruediv__): reciprocal's category
    _scalar_operand("div", "truediv", lambda a, b: a / b, nonzero(), order="scalar_first",
                    autocast="fp32"),
    OpInfo(
        "maximum", "2.1", torch.maximum, ("tt.maximum", "Tensor.maximum", "tt.max"),
        binary(), autocast="none", near_kink=_pair_near_tie,
        kinks=(Kink("ties", _tied_pair, "where x == y each input gets half of the gradient"),),
        exempt={"grad_nan": _MAXIMUM_NAN, "grad_mixed": _MAXIMUM_NAN},
    ),
    OpInfo(
        "minimum", "2.1", torch.minimum, ("tt.minimum", "Tensor.minimum", "tt.min"),
        binary(), autocast="none", near_kink=_pair_near_tie,
        kinks=(Kink("ties", _tied_pair, "where x == y each input gets half of the gradient"),),
        exempt={"grad_nan": _MAXIMUM_NAN, "grad_mixed": _MAXIMUM_NAN},
    ),
    OpInfo(
        "where", "2.1", torch.where, ("tt.where",), _where_sample(), autocast="none",
        grad_output=0,
        kinks=(Kink("unselected_branch", _where_sample(among(-1.0, 1.0)),
                    "the branch not selected gets exactly 0, even where the incoming gradient "
                    "is inf or NaN (mask with where, not by multiplying)",
                    grad_values=(1.0, -0.5, math.inf, math.nan)),),
    ),
]


def _clamp_kwargs(d: Draw) -> dict[str, float | None]:
    # the options axis: bounds at 0 (an int, 0.0, -0.0) as well, where ``if min:`` would
    # skip a bound that ``if min is not None:`` applies
    low, high = d.pick([(-1.0, 1.0), (-0.5, None), (None, 0.5), (0.25, 1.5), (1.0, -1.0),
                        (0.0, None), (None, 0), (-1.0, 0.0), (0, 1.5), (-0.0, None),
                        (None, -0.0), (0.0, 0.0)])
    kwargs = {}
    if low is not None:
        kwargs["min"] = low
    if high is not None:
        kwargs["max"] = high
    return kwargs


def _clamp_at_bounds(d: Draw, dtype: np.dtype) -> Sample:
    kwargs = _clamp_kwargs(d)
    bounds = list(kwargs.values())
    points = sorted({*bounds, 0.0, min(bounds) - 0.5, max(bounds) + 0.5})
    values = among(*points, force=d.pick(bounds))
    return Sample((d.tensor(values(d, d.shape(1, 2), dtype)),), kwargs)


def _clamp_near_bound(sample: Sample) -> bool:
    return close_to(tensor_arg(sample).value, list(sample.kwargs.values()))


def _zero_kink(rule: str, values: tuple[float, ...] = (-1.0, 0.0, 1.0)) -> Kink:
    return Kink("zero", unary(among(*values, force=0.0), empty=False, max_dims=2), rule)


def _unary_op(name: str, fn: object, values: object, autocast: str, **extra: object) -> OpInfo:
    return OpInfo(name, "2.2", fn, (f"tt.{name}", f"Tensor.{name}"), unary(values),
                  autocast=autocast, **extra)


UNARY = [
    _unary_op("exp", torch.exp, uniform(-3, 3), "fp32"),
    _unary_op("log", torch.log, uniform(0.1, 3.0), "fp32",
              kinks=(_zero_kink("log'(0) = 1/0: +inf for a positive incoming gradient",
                                (0.0, 0.5, 2.0)),)),
    _unary_op("sqrt", torch.sqrt, uniform(0.1, 3.0), "none",
              kinks=(_zero_kink("sqrt'(0) = +inf for a positive incoming gradient (NaN for a "
                                "zero one: 0 * inf)", (0.0, 1.0, 4.0)),)),
    _unary_op("rsqrt", torch.rsqrt, uniform(0.1, 3.0), "fp32",
              kinks=(_zero_kink("rsqrt(0) = inf and its gradient -inf", (0.0, 1.0, 4.0)),)),
    OpInfo("abs", "2.2", torch.abs, ("tt.abs", "Tensor.abs", "operator.abs"), unary(),
           autocast="none", near_kink=near_zero,
           kinks=(_zero_kink("abs'(0) = 0 (grad * sign(x))"),),
           exempt={"grad_nan": _ABS_NAN, "grad_mixed": _ABS_NAN}),
    _unary_op("sign", torch.sign, uniform(), "none", near_kink=near_zero,
              kinks=(_zero_kink("sign has gradient 0 everywhere, 0 included"),),
              exempt={k: "torch.sign(nan) is 0 (its kernel computes (0 < x) - (x < 0)), where "
                         "NumPy's sign and the IEEE convention give NaN: an implementation "
                         "artifact, out of scope" for k in ("nan", "mixed")}),
    OpInfo("clamp", "2.2", torch.clamp, ("tt.clamp", "Tensor.clamp"),
           unary(kwargs=_clamp_kwargs), autocast="none", near_kink=_clamp_near_bound,
           kinks=(Kink("at_bounds", _clamp_at_bounds,
                       "at x == min or x == max the gradient passes (1); with min > max "
                       "every output is max and no gradient passes"),)),
    _unary_op("reciprocal", torch.reciprocal, nonzero(), "fp32"),
    _unary_op("sin", torch.sin, uniform(-3, 3), "none"),
    _unary_op("cos", torch.cos, uniform(-3, 3), "none"),
]
