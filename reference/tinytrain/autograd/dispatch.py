"""What the layers above the core add to ``Function.apply``, registered when they load.

``apply`` calls these slots; it imports nothing above autograd. Mixed precision (``amp``)
registers its autocast casts and its float32 opmath at import, the cuda device
(``cuda.device``, which every path that makes a device tensor loads first) its
kernel-backed twins of the operators. The defaults are what a framework without those
parts does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _no_kernels(cls: type) -> type:
    raise RuntimeError("a cuda tensor exists but the cuda device (tinytrain.cuda.device) "
                       "is not loaded")


class Dispatch:
    """The slots ``Function.apply`` calls (see the module docstring)."""

    # amp: (function, args) -> args cast by the function's autocast policy
    autocast_inputs: Callable[[Any, tuple[Any, ...]], tuple[Any, ...]] = \
        staticmethod(lambda function, args: args)
    # amp: args -> float16/bfloat16 when that is the call's result dtype, else None
    low_precision_result: Callable[[tuple[Any, ...]], Any] = staticmethod(lambda args: None)
    # amp: (cls, ctx, args, kwargs, dtype) -> forward's outputs, computed in float32
    forward_in_float32: Callable[..., Any] | None = None
    # cuda: cls -> the Function that runs cls on device tensors
    kernel_function: Callable[[type], type] = staticmethod(_no_kernels)

    def register(self, **hooks: Callable[..., Any]) -> None:
        """Fill slots by name (an unknown name is an error)."""
        for name, hook in hooks.items():
            if not hasattr(Dispatch, name) or name == "register":
                raise AttributeError(f"Function.apply has no dispatch slot {name!r}")
            setattr(self, name, hook)


dispatch = Dispatch()
