"""The Tensor: a NumPy array plus the autograd metadata PyTorch keeps beside it."""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from . import dtypes
from .autograd import grad_mode
from .autograd.hooks import RemovableHandle
from .device_state import DEVICE_NAME, CudaArray


class VersionCounter:
    """Counts in-place writes; a view shares the counter of its base."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


class Tensor:
    """An n-dimensional array that records the operations applied to it.

    Storage is a NumPy array (``.data``); a view's array is a NumPy view of its base's.
    """

    __slots__ = (
        "__weakref__",
        "_backward_hooks",
        "_base",
        "_creation_meta",
        "_grad",
        "_grad_accumulator",
        "_is_inference",
        "_output_nr",
        "_post_accumulate_grad_hooks",
        "_requires_grad",
        "_version_counter",
        "_views",
        "data",
        "grad_fn",
    )

    def __init__(self, data: np.ndarray, requires_grad: bool = False) -> None:
        if not isinstance(data, np.ndarray):
            if not isinstance(data, np.generic):  # NumPy scalars come from 0-d arithmetic
                raise TypeError("Tensor() takes a NumPy array; use tinytrain.tensor() for other data")
            data = np.asarray(data)
        self.data = data
        self._requires_grad = False
        self._grad: Tensor | None = None
        self.grad_fn = None
        self._output_nr = 0
        self._version_counter = VersionCounter()
        self._base: Tensor | None = None
        self._backward_hooks: list[Callable] | None = None
        self._post_accumulate_grad_hooks: list[Callable] | None = None
        self._grad_accumulator: weakref.ref | None = None
        self._is_inference = grad_mode.is_inference_mode_enabled()
        self._views: dict[int, weakref.ref] | None = None  # live views of this base (by id)
        self._creation_meta: str | None = None  # for a view: the grad mode it was made in
        if requires_grad:
            self.requires_grad = True

    # ----- metadata -------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def dtype(self) -> dtypes.DType:
        return dtypes.from_numpy_dtype(self.data.dtype)

    @property
    def device(self) -> str:
        """"cpu", or "cuda:0" for a tensor on the cuda device (assignment 6)."""
        return DEVICE_NAME if isinstance(self.data, CudaArray) else "cpu"

    @property
    def is_cuda(self) -> bool:
        return isinstance(self.data, CudaArray)

    @property
    def ndim(self) -> int:
        return self.data.ndim

    def dim(self) -> int:
        return self.data.ndim

    def size(self, dim: int | None = None) -> tuple[int, ...] | int:
        return self.data.shape if dim is None else self.data.shape[dim]

    def numel(self) -> int:
        return self.data.size

    def element_size(self) -> int:
        return self.data.itemsize

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def is_contiguous(self) -> bool:
        return self.data.flags.c_contiguous

    def is_inference(self) -> bool:
        """True for tensors created under ``inference_mode``."""
        return self._is_inference

    @property
    def _version(self) -> int:
        return self._version_counter.value

    def _bump_version(self) -> None:
        self._version_counter.value += 1

    # ----- autograd attributes --------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        if self.grad_fn is not None:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to "
                "use a computed variable in a subgraph that doesn't require differentiation "
                "use var_no_grad = var.detach()."
            )
        if flag and not self.dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if flag and self._is_inference:
            grad_mode.check_inference_tensor(self, "set_requires_grad")
        self._requires_grad = bool(flag)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self) -> bool:
        """Tensors not created by a recorded operation (grad_fn is None)."""
        return self.grad_fn is None

    @property
    def grad(self) -> Tensor | None:
        if self.grad_fn is not None and not self.retains_grad:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. "
                "Its .grad attribute won't be populated during autograd.backward(). If you "
                "indeed want the .grad field to be populated for a non-leaf Tensor, use "
                ".retain_grad() on the non-leaf Tensor.",
                UserWarning,
                stacklevel=2,
            )
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None and value.shape != self.shape:
            raise RuntimeError(
                f"assigned grad has data of a different size: {value.shape} vs {self.shape}"
            )
        self._grad = value

    @property
    def retains_grad(self) -> bool:
        """True for a non-leaf whose ``.grad`` is kept (see ``retain_grad``)."""
        node = self.grad_fn
        return node is not None and self._output_nr in node._retained

    def backward(
        self,
        gradient: Tensor | None = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
    ) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad``."""
        from .autograd.engine import backward

        backward(self, gradient, retain_graph=retain_graph, create_graph=create_graph)

    def retain_grad(self) -> None:
        """Keep this non-leaf tensor's gradient in ``.grad`` during backward."""
        # BEGIN SOLUTION 1.4
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None:
            return  # leaves keep their gradient anyway
        self.grad_fn._retained[self._output_nr] = weakref.ref(self)
        # END SOLUTION

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned tensor
        replaces the gradient. Returns a handle whose ``remove()`` unregisters the hook."""
        # BEGIN SOLUTION 1.4
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is None:
            if self._backward_hooks is None:
                self._backward_hooks = []
            hooks = self._backward_hooks
        else:
            hooks = self.grad_fn._tensor_hooks.setdefault(self._output_nr, [])
        hooks.append(hook)
        return RemovableHandle(hooks, hook)
        # END SOLUTION

    def register_post_accumulate_grad_hook(self, hook: Callable[[Tensor], None],
                                           ) -> RemovableHandle:
        """Call ``hook(self)`` each time backward has added a gradient into this leaf's
        ``.grad`` (data parallelism starts communicating a gradient from here)."""
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                               "tensors")
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._post_accumulate_grad_hooks is None:
            self._post_accumulate_grad_hooks = []
        self._post_accumulate_grad_hooks.append(hook)
        return RemovableHandle(self._post_accumulate_grad_hooks, hook)

    def detach(self) -> Tensor:
        """A new leaf that shares this tensor's storage and version counter, without
        history and without requiring grad."""
        # BEGIN SOLUTION 1.4
        out = Tensor(self.data)
        out._version_counter = self._version_counter
        out._is_inference = self._is_inference
        return out
        # END SOLUTION

    def _alias(self) -> Tensor:
        """Framework helper: a history-free alias sharing storage and version counter."""
        out = Tensor.__new__(Tensor)
        out.data = self.data
        out._requires_grad = False
        out._grad = None
        out.grad_fn = None
        out._output_nr = 0
        out._version_counter = self._version_counter
        out._base = None
        out._backward_hooks = None
        out._post_accumulate_grad_hooks = None
        out._grad_accumulator = None
        out._is_inference = self._is_inference
        out._views = None
        out._creation_meta = None
        return out

    # ----- conversion -----------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """The NumPy array behind this tensor (shared, not copied)."""
        if self._requires_grad:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. "
                "Use tensor.detach().numpy() instead."
            )
        return self.data

    def item(self) -> Any:
        if self.data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self.data.size} elements cannot be converted to Scalar"
            )
        return self.data.reshape(()).item()

    def tolist(self) -> Any:
        return self.data.tolist()

    def __len__(self) -> int:
        if self.data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.data.shape[0]

    def __bool__(self) -> bool:
        if self.data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.data.reshape(()))

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        body = np.array2string(self.data, separator=", ", precision=4, prefix="tensor(")
        extras = []
        if self.data.dtype not in (np.float32, np.int64, np.bool_):
            extras.append(f"dtype={self.dtype!r}")
        if self.grad_fn is not None:
            extras.append(f"grad_fn=<{type(self.grad_fn).__name__}>")
        elif self._requires_grad:
            extras.append("requires_grad=True")
        return "tensor(" + ", ".join([body, *extras]) + ")"
