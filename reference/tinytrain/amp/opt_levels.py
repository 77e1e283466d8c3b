"""APEX-style mixed precision: ``tt.amp.initialize(model, optimizer, opt_level)``.

NVIDIA APEX named four recipes ("opt levels"); ``initialize`` applies one to a model and
its optimizer and returns both, ready for the APEX training loop::

    model, optimizer = tt.amp.initialize(model, optimizer, opt_level="O2")
    loss = loss_fn(model(x), y)
    with tt.amp.scale_loss(loss, optimizer) as scaled_loss:
        scaled_loss.backward()          # gradients are loss_scale times too large
    optimizer.step()                    # unscaled; skipped if they overflowed
    optimizer.zero_grad()

=====  ==================  ====================  ====================  ===========
level  parameters          forward               optimizer steps       loss scale
=====  ==================  ====================  ====================  ===========
O0     float32             float32               the parameters        1.0
O1     float32             autocast (per op)     the parameters        dynamic
O2     float16             float16               float32 master copies dynamic
O3     float16             float16               the parameters        1.0
=====  ==================  ====================  ====================  ===========

At O2 and O3 the model's forward casts floating point inputs to float16 and its outputs
back to float32, as APEX does, so the training loop does not change. At O2 the optimizer
holds float32 *master* copies of the float16 parameters: gradients are unscaled into the
masters' ``.grad`` in float32, the optimizer updates the masters, and the float16
parameters are refreshed from them after every step, so updates smaller than float16's
resolution accumulate instead of being rounded away. (APEX keeps BatchNorm in float32 at
O2; tinytrain has no BatchNorm.)

The dynamic loss scale is APEX's: it starts at 2**16; a backward whose gradients hold inf
or NaN halves it and skips that optimizer step; after ``scale_window`` (2000) clean steps
in a row it doubles, up to 2**24. A static scale never checks for overflow.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import dtypes
from ..autograd.grad_mode import no_grad
from ..ops.conversion import to_dtype
from ..tensor import Tensor
from .autocast_mode import autocast
from .grad_scaler import _MulByScale


@dataclass(frozen=True)
class OptLevel:
    """What an opt level does (APEX's "properties")."""

    cast_model_type: dtypes.DType | None  # parameters cast to this dtype (None: unchanged)
    patch_functions: bool  # forward runs under autocast (per-op casts)
    master_weights: bool  # the optimizer steps float32 copies of the parameters
    loss_scale: float | str  # a static scale, or "dynamic"


OPT_LEVELS = {
    "O0": OptLevel(dtypes.float32, patch_functions=False, master_weights=False, loss_scale=1.0),
    "O1": OptLevel(None, patch_functions=True, master_weights=False, loss_scale="dynamic"),
    "O2": OptLevel(dtypes.float16, patch_functions=False, master_weights=True,
                   loss_scale="dynamic"),
    "O3": OptLevel(dtypes.float16, patch_functions=False, master_weights=False, loss_scale=1.0),
}


def cast_floats(value: Any, dtype: np.dtype) -> Any:
    """``value`` with every floating point tensor in it (also inside lists, tuples and
    dicts) cast to ``dtype``; anything else as it is."""
    if isinstance(value, Tensor):
        return to_dtype(value, dtype) if value.data.dtype.kind == "f" else value
    if isinstance(value, (list, tuple)):
        return type(value)(cast_floats(v, dtype) for v in value)
    if isinstance(value, dict):
        return {k: cast_floats(v, dtype) for k, v in value.items()}
    return value


class LossScaler:
    """APEX's loss scaler: a static scale, or a dynamic one (``loss_scale="dynamic"``)."""

    def __init__(self, loss_scale: float | str, init_scale: float = 2.0**16,
                 scale_factor: float = 2.0, scale_window: int = 2000,
                 min_loss_scale: float | None = None, max_loss_scale: float = 2.0**24) -> None:
        self.dynamic = loss_scale == "dynamic"
        self._loss_scale = min(max_loss_scale, init_scale) if self.dynamic else float(loss_scale)
        self._scale_factor = scale_factor
        self._scale_window = scale_window
        self._min_loss_scale = min_loss_scale
        self._max_loss_scale = max_loss_scale
        self._unskipped = 0  # clean steps in a row since the scale last changed

    def loss_scale(self) -> float:
        return self._loss_scale

    def update_scale(self, overflow: bool) -> None:
        """After a backward: shrink the scale on overflow, grow it after ``scale_window``
        clean steps in a row (a static scale never changes)."""
        if not self.dynamic:
            return
        # BEGIN SOLUTION 4.4
        # HINT: overflow: divide by scale_factor (not below min_loss_scale, when set) and
        # HINT: restart the count of clean steps; otherwise count the step, and when the
        # HINT: count reaches scale_window multiply by scale_factor (at most max_loss_scale)
        # HINT: and restart the count.
        if overflow:
            self._loss_scale /= self._scale_factor
            if self._min_loss_scale is not None:
                self._loss_scale = max(self._min_loss_scale, self._loss_scale)
            self._unskipped = 0
            return
        self._unskipped += 1
        if self._unskipped == self._scale_window:
            self._loss_scale = min(self._max_loss_scale, self._loss_scale * self._scale_factor)
            self._unskipped = 0
        # END SOLUTION

    def state_dict(self) -> dict[str, Any]:
        return {"loss_scale": self._loss_scale, "unskipped": self._unskipped}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._loss_scale = state["loss_scale"]
        self._unskipped = state["unskipped"]


class AmpOptimizer:
    """The optimizer ``initialize`` returns: the user's optimizer plus the loss scaler
    and, at O2, the float32 master copies it steps (``masters[i]`` is the copy of
    ``model_params[i]``)."""

    def __init__(self, optimizer: Any, opt_level: str, scaler: LossScaler,
                 model_params: list[Tensor], masters: list[Tensor] | None) -> None:
        self.optimizer = optimizer
        self.opt_level = opt_level
        self.loss_scaler = scaler
        self.model_params = model_params
        self.masters = masters
        self._skip_next_step = False

    @property
    def param_groups(self) -> list[dict[str, Any]]:
        return self.optimizer.param_groups

    @property
    def state(self) -> Any:
        return self.optimizer.state

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of the model's parameters (and of the masters)."""
        for param in self.model_params + (self.masters or []):
            if set_to_none or param.grad is None:
                param.grad = None
            else:
                param.grad.data[...] = 0

    def unscale_gradients(self, scale: float) -> bool:
        """Divide the gradients by ``scale`` (into the masters' ``.grad`` at O2, in place
        otherwise), computing in float32. Returns whether any held inf or NaN (only
        looked for with a dynamic scale)."""
        # BEGIN SOLUTION 4.4
        # HINT: at O2 each master's .grad is a new float32 tensor (a parameter without a
        # HINT: gradient leaves its master's .grad as None); the model's float16 gradients
        # HINT: must not be changed there.
        overflow = False
        for i, param in enumerate(self.model_params):
            if param.grad is None:
                continue
            grad = param.grad.data
            if self.loss_scaler.dynamic and not np.all(np.isfinite(grad)):
                overflow = True
            unscaled = grad.astype(np.float32) * np.float32(1.0 / scale)
            if self.masters is not None:
                self.masters[i].grad = Tensor(unscaled)
            elif scale != 1.0:
                param.grad.data[...] = unscaled.astype(grad.dtype)
        return overflow
        # END SOLUTION

    def step(self) -> None:
        """The optimizer's step, unless the last backward overflowed (then nothing, once);
        at O2, the float16 parameters are then refreshed from their masters."""
        if self._skip_next_step:
            self._skip_next_step = False
            return
        self.optimizer.step()
        if self.masters is not None:
            # BEGIN SOLUTION 4.4
            # HINT: write each master's new value, rounded to float16, into its parameter
            # HINT: (in place: the model keeps its Parameter objects)
            with no_grad():
                for param, master in zip(self.model_params, self.masters, strict=True):
                    param.data[...] = master.data.astype(param.data.dtype)
                    param._bump_version()
            # END SOLUTION

    def state_dict(self) -> dict[str, Any]:
        return {"optimizer": self.optimizer.state_dict(),
                "loss_scaler": self.loss_scaler.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.loss_scaler.load_state_dict(state["loss_scaler"])


def initialize(model: Any, optimizer: Any, opt_level: str = "O1",
               loss_scale: float | str | None = None) -> tuple[Any, AmpOptimizer]:
    """Apply ``opt_level`` ("O0".."O3", see the module docstring) to ``model`` and
    ``optimizer``; returns ``(model, amp_optimizer)``. ``loss_scale`` overrides the
    level's ("dynamic", or a number). The model is changed in place."""
    if opt_level not in OPT_LEVELS:
        raise RuntimeError(f"Unexpected optimization level {opt_level}. Options are "
                           "'O0', 'O1', 'O2', 'O3'.")
    level = OPT_LEVELS[opt_level]
    scaler = LossScaler(level.loss_scale if loss_scale is None else loss_scale)
    params = [p for group in optimizer.param_groups for p in group["params"]]
    # BEGIN SOLUTION 4.4
    # HINT: cast the model (cast_model_type), wrap its forward (patch_forward), and at O2
    # HINT: put float32 copies of the parameters (leaves that require grad) in the
    # HINT: optimizer's param_groups in their place. The return below needs `masters`:
    # HINT: None except at O2, where it is the list of those copies (in the order of params).
    if level.cast_model_type is not None:
        model.to(level.cast_model_type)
    patch_forward(model, opt_level)
    masters = None
    if level.master_weights:
        masters = [Tensor(p.data.astype(np.float32), requires_grad=True) for p in params]
        copies = dict(zip(map(id, params), masters, strict=True))
        for group in optimizer.param_groups:
            group["params"] = [copies[id(p)] for p in group["params"]]
    # END SOLUTION
    return model, AmpOptimizer(optimizer, opt_level, scaler, params, masters)


def patch_forward(module: Any, opt_level: str, autocast_off: bool = False) -> None:
    """Make ``module.forward`` compute as ``opt_level`` does: O1 under autocast (float16);
    O0 on float32 inputs, O2/O3 on float16 inputs, their outputs cast to float32 (APEX's
    casts). ``autocast_off``: O0/O2/O3 also switch off an enclosing autocast region."""
    forward = module.forward

    def run_as_level(*args: Any, **kwargs: Any) -> Any:
        if opt_level == "O1":
            with autocast("cuda", dtype=dtypes.float16):
                return forward(*args, **kwargs)
        compute = np.dtype(np.float32 if opt_level == "O0" else np.float16)
        args, kwargs = cast_floats(args, compute), cast_floats(kwargs, compute)
        if autocast_off:
            with autocast("cuda", enabled=False):
                out = forward(*args, **kwargs)
        else:
            out = forward(*args, **kwargs)
        return cast_floats(out, np.dtype(np.float32))

    module.forward = run_as_level
    module._amp_opt_level = opt_level


@contextmanager
def scale_loss(loss: Tensor, optimizer: AmpOptimizer) -> Iterator[Tensor]:
    """``with scale_loss(loss, optimizer) as scaled: scaled.backward()``: the loss times
    the current loss scale; on exit the gradients are unscaled, an overflow (dynamic
    scale) makes the next ``optimizer.step()`` a no-op, and the scale is updated."""
    scale = optimizer.loss_scaler.loss_scale()
    yield _MulByScale.apply(loss, Tensor(np.array(scale, dtype=np.float32)))
    overflow = optimizer.unscale_gradients(scale)
    if overflow:
        optimizer._skip_next_step = True
    optimizer.loss_scaler.update_scale(overflow)
