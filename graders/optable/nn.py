"""Entries for activations (task 2.6) and losses (task 2.7)."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812 - the usual name

from ..strategies.ops import Draw, Sample
from ._build import among, close_to, draw_logits, near_zero, tensor_arg, unary, uniform
from .reductions import STABLE
from .spec import Kink, OpInfo

_F = "tt.nn.functional"


def _zero_kink(rule: str) -> Kink:
    return Kink("zero", unary(among(-1.0, 0.0, 1.0, force=0.0), empty=False, max_dims=2), rule)


def _leaky_kwargs(d: Draw) -> dict[str, float]:
    return {"negative_slope": d.pick([0.01, 0.2, 1.5, 0.0])} if d.flag() else {}


# the backward check's NaN inputs, where the reference's gradient is not torch's (left open)
_HARDTANH_NAN = ("torch 2.13's hardtanh backward passes the gradient at NaN (its mask is "
                 "not (x <= min_val or x >= max_val)); the reference's mask gives 0")


def _hardtanh_kwargs(d: Draw) -> dict[str, float]:
    low, high = d.pick([(-1.0, 1.0), (-0.5, 0.5), (0.0, 2.0), (-1.0, 0.0)])
    return {} if (low, high) == (-1.0, 1.0) and d.flag() else {"min_val": low, "max_val": high}


def _hardtanh_at_bounds(d: Draw, dtype: np.dtype) -> Sample:
    kwargs = _hardtanh_kwargs(d)
    low, high = kwargs.get("min_val", -1.0), kwargs.get("max_val", 1.0)
    values = among(low, high, low - 0.5, high + 0.5, (low + high) / 2, force=d.pick([low, high]))
    return Sample((d.tensor(values(d, d.shape(1, 2), dtype)),), kwargs)


def _near_hardtanh_bound(sample: Sample) -> bool:
    bounds = [sample.kwargs.get("min_val", -1.0), sample.kwargs.get("max_val", 1.0)]
    return close_to(tensor_arg(sample).value, bounds)


def _softmax_sample(offset: float = 0.0):
    """Logits and a ``dim``; with ``offset``, logits around +-offset (per tensor), some
    far below the rest (``draw_logits``)."""

    def sample(d: Draw, dtype: np.dtype) -> Sample:
        shape = d.shape(0, 3, empty=not offset)
        bound = max(len(shape), 1)
        value = draw_logits(d, shape, offset)
        return Sample((d.tensor(value.astype(dtype)),), {"dim": d.integer(-bound, bound - 1)})

    return sample


def _mse_sample(d: Draw, dtype: np.dtype) -> Sample:
    shape = d.shape(0, 3, empty=True)
    kwargs = {"reduction": d.pick(["mean", "sum", "none"])} if d.flag() else {}
    return Sample((d.tensor(d.uniform(shape, dtype)), d.tensor(d.uniform(shape, dtype))), kwargs)


def _cross_entropy_sample(offset: float = 0.0):
    """Logits (C,), (N, C) or (N, C, d) and class indices, some of them ignored;
    every reduction, ignore_index and label_smoothing. With ``offset`` (the stability
    check), logits around +-offset, some far below the rest (``draw_logits``), and no
    target ignored on purpose."""

    def sample(d: Draw, dtype: np.dtype) -> Sample:
        classes = d.integer(1, 5)
        layout = d.pick(["unbatched", "batched", "spatial"])
        n, extra = d.integer(1, 4), d.integer(1, 3)
        shape, target_shape = {
            "unbatched": ((classes,), ()),
            "batched": ((n, classes), (n,)),
            "spatial": ((n, classes, extra), (n, extra)),
        }[layout]
        kwargs: dict[str, object] = {}
        ignore = -100
        if d.flag() and not offset:
            ignore = d.pick([-100, 0, 1])
            kwargs["ignore_index"] = ignore
        target = d.rng.integers(0, classes, target_shape)
        if d.flag() and not offset:  # some targets ignored (all of them now and then)
            target = np.where(d.rng.random(target_shape) < 0.3, ignore, target)
        if d.flag():
            kwargs["reduction"] = d.pick(["mean", "sum", "none"])
        if d.flag():
            kwargs["label_smoothing"] = d.pick([0.1, 0.3, 0.0])
        logits = draw_logits(d, shape, offset)
        return Sample((d.tensor(logits.astype(dtype)),
                       d.tensor(np.asarray(target, dtype=np.int64), grad=False)), kwargs)

    return sample


ACTIVATIONS = [
    OpInfo("relu", "2.6", torch.relu, ("tt.relu", "Tensor.relu", f"{_F}.relu"), unary(),
           autocast="none", near_kink=near_zero,
           kinks=(_zero_kink("relu'(0) = 0 (relu saves its result and passes the gradient "
                             "only where the result is > 0)"),)),
    OpInfo("leaky_relu", "2.6", F.leaky_relu, (f"{_F}.leaky_relu",),
           unary(kwargs=_leaky_kwargs), autocast="none", near_kink=near_zero,
           kinks=(Kink("zero", unary(among(-1.0, 0.0, 1.0, force=0.0), empty=False, max_dims=2,
                                     kwargs=_leaky_kwargs),
                       "leaky_relu'(0) = negative_slope"),)),
    OpInfo("sigmoid", "2.6", torch.sigmoid, ("tt.sigmoid", "Tensor.sigmoid", f"{_F}.sigmoid"),
           unary(uniform(-4, 4)), autocast="none"),
    OpInfo("tanh", "2.6", torch.tanh, ("tt.tanh", "Tensor.tanh", f"{_F}.tanh"),
           unary(uniform(-3, 3)), autocast="none"),
    OpInfo("gelu", "2.6", F.gelu, (f"{_F}.gelu",), unary(uniform(-3, 3)), autocast="none",
           exempt={k: "torch's erf gelu gives NaN at +inf and -inf (its kernel multiplies "
                      "inf by 0 on the way), where x * Phi(x) is inf and 0 in the limit: an "
                      "implementation artifact, out of scope" for k in ("inf", "mixed")}),
    OpInfo("gelu_tanh", "2.6", F.gelu, (f"{_F}.gelu",),
           unary(uniform(-3, 3), kwargs=lambda d: {"approximate": "tanh"}), autocast="none"),
    OpInfo("hardtanh", "2.6", F.hardtanh, (f"{_F}.hardtanh",),
           unary(uniform(-2, 2), kwargs=_hardtanh_kwargs), autocast="none",
           near_kink=_near_hardtanh_bound,
           kinks=(Kink("at_bounds", _hardtanh_at_bounds,
                       "hardtanh passes no gradient at min_val or max_val (the opposite of "
                       "clamp)"),),
           exempt={"grad_nan": _HARDTANH_NAN, "grad_mixed": _HARDTANH_NAN}),
    OpInfo("softmax", "2.6", torch.softmax, ("tt.softmax", "Tensor.softmax", f"{_F}.softmax"),
           _softmax_sample(), autocast="fp32", stability=_softmax_sample(STABLE)),
    OpInfo("log_softmax", "2.6", torch.log_softmax,
           ("tt.log_softmax", "Tensor.log_softmax", f"{_F}.log_softmax"),
           _softmax_sample(), autocast="fp32", stability=_softmax_sample(STABLE)),
]

LOSSES = [
    OpInfo("mse_loss", "2.7", F.mse_loss, (f"{_F}.mse_loss",), _mse_sample, autocast="fp32"),
    # cross_entropy has no autocast kernel of its own: it runs as log_softmax + nll_loss,
    # both on the CUDA float32 list
    OpInfo("cross_entropy", "2.7", F.cross_entropy, (f"{_F}.cross_entropy",),
           _cross_entropy_sample(), autocast="fp32",
           stability=_cross_entropy_sample(STABLE)),
]
