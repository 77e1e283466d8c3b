"""Activation checkpointing (``tt.utils.checkpoint``): trade compute for memory.

``checkpoint(fn, *args)`` runs ``fn`` without recording it, so none of its activations are
saved for backward; only its inputs are. During backward it runs ``fn`` again, with grad
enabled, and backpropagates through that recomputed graph. This is PyTorch's reentrant
variant (``use_reentrant=True``): gradients reach ``fn``'s parameters through the inner
backward, and at least one input must require grad for any gradient to flow.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import random
from ..autograd import grad_mode
from ..autograd.engine import backward as _backward
from ..autograd.function import BackwardNode, Function
from ..tensor import Tensor


def checkpoint(
    function: Callable[..., Any],
    *args: Any,
    use_reentrant: bool | None = None,
    preserve_rng_state: bool = True,
    **kwargs: Any,
) -> Any:
    """``function(*args)``, with its activations recomputed during backward instead of
    saved. ``function`` returns a Tensor or a tuple of Tensors. With
    ``preserve_rng_state`` the recomputation sees the same random numbers (dropout).
    ``use_reentrant`` is accepted for PyTorch compatibility; tinytrain always runs the
    reentrant algorithm."""
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if grad_mode.is_grad_enabled() and not any(
        isinstance(a, Tensor) and a.requires_grad for a in args
    ):
        warnings.warn(
            "None of the inputs have requires_grad=True. Gradients will be None",
            UserWarning,
            stacklevel=2,
        )
    return CheckpointFunction.apply(function, preserve_rng_state, *args)


class CheckpointFunction(Function):
    """Runs a segment under no_grad in forward and recomputes it in backward."""

    @staticmethod
    def forward(
        ctx: BackwardNode, function: Callable[..., Any], preserve_rng_state: bool, *args: Any
    ) -> Any:
        # HINT: save only the tensor inputs (ctx.save_for_backward); keep the other arguments
        # HINT: and the generator state (random.default_generator().bit_generator.state) on
        # HINT: ctx. Run function without recording anything and return its arrays.
        raise NotImplementedError("task 3.4: Activation checkpointing")

    @staticmethod
    def backward(ctx: BackwardNode, *grads: np.ndarray) -> tuple[np.ndarray | None, ...]:
        # HINT: rebuild the arguments from detached copies of the saved inputs (each
        # HINT: requiring grad like the original), recompute with grad enabled (with
        # HINT: preserve_rng_state: the same random numbers, then put the generator back as
        # HINT: it was before the recomputation), backpropagate the incoming gradients
        # HINT: from the recomputed outputs, and return the detached inputs' .grad.
        raise NotImplementedError("task 3.4: Activation checkpointing")
