"""Function: a differentiable operation, and how a call of one is recorded.

A ``Function`` subclass defines ``forward(ctx, *inputs)`` (tensors in, NumPy arrays out)
and ``backward(ctx, *grads)`` (NumPy arrays in and out, one gradient per forward input).
``Function.apply`` runs forward and, when the call must be recorded (``record``, task
1.1), makes ``ctx`` the ``grad_fn`` of the outputs: a node (``autograd.node``) whose
``next_functions`` point at the nodes that produced the inputs, as in PyTorch.

The layers above add to ``apply`` through ``autograd.dispatch``: under
``tt.amp.autocast`` a Function's inputs are cast by its ``autocast_policy`` before
forward, a call whose result is float16 or bfloat16 computes in float32 (``amp.opmath``),
and a call with cuda tensors runs the op's kernel-backed twin (``cuda.device``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import device_state as _device
from .. import dtypes
from . import grad_mode
from .autocast_state import state as _autocast
from .dispatch import dispatch
from .node import AccumulateGrad, BackwardNode, gradient_edge  # noqa: F401 - importable here too
from .views import make_view


class Function:
    """Base class of differentiable operations; subclasses define forward and backward.

    A Function whose forward returns a NumPy view of its first input's array sets
    ``is_view = True``: its output then shares that input's version counter and base,
    as PyTorch's views do.

    A Function whose forward writes into its first input's array (and returns that array)
    sets ``is_inplace = True``: ``apply`` then returns the input Tensor itself, with its
    version bumped and its history rebased onto the new node (see ``autograd.inplace``).

    ``saved_names`` may name what forward saves, in order (PyTorch's ``grad_fn._saved_self``
    ...); without it, inputs 0 and 1 are "self" and "other" and the output is "result".
    ``ctx.needs_input_grad`` is already set when forward runs, as in PyTorch.

    ``autocast_policy`` is the op's category in PyTorch's CUDA autocast policy, applied by
    ``tt.amp.autocast``: "lower_precision" (matmul, linear: inputs cast to the autocast
    dtype), "fp32" (softmax, exp, sum, losses ...: inputs cast to float32), "promote" (all
    inputs cast to the widest input type) or "none" (inputs left as they are).

    ``opmath``: when a call's result is float16 or bfloat16, forward and backward run on
    float32 copies of the inputs and the outputs (and input gradients) are rounded once,
    as PyTorch's kernels compute (so a low-precision matmul accumulates in float32). Views,
    in-place ops and casts never do; a Function that handles low precision itself sets
    ``opmath = False``.
    """

    _backward_cls: type[BackwardNode]
    is_view = False
    is_inplace = False
    saved_names: tuple[str | None, ...] | None = None
    autocast_policy = "none"
    opmath = True
    _uses_opmath = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._backward_cls = type(f"{cls.__name__}Backward", (BackwardNode,), {"_function": cls})
        cls._uses_opmath = cls.opmath and not cls.is_view and not cls.is_inplace

    @staticmethod
    def forward(ctx: BackwardNode, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("Function subclasses must implement forward")

    @staticmethod
    def backward(ctx: BackwardNode, *grads: np.ndarray) -> Any:
        raise NotImplementedError("Function subclasses must implement backward")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run forward on ``args`` and record the call in the graph when needed."""
        if _autocast.enabled:  # one thread-local read while autocast is off
            args = dispatch.autocast_inputs(cls, args)
        cuda = _device.active.value and _device.device_of(args)
        if cuda:  # assignment 6: the op's kernel-backed twin runs on device tensors
            cls = dispatch.kernel_function(cls)
        if cls.is_inplace:
            from .inplace import apply_inplace

            return apply_inplace(cls, args, kwargs)
        ctx = cls._backward_cls()
        ctx.needs_input_grad = needs_input_grad(args)
        low = dispatch.low_precision_result(args) if cls._uses_opmath else None
        if low is None:
            result = cls.forward(ctx, *args, **kwargs)
        else:  # task 4.1 (amp.opmath)
            result = dispatch.forward_in_float32(cls, ctx, args, kwargs, low)
        single = not isinstance(result, tuple)
        raw = (result,) if single else result
        outputs = tuple([_as_tensor(r) for r in raw])
        if cuda:
            _device.place(cls, outputs)
        if ctx._to_save:
            _scalars_to_arrays(ctx, raw, outputs)
        if cls.is_view:
            make_view(outputs[0], args[0])
        if record(ctx, args, outputs) and ctx._to_save:
            ctx._pack_saved(args, outputs)
        return outputs[0] if single else outputs


def needs_input_grad(args: tuple[Any, ...]) -> tuple[bool, ...]:
    """For each argument: whether a gradient will be computed for it if the call is
    recorded (grad mode on, not inference mode, a Tensor that requires grad)."""
    if not grad_mode.is_grad_enabled() or grad_mode.is_inference_mode_enabled():
        return (False,) * len(args)
    return tuple(bool(getattr(a, "_requires_grad", False)) for a in args)


_Tensor: Any = None  # tinytrain.tensor.Tensor, imported on first use (tensor imports us)


def _tensor_type() -> Any:
    global _Tensor
    if _Tensor is None:
        from ..tensor import Tensor

        _Tensor = Tensor
    return _Tensor


def _as_tensor(result: Any) -> Any:
    """A forward result (an array, or a NumPy scalar for 0-d results) as a new Tensor."""
    tensor = _Tensor or _tensor_type()
    return tensor(result if isinstance(result, np.ndarray) else np.asarray(result))


def _scalars_to_arrays(ctx: BackwardNode, raw: tuple[Any, ...], outputs: tuple[Any, ...]) -> None:
    """NumPy turns 0-d results into scalars (``np.exp(np.array(1.0))`` is a np.float64):
    save them as 0-d arrays, and a returned scalar as the output's own array."""
    if not any(isinstance(x, np.generic) for x in ctx._to_save):
        return
    as_output = {id(r): o.data for r, o in zip(raw, outputs, strict=True)}

    def as_array(x: Any) -> Any:
        if not isinstance(x, np.generic):
            return x
        return as_output[id(x)] if id(x) in as_output else np.asarray(x)

    ctx._to_save = tuple(as_array(x) for x in ctx._to_save)


def record(ctx: BackwardNode, inputs: tuple[Any, ...], outputs: tuple[Any, ...]) -> bool:
    """Make ``ctx`` the grad_fn of ``outputs`` if this call must be recorded.

    Returns True when it recorded. Fill in ``ctx.next_functions``, ``ctx.needs_input_grad``,
    ``ctx._input_meta`` and ``ctx._output_meta``, and set each floating-point output's
    ``grad_fn``, ``_output_nr`` and ``requires_grad``.
    """
    # HINT: record only when grad mode is on, inference mode is off (it wins even over
    # HINT: enable_grad) and some Tensor input requires grad.
    # HINT: gradient_edge(tensor) gives the (node, output_nr) pair for an input.
    # HINT: only floating point outputs get a grad_fn: test dtype in dtypes.FLOATING
    # HINT: (bfloat16's NumPy kind is "V", not "f").
    raise NotImplementedError("task 1.1: Function.apply builds the graph")
