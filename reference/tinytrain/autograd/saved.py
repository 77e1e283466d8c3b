"""Saved tensors: what a node keeps for backward, with PyTorch's version check and the
saved-tensor hooks (``tt.autograd.graph.saved_tensors_hooks``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import grad_mode
from .graph import current_saved_tensors_hooks

# PyTorch's legacy tensor type names, used in the version error ("[torch.FloatTensor [3]]")
_TYPE_NAMES = {
    "float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
    "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor",
    "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor",
}


class SavedTensor:
    """One tensor saved for backward (PyTorch's SavedVariable).

    It remembers the tensor's version at save time; unpacking after an in-place change
    raises. Under ``saved_tensors_hooks`` the pack hook runs once, here, and its result is
    stored instead of the tensor; the unpack hook turns it back into a tensor each time
    backward (or ``grad_fn._saved_<name>``) needs it. As in PyTorch, versions are not
    checked through hooks: what the hooks return is their business.

    A forward *output* is saved as a history-free alias (``output_nr`` is its index), so
    that output -> grad_fn -> saved tensor -> output is not a reference cycle.
    """

    __slots__ = ("_counter", "_output_nr", "_packed", "_tensor", "_unpack_hook", "_version")

    def __init__(self, tensor: Any, output_nr: int | None = None,
                 version: int | None = None) -> None:
        if tensor._is_inference:
            grad_mode.check_inference_tensor(tensor, "save")
        self._counter = tensor._version_counter
        self._version = tensor._version_counter.value if version is None else version
        self._output_nr = output_nr
        if output_nr is not None:
            tensor = tensor._alias()
        self._tensor = None
        self._packed = None
        self._unpack_hook = None
        hooks = current_saved_tensors_hooks()
        if hooks is None:
            self._tensor = tensor
            return
        # BEGIN SOLUTION 3.2
        # HINT: the innermost (pack_hook, unpack_hook) pair is `hooks`. Pack once, now, and
        # HINT: keep only what pack_hook returned (not the tensor). PyTorch runs the hooks
        # HINT: with grad mode off.
        pack_hook, self._unpack_hook = hooks
        with grad_mode.no_grad():
            self._packed = pack_hook(tensor)
        # END SOLUTION

    @property
    def is_output(self) -> bool:
        return self._output_nr is not None

    def unpack(self, node: Any) -> Any:
        """The saved tensor for ``node`` (the node that saved it): after the version check,
        or through the unpack hook when it was packed."""
        if self._unpack_hook is None:
            if self._counter.value != self._version:  # written in place since it was saved
                # BEGIN SOLUTION 3.1
                # HINT: PyTorch's RuntimeError starts "one of the variables needed for gradient
                # HINT: computation has been modified by an inplace operation: ", then names the
                # HINT: tensor (self._describe(node)) and says "is at version N; expected version
                # HINT: M instead." (N: its version now, M: its version when it was saved).
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified "
                    f"by an inplace operation: {self._describe(node)} is at version "
                    f"{self._counter.value}; expected version {self._version} instead. "
                    "Hint: the backtrace further above shows the operation that failed to "
                    "compute its gradient. The variable in question was changed in there or "
                    "anywhere later. Good luck!"
                )
                # END SOLUTION
            if self._output_nr is None:
                return self._tensor
            # an output comes back with its history, like PyTorch's _saved_result
            out = self._tensor._alias()
            out.grad_fn, out._output_nr, out._requires_grad = node, self._output_nr, True
            return out
        # BEGIN SOLUTION 3.2
        # HINT: call the unpack hook on what pack_hook returned, every time (grad mode off);
        # HINT: PyTorch raises TypeError when it does not return a Tensor.
        with grad_mode.no_grad():
            tensor = self._unpack_hook(self._packed)
        if not isinstance(getattr(tensor, "data", None), np.ndarray):
            raise TypeError(
                "Output of saved tensor unpack_hook expected to be a Tensor but got result of "
                f"type {type(tensor).__name__}"
            )
        return tensor
        # END SOLUTION

    def _describe(self, node: Any) -> str:
        """How PyTorch names the saved tensor in the version error: type and shape, and
        the node it is an output of (the node that saved it, for a saved output; the
        tensor's current grad_fn otherwise)."""
        tensor = self._tensor
        desc = f"[tinytrain.{_TYPE_NAMES.get(tensor.data.dtype.name, tensor.data.dtype.name)} "
        desc += f"{list(tensor.shape)}]"
        grad_fn, output_nr = (node, self._output_nr) if self.is_output else (
            tensor.grad_fn, tensor._output_nr)
        if grad_fn is not None:
            name = type(grad_fn).__name__.removesuffix("Backward")
            desc += f", which is output {output_nr} of {name},"
        return desc

    def release(self) -> None:
        """Drop the tensor (or the packed value): backward without retain_graph is done."""
        self._tensor = None
        self._packed = None


def save(
    item: Any,
    inputs: tuple[Any, ...],
    outputs: tuple[Any, ...],
    input_versions: tuple[int | None, ...] | None = None,
) -> tuple[SavedTensor | None, str | None]:
    """Save one item of ``ctx.save_for_backward`` and give PyTorch's name for it.

    A Tensor argument of forward is saved as that input ("self", "other" for the first two),
    at its version when the op started (``input_versions``: an in-place op may write into
    an input it saved, as ``x.mul_(x)`` does). An array that is an output's data is saved as
    that output ("result", "result1" ...): for an in-place op, ``a.data`` is its result. An
    input's array is saved as the input; any other array as a new tensor.
    """
    from ..tensor import Tensor

    if item is None:
        return None, None
    if isinstance(item, np.generic):
        item = np.asarray(item)
    if not isinstance(item, (Tensor, np.ndarray)):
        raise TypeError(f"save_for_backward can only save tensors or arrays, got {type(item)}")

    def as_input(i: int) -> tuple[SavedTensor, str | None]:
        version = input_versions[i] if input_versions is not None else None
        return SavedTensor(inputs[i], version=version), ("self", "other")[i] if i < 2 else None

    if isinstance(item, Tensor):
        for i, arg in enumerate(inputs):
            if item is arg:
                return as_input(i)
        return SavedTensor(item), None
    for nr, out in enumerate(outputs):
        if item is out.data:
            return SavedTensor(out, nr), "result" if nr == 0 else f"result{nr}"
    for i, arg in enumerate(inputs):
        if isinstance(arg, Tensor) and item is arg.data:
            return as_input(i)
    return SavedTensor(Tensor(item)), None
