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
        # BEGIN SOLUTION 3.4
        # HINT: save only the tensor inputs (ctx.save_for_backward); keep the other arguments
        # HINT: and the generator state (random.default_generator().bit_generator.state) on
        # HINT: ctx. Run function without recording anything and return its arrays.
        ctx.function = function
        ctx.rng_state = random.default_generator().bit_generator.state if preserve_rng_state \
            else None
        ctx.tensor_at = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.others = [None if isinstance(a, Tensor) else a for a in args]
        ctx.save_for_backward(*(args[i] for i in ctx.tensor_at))
        with grad_mode.no_grad():
            outputs = function(*args)
        ctx.single = not isinstance(outputs, tuple)
        outputs = (outputs,) if ctx.single else outputs
        arrays = tuple(out.data for out in outputs)
        return arrays[0] if ctx.single else arrays
        # END SOLUTION

    @staticmethod
    def backward(ctx: BackwardNode, *grads: np.ndarray) -> tuple[np.ndarray | None, ...]:
        # BEGIN SOLUTION 3.4
        # HINT: rebuild the arguments from detached copies of the saved inputs (each
        # HINT: requiring grad like the original), recompute with grad enabled (with
        # HINT: preserve_rng_state: the same random numbers, then put the generator back as
        # HINT: it was before the recomputation), backpropagate the incoming gradients
        # HINT: from the recomputed outputs, and return the detached inputs' .grad.
        args = list(ctx.others)
        for i, saved in zip(ctx.tensor_at, ctx.saved_tensors):
            args[i] = saved.detach().requires_grad_(saved.requires_grad)
        generator = random.default_generator()
        state_now = generator.bit_generator.state
        if ctx.rng_state is not None:
            generator.bit_generator.state = ctx.rng_state
        try:
            with grad_mode.enable_grad():
                outputs = ctx.function(*args)
        finally:
            if ctx.rng_state is not None:  # without preserve_rng_state, draws move it on
                generator.bit_generator.state = state_now
        outputs = (outputs,) if ctx.single else outputs
        pairs = [(out, g) for out, g in zip(outputs, grads) if out.requires_grad]
        if pairs:
            _backward([out for out, _ in pairs], [Tensor(g) for _, g in pairs])
        input_grads = [
            a.grad.data if isinstance(a, Tensor) and a.grad is not None else None for a in args
        ]
        return (None, None, *input_grads)
        # END SOLUTION
