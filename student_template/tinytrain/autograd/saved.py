"""Saved tensors: what a node keeps for backward, with PyTorch's version check."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import grad_mode
from .graph import current_saved_tensors_hooks


class SavedTensor:
    """One tensor saved for backward.

    It remembers the tensor's version at save time; unpacking after an in-place change
    raises. Under ``saved_tensors_hooks`` the pack hook's result is stored instead of the
    tensor, and the unpack hook turns it back into a tensor when backward needs it.
    """

    __slots__ = ("_counter", "_origin", "_packed", "_tensor", "_unpack_hook", "_version")

    def __init__(self, tensor: Any, origin: str) -> None:
        if tensor._is_inference:
            grad_mode.check_inference_tensor(tensor, "save")
        self._counter = tensor._version_counter
        self._version = tensor._version_counter.value
        self._origin = origin
        hooks = current_saved_tensors_hooks()
        if hooks is None:
            self._tensor = tensor
            self._packed = None
            self._unpack_hook = None
        else:
            pack_hook, self._unpack_hook = hooks
            self._packed = pack_hook(tensor)
            self._tensor = None

    @classmethod
    def make(cls, item: Any, outputs_by_data: dict[int, Any]) -> SavedTensor | None:
        """Save a forward input (a Tensor), a forward output (its array) or another array."""
        from ..tensor import Tensor

        if item is None:
            return None
        if isinstance(item, Tensor):
            return cls(item, _describe(item))
        if isinstance(item, np.ndarray):
            output = outputs_by_data.get(id(item))
            if output is not None:
                # an output: save a history-free alias so output -> grad_fn -> saved -> output
                # is not a reference cycle
                return cls(output._alias(), _describe(output))
            tensor = Tensor(item)
            return cls(tensor, _describe(tensor))
        raise TypeError(f"save_for_backward can only save tensors or arrays, got {type(item)}")

    def unpack(self, node: Any) -> Any:
        """The saved tensor, after the version check and the unpack hook."""
        if self._counter.value != self._version:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by "
                f"an inplace operation: {self._origin} is at version "
                f"{self._counter.value}; expected version {self._version} instead. Hint: the "
                "backtrace further above shows the operation that failed to compute its "
                "gradient. The variable in question was changed in there or anywhere later."
            )
        if self._unpack_hook is None:
            return self._tensor
        tensor = self._unpack_hook(self._packed)
        if not hasattr(tensor, "data") or not isinstance(tensor.data, np.ndarray):
            raise TypeError(f"unpack_hook must return a Tensor, got {type(tensor).__name__}")
        return tensor

    def release(self) -> None:
        self._tensor = None
        self._packed = None


def _describe(tensor: Any) -> str:
    """How PyTorch names a saved tensor in the version error."""
    desc = f"[tinytrain.{tensor.data.dtype.name} {list(tensor.shape)}]"
    if tensor.grad_fn is not None:
        desc += f", which is output {tensor._output_nr} of {type(tensor.grad_fn).__name__},"
    return desc
