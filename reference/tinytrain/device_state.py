"""Where a tensor's storage lives, as the core needs to know it without importing the cuda
device (assignment 6) or triton: the array type that marks storage as device memory, and
the check ``Function.apply`` runs once a cuda tensor exists. ``tensor.py`` and the
autograd core depend on this module, never on ``cuda/``."""

from __future__ import annotations

from typing import Any

import numpy as np

DEVICE_NAME = "cuda:0"


class CudaArray(np.ndarray):
    """The storage of a tensor on the ``cuda`` device. Under Triton's interpreter device
    memory is host memory, so this is a NumPy array marked as device memory: views keep
    the mark, and so does every Tensor that wraps it (``detach``, gradients, hooks)."""


class _Active:
    """Whether any cuda tensor was ever made: until then ``Function.apply`` checks
    nothing, so the CPU path pays one attribute read."""

    value = False


active = _Active()


def is_cuda(data: Any) -> bool:
    return isinstance(data, CudaArray)


def to_device_array(array: np.ndarray) -> CudaArray:
    """``array`` marked as device memory (no copy)."""
    active.value = True
    return np.asarray(array).view(CudaArray)


def to_host_array(array: np.ndarray) -> np.ndarray:
    """``array`` as plain host memory (no copy)."""
    return np.asarray(array).view(np.ndarray)


def device_of(args: tuple[Any, ...]) -> bool:
    """True when a Function call runs on the cuda device: some tensor argument lives
    there. A floating point CPU tensor of one or more dims among them is an error, as in
    PyTorch; 0-d CPU tensors (Python scalars) are allowed, and so are CPU tensors of
    integers or bools (indices, masks), which tinytrain moves to the device implicitly so
    that code building positions or causal masks on the CPU (assignment 5's GPT) runs
    unchanged."""
    from .tensor import Tensor

    cuda = cpu = False
    for a in args:
        if isinstance(a, Tensor):
            if isinstance(a.data, CudaArray):
                cuda = True
            elif a.data.ndim and a.data.dtype.kind in "fcV":
                cpu = True
    if cuda and cpu:
        raise RuntimeError("Expected all tensors to be on the same device, but found at "
                           "least two devices, cuda:0 and cpu!")
    return cuda


SELF_PLACING: set[type] = set()  # Functions that put their outputs on a device themselves


def place(function: type, outputs: tuple[Any, ...]) -> None:
    """Mark a cuda call's outputs as device tensors (unless the Function places them:
    a copy to the CPU)."""
    if function not in SELF_PLACING:
        mark_on_device(outputs)


def mark_on_device(tensors: tuple[Any, ...]) -> None:
    """Mark each tensor's storage as device memory (no copy)."""
    for t in tensors:
        if not isinstance(t.data, CudaArray):
            t.data = t.data.view(CudaArray)
