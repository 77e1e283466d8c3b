"""GradScaler: dynamic loss scaling, as ``torch.amp.GradScaler``.

Small float16 gradients underflow to zero. Multiplying the loss by a large factor S before
backward makes every gradient S times larger (so it survives in float16); the gradients are
divided by S again before the optimizer uses them. S is tuned on the fly: when a step's
gradients hold inf or NaN (S was too large, something overflowed) the step is skipped and S
shrinks; after ``growth_interval`` clean steps in a row S grows again.
"""

from __future__ import annotations

from collections import abc, defaultdict
from enum import Enum
from typing import Any

import numpy as np

from ..autograd.function import BackwardNode, Function
from ..dtypes import result_type
from ..tensor import Tensor


class _MulByScale(Function):
    """``tensor * scale`` for ``GradScaler.scale``. Given code, so loss scaling does not
    depend on the student's ``mul``; like torch it multiplies low-precision values in
    float32 and rounds the product to the result dtype (65536 * 0.001 is 65.56 in float16,
    not inf)."""

    opmath = False  # it widens to float32 itself (and so does not depend on task 4.1)

    @staticmethod
    def forward(ctx: BackwardNode, tensor: Tensor, scale: Tensor) -> np.ndarray:
        dtype = result_type(tensor, scale)
        ctx.compute = np.promote_types(dtype, np.float32)
        ctx.scale = scale.data.astype(ctx.compute)
        with np.errstate(over="ignore"):  # overflow to inf is the signal GradScaler acts on
            return (tensor.data.astype(ctx.compute) * ctx.scale).astype(dtype)

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray, None]:
        with np.errstate(over="ignore"):
            return (grad.astype(ctx.compute) * ctx.scale).astype(grad.dtype), None


class OptState(Enum):
    """Where one optimizer is in the current iteration."""

    READY = 0  # nothing done since the last update()
    UNSCALED = 1  # unscale_(optimizer) ran
    STEPPED = 2  # step(optimizer) ran


def _refresh_per_optimizer_state() -> dict[str, Any]:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    """Dynamic loss scaling. A training iteration::

        scaler.scale(loss).backward()   # gradients are now scale times too large
        scaler.step(optimizer)          # unscale them; skip optimizer.step() on inf/NaN
        scaler.update()                 # adjust the scale for the next iteration

    ``update()``: if any optimizer found inf/NaN since the last update, the scale is
    multiplied by ``backoff_factor`` and the growth tracker (the count of clean steps in a
    row) goes back to 0. Otherwise the tracker goes up by one; when it reaches
    ``growth_interval`` the scale is multiplied by ``growth_factor`` (only if the result
    is finite) and the tracker goes back to 0.

    State, as torch keeps it: ``_scale`` is a float32 zero-dim tensor and
    ``_growth_tracker`` an int32 one, both created by the first ``scale()`` call (until
    then ``get_scale()`` reports ``init_scale``). ``_per_optimizer_states[id(optimizer)]``
    is ``{"stage": OptState, "found_inf_per_device": {device: found_inf}}``, where
    ``found_inf`` is a float32 zero-dim tensor, 1.0 when that optimizer's gradients held
    inf or NaN; it is filled by ``unscale_`` and cleared by ``update()``.
    With ``enabled=False``, ``scale()`` returns its input, ``step()`` just calls
    ``optimizer.step()`` and the other methods do nothing.
    """

    def __init__(self, device: str = "cpu", init_scale: float = 2.0**16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale: Tensor | None = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker: Tensor | None = None
            self._per_optimizer_states: defaultdict[int, dict[str, Any]] = defaultdict(
                _refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname: str) -> tuple[Tensor, Tensor]:
        fix = ("This may indicate your script did not use scaler.scale(loss or outputs) "
               "earlier in the iteration.")
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self) -> None:
        self._scale = Tensor(np.full((), self._init_scale, dtype=np.float32))
        self._growth_tracker = Tensor(np.full((), self._init_growth_tracker, dtype=np.int32))

    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor, or lists/tuples of tensors) times the current scale; the
        multiply is recorded, so ``backward()`` of the result gives scaled gradients."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._lazy_init_scale_growth_tracker()
        scale = self._scale

        def apply_scale(val: Any) -> Any:
            if isinstance(val, Tensor):
                return _MulByScale.apply(val, scale)
            if isinstance(val, abc.Iterable):
                scaled = map(apply_scale, val)
                return type(val)(scaled) if isinstance(val, (list, tuple)) else scaled
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer: Any, inv_scale: Tensor, found_inf: Tensor,
                        allow_fp16: bool) -> dict[str, Tensor]:
        """Multiply every gradient of ``optimizer`` by ``inv_scale`` in place; set
        ``found_inf`` to 1.0 if any of them holds inf or NaN. Returns
        ``{device: found_inf}`` ({} when no parameter has a gradient)."""
        # HINT: check every gradient (fp16 ones are refused) before changing any of them.
        raise NotImplementedError("task 4.3: GradScaler: dynamic loss scaling")

    def unscale_(self, optimizer: Any) -> None:
        """Divide ("unscale") the optimizer's gradients by the scale, in place, and record
        whether any of them holds inf or NaN. Optional: ``step()`` unscales if this was
        not called; call it yourself to clip or inspect the real gradients first. At most
        once per optimizer between two ``update()`` calls."""
        # HINT: a disabled scaler does nothing; self._check_scale_growth_tracker("unscale_")
        # HINT: refuses a call before any scale(). The inverse scale is computed in float64,
        # HINT: then rounded to float32, as torch does.
        raise NotImplementedError("task 4.3: GradScaler: dynamic loss scaling")

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscale the optimizer's gradients (unless ``unscale_`` already did), then call
        ``optimizer.step(*args, **kwargs)`` only if none of them holds inf or NaN.
        Returns what ``optimizer.step`` returned, or None when the step was skipped."""
        # HINT: a disabled scaler just steps; with a closure keyword torch raises
        # HINT: RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        raise NotImplementedError("task 4.3: GradScaler: dynamic loss scaling")

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Adjust the scale for the next iteration (see the class docstring), or set it to
        ``new_scale``; then forget this iteration's per-optimizer records."""
        # HINT: the new scale is computed in float64 (scale * factor), then stored in the
        # HINT: float32 scale tensor; the tracker is an int32 tensor.
        raise NotImplementedError("task 4.3: GradScaler: dynamic loss scaling")

    def get_scale(self) -> float:
        """The current scale as a Python float (``init_scale`` before the first
        ``scale()``), or 1.0 when disabled."""
        if self._enabled:
            return self._init_scale if self._scale is None else float(self._scale.item())
        return 1.0

    def get_growth_factor(self) -> float:
        """The factor the scale grows by after ``growth_interval`` clean steps."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        """The factor the scale shrinks by after a step with inf/NaN gradients."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        """How many clean steps in a row make the scale grow."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if self._enabled:
            if self._growth_tracker is None:
                return self._init_growth_tracker
            return int(self._growth_tracker.item())
        return 0

    def is_enabled(self) -> bool:
        """Whether this scaler scales at all."""
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """``{"scale", "growth_factor", "backoff_factor", "growth_interval",
        "_growth_tracker"}`` as Python numbers; ``{}`` when disabled. Call it after
        ``update()``."""
        if self._enabled:
            return {
                "scale": self.get_scale(),
                "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker(),
            }
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Take the scale, factors, interval and growth tracker from ``state_dict``
        (a disabled scaler ignores it)."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.data[...] = state_dict["scale"]
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.data[...] = state_dict["_growth_tracker"]

    def _found_inf_per_device(self, optimizer: Any) -> dict[str, Tensor]:
        """``{device: found_inf}`` recorded for ``optimizer`` since the last update."""
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]
