"""Entries for reductions (task 2.3)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

from ..strategies.ops import Draw, Sample
from ._build import (
    DEFAULT_VALUES,
    KINK_MARGIN,
    SampleFn,
    Values,
    among,
    draw_logits,
    gap_to_runner_up,
    tensor_arg,
    tie_extremes,
    uniform,
)
from .spec import Kink, OpInfo

TIES = among(-1.0, 0.0, 1.0)
STABLE = 1e4  # logits around +-1e4: exp overflows (or underflows to 0) without a shift


# the backward check's NaN inputs, where the reference's gradient is not torch's (left open)
_MAX_NAN = ("torch 2.13's max()/min() over all elements gives the whole gradient to the NaN "
            "(the result); the reference's ties (x == result) miss NaN, and it divides 0 by 0")


def _over_dims(values: Values = DEFAULT_VALUES, empty: bool = True, allow_none: bool = True,
               keepdim: bool = True, min_side: int = 1):
    """A tensor and a ``dim`` (omitted when None) and maybe ``keepdim``."""

    def sample(d: Draw, dtype: np.dtype) -> Sample:
        shape = d.shape(1 if min_side > 1 else 0, 3, empty=empty, min_side=min_side)
        kwargs = {}
        dim = d.dims(len(shape), allow_none)
        if dim is not None:
            kwargs["dim"] = dim
        if keepdim and dim is not None and d.flag():
            kwargs["keepdim"] = d.integer(0, 2) > 0  # True, or False said explicitly
        return Sample((d.tensor(values(d, shape, dtype)),), kwargs)

    return sample


def _var_sample(values: Values = DEFAULT_VALUES):
    def sample(d: Draw, dtype: np.dtype) -> Sample:
        s = _over_dims(values, empty=False)(d, dtype)
        x = tensor_arg(s)
        dims = s.kwargs.get("dim")
        count = _count(x.value.shape, dims)
        style = d.pick(["default", "correction", "unbiased"])
        if style == "correction":
            s.kwargs["correction"] = d.pick([0, 1]) if count > 1 else 0
        elif style == "unbiased" or count <= 1:
            s.kwargs["unbiased"] = False if count <= 1 else d.flag()
        return s

    return sample


def _count(shape: tuple[int, ...], dims: object) -> int:
    if not shape:
        return 1
    if dims is None:
        return math.prod(shape)
    dims = (dims,) if isinstance(dims, int) else dims
    return math.prod(shape[d] for d in {d % len(shape) for d in dims})


def _along_dim(values: Values = DEFAULT_VALUES, keepdim_kw: bool = True, min_side: int = 1):
    """A tensor of at least one dim, a ``dim`` (positional) and maybe ``keepdim``."""

    def sample(d: Draw, dtype: np.dtype) -> Sample:
        shape = d.shape(1, 3, min_side=min_side)
        dim = d.integer(-len(shape), len(shape) - 1)
        kwargs = {"keepdim": True} if keepdim_kw and d.flag() else {}
        return Sample((d.tensor(values(d, shape, dtype)), dim), kwargs)

    return sample


def _argmax_sample(d: Draw, dtype: np.dtype) -> Sample:
    values = TIES if d.flag() else uniform()
    if d.flag():
        return Sample((d.tensor(values(d, d.shape(0, 3), dtype)),))
    return _along_dim(values)(d, dtype)


def _logsumexp_sample(offset: float = 0.0):
    def sample(d: Draw, dtype: np.dtype) -> Sample:
        shape = d.shape(0, 3)
        dim = d.dims(len(shape), allow_none=False)
        value = draw_logits(d, shape, offset)
        kwargs = {"keepdim": True} if d.flag() else {}
        return Sample((d.tensor(value.astype(dtype)), dim), kwargs)

    return sample


def _near_tie_all(sample: Sample) -> bool:
    return gap_to_runner_up(tensor_arg(sample).value) < KINK_MARGIN


def _near_tie_dims(sample: Sample) -> bool:
    dims = sample.kwargs.get("dim", sample.args[1] if len(sample.args) > 1 else None)
    if isinstance(dims, list):
        dims = tuple(dims)
    return gap_to_runner_up(tensor_arg(sample).value, dims) < KINK_MARGIN


def _all_reduce(values: Values, min_dims: int = 0, min_side: int = 1) -> SampleFn:
    def sample(d: Draw, dtype: np.dtype) -> Sample:
        return Sample((d.tensor(values(d, d.shape(min_dims, 3, min_side=min_side), dtype)),))

    return sample


def _tied(sample_fn: SampleFn, extreme: Callable[..., np.ndarray]) -> SampleFn:
    """``sample_fn``'s samples with the extreme of every reduced slice tied (sides >= 2)."""

    def sample(d: Draw, dtype: np.dtype) -> Sample:
        s = sample_fn(d, dtype)
        x = tensor_arg(s)
        dims = s.kwargs.get("dim", s.args[1] if len(s.args) > 1 else None)
        x.value = np.asarray(tie_extremes(x.value, dims, extreme))
        return s

    return sample


def _ties_kink(sample_fn: SampleFn, extreme: Callable[..., np.ndarray], rule: str) -> Kink:
    return Kink("ties", _tied(sample_fn, extreme), rule)


REDUCTIONS = [
    OpInfo("sum", "2.3", torch.sum, ("tt.sum", "Tensor.sum"), _over_dims(), autocast="fp32"),
    OpInfo("mean", "2.3", torch.mean, ("tt.mean", "Tensor.mean"), _over_dims(),
           autocast="none"),
    OpInfo("var", "2.3", torch.var, ("tt.var", "Tensor.var"), _var_sample(), autocast="none"),
    OpInfo("max", "2.3", torch.max, ("tt.max", "Tensor.max"), _all_reduce(uniform()),
           autocast="none", near_kink=_near_tie_all,
           kinks=(_ties_kink(_all_reduce(TIES, 1, 2), np.argmax,
                             "max() over all elements splits the gradient evenly among ties"),),
           exempt={"grad_nan": _MAX_NAN, "grad_mixed": _MAX_NAN}),
    OpInfo("min", "2.3", torch.min, ("tt.min", "Tensor.min"), _all_reduce(uniform()),
           autocast="none", near_kink=_near_tie_all,
           kinks=(_ties_kink(_all_reduce(TIES, 1, 2), np.argmin,
                             "min() over all elements splits the gradient evenly among ties"),),
           exempt={"grad_nan": _MAX_NAN, "grad_mixed": _MAX_NAN}),
    OpInfo("max_dim", "2.3", torch.max, ("tt.max", "Tensor.max"), _along_dim(),
           autocast="none", near_kink=_near_tie_dims,
           kinks=(_ties_kink(_along_dim(TIES, min_side=2), np.argmax,
                             "max(dim) returns the first maximal index and sends all of the "
                             "gradient there"),)),
    OpInfo("min_dim", "2.3", torch.min, ("tt.min", "Tensor.min"), _along_dim(),
           autocast="none", near_kink=_near_tie_dims,
           kinks=(_ties_kink(_along_dim(TIES, min_side=2), np.argmin,
                             "min(dim) returns the first minimal index and sends all of the "
                             "gradient there"),)),
    OpInfo("amax", "2.3", torch.amax, ("tt.amax", "Tensor.amax"),
           _over_dims(empty=False), autocast="none", near_kink=_near_tie_dims,
           kinks=(_ties_kink(_over_dims(TIES, empty=False, min_side=2), np.argmax,
                             "amax splits the gradient evenly among the ties of each reduced "
                             "slice"),)),
    OpInfo("amin", "2.3", torch.amin, ("tt.amin", "Tensor.amin"),
           _over_dims(empty=False), autocast="none", near_kink=_near_tie_dims,
           kinks=(_ties_kink(_over_dims(TIES, empty=False, min_side=2), np.argmin,
                             "amin splits the gradient evenly among the ties of each reduced "
                             "slice"),)),
    OpInfo("logsumexp", "2.3", torch.logsumexp, ("tt.logsumexp", "Tensor.logsumexp"),
           _logsumexp_sample(), autocast="fp32", stability=_logsumexp_sample(STABLE)),
    OpInfo("argmax", "2.3", torch.argmax, ("tt.argmax", "Tensor.argmax"), _argmax_sample,
           autocast="none", grad_output=None),
    OpInfo("argmin", "2.3", torch.argmin, ("tt.argmin", "Tensor.argmin"), _argmax_sample,
           autocast="none", grad_output=None),
]
