"""In-place operations in the graph, as PyTorch does them.

A Function with ``is_inplace = True`` writes into the array of its first argument (the
*target*) and returns that array. ``Function.apply`` hands it to ``apply_inplace``, which

1. refuses writes PyTorch refuses (``check_inplace``): a leaf that requires grad, a view of
   one, a view made under no_grad written with grad mode on, an inference tensor;
2. runs forward, then bumps the target's version (a view shares its base's counter, so a
   tensor saved earlier sees the write through any of its views);
3. when the call is recorded, *rebases* the target's history: its grad_fn becomes the new
   node, whose first edge is the target's old history (``rebase_history``). A write into a
   view changes its base, so the base's history is rebased instead, onto a ``CopySlices``
   node: the base's gradient passes through unchanged except in the view's region, which
   goes through the in-place node's backward. Every live view of that base then gets a
   fresh grad_fn reading from the base's new history (``AsStridedBackward``), as PyTorch
   regenerates view grad_fns after their base changed;
4. returns the target itself.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import grad_mode
from .function import Function, needs_input_grad, record
from .node import BackwardNode, gradient_edge

LEAF_ERROR = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_ERROR = (
    "a view of a leaf Variable that requires grad is being used in an in-place operation."
)
NO_GRAD_VIEW_ERROR = (
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
    "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify "
    "your code by moving both the view and the inplace either both inside the no_grad block "
    "(if you don't want the inplace to be tracked) or both outside (if you want the inplace "
    "to be tracked)."
)
OVERLAP_ERROR = (
    "unsupported operation: more than one element of the written-to tensor refers to a "
    "single memory location. Please clone() the tensor before performing the operation."
)


def apply_inplace(cls: type[Function], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run the in-place Function ``cls`` on ``args`` (``args[0]`` is written) and return
    ``args[0]`` itself: version bumped and, when recorded, history rebased."""
    from ..tensor import Tensor

    target = args[0]
    if not isinstance(target, Tensor):
        raise TypeError(f"{cls.__name__} writes into a Tensor, got {type(target).__name__}")
    if any(st == 0 and n > 1 for st, n in zip(target.data.strides, target.shape)):
        raise RuntimeError(OVERLAP_ERROR)
    ctx = cls._backward_cls()
    ctx.needs_input_grad = needs_input_grad(args)
    versions = tuple(getattr(a, "_version", None) for a in args)  # before the write
    old_grad_fn, old_output_nr = target.grad_fn, target._output_nr
    # HINT: refuse the write before anything changes (check_inplace); the call will be
    # HINT: recorded when some input needs a gradient (ctx.needs_input_grad).
    raise NotImplementedError("task 3.1: In-place ops: version counters, the saved-tensor check, history rebase")
    result = cls.forward(ctx, *args, **kwargs)
    if result is not target.data:
        raise RuntimeError(
            f"{cls.__name__}.forward must write into its first argument's array and return it"
        )
    # HINT: bump the version before saving (a saved result must carry the new version;
    # HINT: saved inputs carry `versions`, from before the write). record(ctx, args,
    # HINT: (target,)) reads the target's old history for ctx's edges before it makes ctx
    # HINT: the target's grad_fn; then rebase_history, then ctx._pack_saved.
    raise NotImplementedError("task 3.1: In-place ops: version counters, the saved-tensor check, history rebase")
    if old_grad_fn is not None and target.grad_fn is not old_grad_fn:
        # retain_grad() follows the tensor to its new history (hooks stay with the old one)
        retained = old_grad_fn._retained.pop(old_output_nr, None)
        if retained is not None:
            target.grad_fn._retained[target._output_nr] = retained
    return target


def check_inplace(tensor: Any, records: bool) -> None:
    """Raise PyTorch's RuntimeError if ``tensor`` may not be written in place.

    ``records``: whether the write will be recorded (grad mode on and some input requires
    grad). Inference tensors may only be written inside inference_mode
    (``grad_mode.check_inference_tensor``). With grad mode on: a leaf that requires grad,
    or a view of one, may not be written; nor may a view made under no_grad when the
    write would be recorded or its base requires grad.
    """
    raise NotImplementedError("task 3.1: In-place ops: version counters, the saved-tensor check, history rebase")


def rebase_history(tensor: Any, node: BackwardNode) -> None:
    """``record`` made ``node`` (an in-place op on ``tensor``) the grad_fn of ``tensor``.
    If ``tensor`` is a view, its base is what changed: give the base a ``CopySlices`` grad_fn
    around ``node``. Then refresh the grad_fn of every live view of the base."""
    # HINT: CopySlices(base, view, node) must read the base's old history: build it before
    # HINT: you set base.grad_fn. refresh_views(base) does the views.
    raise NotImplementedError("task 3.1: In-place ops: version counters, the saved-tensor check, history rebase")


class CopySlices(BackwardNode):
    """The grad_fn of a base after an in-place op wrote into one of its views.

    ``fn`` is the in-place op's node (its first input: the view's old value). The base's
    old history and ``fn``'s other inputs are this node's next functions.
    """

    def __init__(self, base: Any, view: Any, fn: BackwardNode) -> None:
        super().__init__()
        self.fn = fn
        self.geometry = geometry(base.data, view.data)
        self.next_functions = (gradient_edge(base), *fn.next_functions[1:])
        self.needs_input_grad = (base._requires_grad, *fn.needs_input_grad[1:])
        self._input_meta = ((base.shape, base.data.dtype), *fn._input_meta[1:])
        self._output_meta = ((base.shape, base.data.dtype),)

    def _run_backward(self, grads: list[np.ndarray | None]) -> tuple[np.ndarray | None, ...]:
        """Gradient for the base's old value (and ``fn``'s other inputs) from the gradient
        of the base's new value."""
        # HINT: view_positions(self.geometry) gives, for each element of the view, its flat
        # HINT: index in the base. Outside the view the gradient passes through unchanged;
        # HINT: inside it, self.fn._run_backward([grad of the view]) gives the gradient of
        # HINT: the view's old value (None means zero) and of fn's other inputs.
        raise NotImplementedError("task 3.1: In-place ops: version counters, the saved-tensor check, history rebase")

    def _release(self) -> None:
        super()._release()
        self.fn._release()


class AsStrided(Function):
    """The grad_fn a view gets after its base's history changed: its gradient lands in the
    view's place in a zero gradient for the base (PyTorch's AsStridedBackward)."""

    @staticmethod
    def forward(ctx: BackwardNode, *args: Any) -> np.ndarray:
        raise RuntimeError("AsStrided only appears as the regenerated grad_fn of a view")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        out = np.zeros(ctx._input_meta[0][0], grad.dtype)
        np.add.at(out.reshape(-1), view_positions(ctx.geometry), grad)
        return out


def refresh_views(base: Any) -> None:
    """Give every live view of ``base`` (made with grad mode on) a grad_fn that reads from
    ``base``'s current history."""
    if not base._views or not base._requires_grad:
        return
    edge = gradient_edge(base)
    for ref in list(base._views.values()):
        view = ref()
        if view is None or view._creation_meta != "default":
            continue
        node = AsStrided._backward_cls()
        node.next_functions = (edge,)
        node.needs_input_grad = (True,)
        node._input_meta = ((base.shape, base.data.dtype),)
        node._output_meta = ((view.shape, view.data.dtype),)
        node.geometry = geometry(base.data, view.data)
        view.grad_fn, view._output_nr, view._requires_grad = node, 0, True


# ----- where a view's elements are in its base --------------------------------------------
def geometry(base: np.ndarray, view: np.ndarray) -> tuple[Any, ...]:
    """What ``view_positions`` needs to place ``view`` (a NumPy view into ``base``'s memory)
    inside ``base``, without keeping either array alive: shapes, strides and offset."""
    offset = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return base.shape, base.strides, view.shape, view.strides, offset, base.itemsize


def view_positions(geom: tuple[Any, ...]) -> np.ndarray:
    """For each element of the view, the flat (C-order) index of the same element of the
    base: ``grad_base.reshape(-1)[positions]`` is the view's part of a base gradient."""
    base_shape, base_strides, view_shape, view_strides, offset, itemsize = geom
    if math.prod(base_shape) == 0 or math.prod(view_shape) == 0:
        return np.zeros(view_shape, np.intp)
    if any(s % itemsize for s in (*base_strides, *view_strides, offset)):
        raise RuntimeError("tinytrain: a view whose strides are not whole elements")
    b_st = [s // itemsize for s in base_strides]
    v_st = [s // itemsize for s in view_strides]
    # lay the base's element indices out in a buffer that mirrors the base's memory, then
    # read them back through the view's geometry
    low = sum(min(0, (n - 1) * s) for n, s in zip(base_shape, b_st))
    high = sum(max(0, (n - 1) * s) for n, s in zip(base_shape, b_st))
    buf = np.full(high - low + 1, -1, np.intp)
    step = buf.itemsize
    base_in_buf = as_strided(buf[-low:], base_shape, [s * step for s in b_st])
    base_in_buf[...] = np.arange(math.prod(base_shape)).reshape(base_shape)
    start = offset // itemsize - low
    return as_strided(buf[start:], view_shape, [s * step for s in v_st]).copy()
