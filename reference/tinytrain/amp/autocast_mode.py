"""autocast: run each op in the dtype PyTorch's CUDA autocast policy picks for it.

Inside ``with tt.amp.autocast("cuda"):`` (or ``"cpu"``: tinytrain applies the CUDA policy
on every device) every Function call goes through ``autocast_inputs`` before forward,
which casts its floating point inputs by the Function's ``autocast_policy``:

- ``"lower_precision"`` (matmul, linear): to the autocast dtype (float16 by default);
- ``"fp32"`` (softmax, log_softmax, exp, log, pow, sum, mse_loss, cross_entropy ...):
  to float32, where low precision would lose too much;
- ``"promote"``: all to the widest floating type among the inputs;
- ``"none"`` (everything else: add, relu, reshape ...): left as they are.

float64 tensors and non-float tensors are never cast, and in-place ops and calls with an
explicit ``dtype`` are left alone. The casts are ordinary differentiable casts, so
backward runs each op in the dtype its forward ran in, and gradients reach the inputs in
their own dtypes. Casting the same float32 weight to float16 for every matmul would be
wasted work: a cast of a float32 leaf that requires grad (a parameter) is cached until
the outermost autocast region exits.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes
from ..autograd import grad_mode
from ..autograd.autocast_state import state
from ..autograd.dispatch import dispatch
from ..ops.conversion import to_dtype

POLICIES = ("lower_precision", "fp32", "promote", "none")
_DEVICE_TYPES = ("cpu", "cuda")
_SUPPORTED = (dtypes.float16, dtypes.bfloat16)
_FLOAT32 = np.dtype(np.float32)
_FLOAT64 = np.dtype(np.float64)


class autocast:  # noqa: N801 - PyTorch's name
    """Context manager (and decorator) for mixed precision regions, as
    ``torch.amp.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``.

    ``dtype`` is the lower-precision type; None means the current one (``tt.float16``
    outside any region, on every device: tinytrain follows the CUDA policy, defaults
    included). ``enabled=False`` makes a region that runs every op in its inputs' dtypes,
    also inside an enabled region. ``cache_enabled`` (None: the current setting, True
    outside any region) caches the casts of float32 parameters.
    """

    def __init__(self, device_type: str, dtype: dtypes.DType | None = None,
                 enabled: bool = True, cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if device_type not in _DEVICE_TYPES:
            raise RuntimeError(
                f"User specified an unsupported autocast device_type '{device_type}'")
        self.device = device_type
        self.fast_dtype = get_autocast_dtype() if dtype is None else dtype
        self._cache_enabled = state.cache_enabled if cache_enabled is None else cache_enabled
        if enabled and self.fast_dtype not in _SUPPORTED:
            name = device_type.upper()
            warnings.warn(
                f"In {name} autocast, but the target dtype is not supported. Disabling "
                f"autocast.\n{name} Autocast only supports dtypes of tinytrain.bfloat16, "
                "tinytrain.float16 currently.", stacklevel=2)
            enabled = False
        self._enabled = enabled

    def __enter__(self) -> autocast:
        self._prev = (state.enabled, state.dtype, state.cache_enabled)
        state.enabled = self._enabled
        state.dtype = self.fast_dtype.np
        state.nesting += 1
        state.cache_enabled = self._cache_enabled
        return self

    def __exit__(self, *exc: object) -> None:
        # BEGIN SOLUTION 4.2
        # HINT: __enter__ counted this region in state.nesting (enabled or not); the cached
        # HINT: casts (state.cache) live until the outermost region exits. Then the state
        # HINT: __enter__ found (self._prev) comes back, whatever happened inside.
        state.nesting -= 1
        if state.nesting == 0:
            state.cache.clear()
        state.enabled, state.dtype, state.cache_enabled = self._prev
        # END SOLUTION

    def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:
        """``@autocast("cuda")``: run ``func`` inside this region."""

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return func(*args, **kwargs)

        return wrapper


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether ops are autocast here (tinytrain keeps one state for every device)."""
    return state.enabled


def get_autocast_dtype(device_type: str | None = None) -> dtypes.DType:
    """The lower-precision dtype autocast uses (float16 unless a region set another)."""
    return dtypes.from_numpy_dtype(state.dtype)


def autocast_inputs(function: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """``args`` for a call of ``function`` under autocast: each floating point tensor that
    is eligible (not float64) cast as ``function.autocast_policy`` says; other arguments
    (numbers, integer tensors, None) unchanged. In-place Functions are never autocast.
    Called by ``Function.apply`` only while autocast is enabled."""
    # BEGIN SOLUTION 4.2
    # HINT: is_floating_tensor(x) says which arguments autocast may touch; the target dtype
    # HINT: is state.dtype ("lower_precision"), float32 ("fp32") or, for "promote", float32
    # HINT: when any eligible input is float32, else state.dtype; PyTorch raises
    # HINT: RuntimeError for another low-precision type met before any float32 input
    # HINT: (bfloat16 under float16 autocast). Cast with cached_cast.
    policy = function.autocast_policy
    if policy == "none" or function.is_inplace:
        return args
    eligible = [a for a in args if is_floating_tensor(a) and a.data.dtype != _FLOAT64]
    if not eligible:
        return args
    if policy == "lower_precision":
        target = state.dtype
    elif policy == "fp32":
        target = _FLOAT32
    elif policy == "promote":  # PyTorch's prioritize(), argument by argument
        target = state.dtype
        for a in eligible:
            if target == _FLOAT32 or a.data.dtype == _FLOAT32:
                target = _FLOAT32
            elif a.data.dtype != state.dtype:
                raise RuntimeError("Unexpected floating ScalarType in autocast::prioritize: "
                                   f"{a.data.dtype.name} under {state.dtype.name} autocast")
    else:
        raise ValueError(f"{function.__name__}: unknown autocast_policy {policy!r}")
    return tuple(cached_cast(a, target) if is_floating_tensor(a) and a.data.dtype != _FLOAT64
                 else a for a in args)
    # END SOLUTION


def is_floating_tensor(x: Any) -> bool:
    """Whether ``x`` is a tensor of a floating point dtype (bfloat16 included)."""
    return dtypes.is_floating_point(getattr(getattr(x, "data", None), "dtype", None))


def cached_cast(tensor: Any, dtype: np.dtype) -> Any:
    """``tensor`` cast to ``dtype`` (differentiably), or itself when it has that dtype.

    A cast to the autocast dtype of a float32 leaf that requires grad (a weight) and is
    not a view is cached while cache_enabled: the same cast tensor is returned for the
    rest of the outermost autocast region (``state.cache``: ``id(tensor) -> (tensor,
    cast)``; keeping ``tensor`` itself keeps its id from being reused)."""
    # BEGIN SOLUTION 4.2
    # HINT: a leaf has no grad_fn; a view has a _base. A cast that goes into the cache is
    # HINT: made with recorded_cast: made under no_grad, it is still reused in grad mode.
    if tensor.data.dtype == dtype:
        return tensor
    cacheable = (state.cache_enabled and dtype == state.dtype
                 and tensor.data.dtype == _FLOAT32 and tensor.requires_grad
                 and tensor.grad_fn is None and tensor._base is None)
    if not cacheable:
        return to_dtype(tensor, dtype)
    hit = state.cache.get(id(tensor))
    if hit is not None and hit[0] is tensor:
        return hit[1]
    cast = recorded_cast(tensor, dtype)
    state.cache[id(tensor)] = (tensor, cast)
    return cast
    # END SOLUTION


def recorded_cast(tensor: Any, dtype: np.dtype) -> Any:
    """``tensor`` cast to ``dtype`` with the cast recorded for backward even inside
    ``no_grad``, as PyTorch makes the casts it caches: a cast cached under ``no_grad``
    is handed out again in grad mode, where the gradient must reach the weight."""
    previous = grad_mode._state.grad_enabled
    grad_mode._state.grad_enabled = True
    try:
        return to_dtype(tensor, dtype)
    finally:
        grad_mode._state.grad_enabled = previous


def clear_autocast_cache() -> None:
    """Drop every cached cast (``torch.clear_autocast_cache``)."""
    state.cache.clear()


dispatch.register(autocast_inputs=autocast_inputs)
