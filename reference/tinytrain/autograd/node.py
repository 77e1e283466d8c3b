"""The backward graph's nodes, and how gradients reach a leaf.

A ``BackwardNode`` is the ``grad_fn`` of a recorded call and the ``ctx`` its Function's
forward and backward receive: what it saved, the edges to the nodes that produced its
inputs (``next_functions``), its tensor hooks. An ``AccumulateGrad`` sits behind each leaf
that requires grad and adds the gradients that reach it into ``.grad``.
"""

from __future__ import annotations

import weakref
from types import MappingProxyType
from typing import Any

import numpy as np

from .. import device_state as _device
from .. import dtypes
from .saved import SavedTensor, save


class BackwardNode:
    """A vertex of the backward graph, and the ``ctx`` its Function's methods receive.

    ``next_functions[i]`` is ``(node, output_nr)`` for input ``i``: the node that produced
    that input (an ``AccumulateGrad`` for a leaf) and which of its outputs it was, or
    ``(None, 0)`` for an input that does not require grad.
    """

    _function: Any  # the Function class whose calls this node records
    # Defaults, replaced on the node when its call is recorded (class attributes: one node
    # is made per operator call, so making one must be cheap).
    next_functions: tuple[tuple[BackwardNode | None, int], ...] = ()
    needs_input_grad: tuple[bool, ...] = ()
    _to_save: tuple[Any, ...] = ()
    _saved: tuple[SavedTensor | None, ...] | None = None
    _released = False
    _input_meta: tuple[tuple[tuple[int, ...], np.dtype] | None, ...] = ()
    _output_meta: tuple[tuple[tuple[int, ...], np.dtype], ...] = ()
    _names_saved: tuple[str | None, ...] = ()  # PyTorch's name of each saved tensor
    _opmath = False  # True: forward ran in float32 for low-precision inputs; so does backward

    def __init__(self) -> None:
        self._tensor_hooks: dict[int, list] = {}
        self._retained: dict[int, weakref.ref] = {}

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self):#x}>"

    # ----- saved tensors --------------------------------------------------------------
    def save_for_backward(self, *items: Any) -> None:
        """Keep tensors (or arrays) for backward; read them back with ``saved_tensors``."""
        self._to_save = items

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        self._check_not_released()
        if self._saved is None:  # not recorded: forward was called directly
            from ..tensor import Tensor

            found = tuple(Tensor(x) if isinstance(x, np.ndarray) else x for x in self._to_save)
        else:
            found = tuple(None if s is None else s.unpack(self) for s in self._saved)
        if self._opmath:  # kept in low precision, computed with in float32
            found = tuple(_float32_alias(t) for t in found)
        return found

    def _check_not_released(self) -> None:
        if self._released:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access "
                "saved tensors after they have already been freed). Saved intermediate "
                "values of the graph are freed when you call .backward() or autograd.grad(). "
                "Specify retain_graph=True if you need to backward through the graph a second "
                "time or if you need to access saved tensors after calling backward."
            )

    def _pack_saved(
        self,
        inputs: tuple[Any, ...],
        outputs: tuple[Any, ...],
        input_versions: tuple[int | None, ...] | None = None,
    ) -> None:
        """Turn what forward asked to save into SavedTensors (runs after forward, so an
        output saved by forward is recognised and saved without a reference cycle), and
        name each one: the Function's ``saved_names`` where given, else PyTorch's name
        ("self", "other", "result") found by identity. ``input_versions``: the inputs'
        versions when the op started, if it wrote into one (see ``saved.save``)."""
        saved = [save(item, inputs, outputs, input_versions) for item in self._to_save]
        declared = self._function.saved_names or ()
        self._saved = tuple(s for s, _ in saved)
        self._names_saved = tuple(
            declared[i] if i < len(declared) else name for i, (_, name) in enumerate(saved)
        )
        self._to_save = ()

    def __getattr__(self, name: str) -> Any:
        """``grad_fn._saved_self``, ``_saved_other``, ``_saved_result``...: a saved tensor by
        PyTorch's name, unpacked on each access (only called for attributes not found)."""
        if not name.startswith("_saved_") or name == "_saved":
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        # BEGIN SOLUTION 3.2
        # HINT: self._names_saved[i] names self._saved[i] (a SavedTensor, or None when
        # HINT: nothing was saved there); unpack it for this node on every access.
        names = self.__dict__.get("_names_saved", ())
        if name[len("_saved_"):] not in names:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        self._check_not_released()
        saved = self._saved[names.index(name[len("_saved_"):])]
        return None if saved is None else saved.unpack(self)
        # END SOLUTION

    def _release(self) -> None:
        """Free the saved tensors (backward without retain_graph)."""
        if self._saved:
            for saved in self._saved:
                if saved is not None:
                    saved.release()
        self._saved = ()
        self._released = True

    # ----- running backward -----------------------------------------------------------
    def _run_backward(self, grads: list[np.ndarray | None]) -> tuple[np.ndarray | None, ...]:
        """Call the Function's backward and check what it returns: one gradient per forward
        argument (None for arguments that need none; trailing ones may be left out)."""
        for i, grad in enumerate(grads):
            if grad is None:  # an output that received no gradient counts as zeros
                shape, dtype = self._output_meta[i]
                grads[i] = np.zeros(shape, dtype)
        if self._opmath:  # backward computes in float32 too; _check_grad rounds the results
            grads = [g.astype(np.float32) if g.dtype in dtypes.LOW_PRECISION else g
                     for g in grads]
        result = self._function.backward(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        n_inputs = len(self.next_functions)
        if len(result) < n_inputs:  # trailing gradients of non-differentiable inputs: optional
            if any(self.needs_input_grad[len(result):]):
                raise RuntimeError(
                    f"function {self.name()} returned an incorrect number of gradients "
                    f"(expected {n_inputs}, got {len(result)})"
                )
            result = result + (None,) * (n_inputs - len(result))
        return tuple([self._check_grad(i, g) for i, g in enumerate(result[:n_inputs])])

    def _check_grad(self, index: int, grad: Any) -> np.ndarray | None:
        if grad is None or self.next_functions[index][0] is None:
            return None
        if not isinstance(grad, np.ndarray):  # a Tensor is accepted too
            grad = np.asarray(getattr(grad, "data", grad))
        shape, dtype = self._input_meta[index]
        if grad.shape != shape:
            raise RuntimeError(
                f"Function {self.name()} returned an invalid gradient at index {index} - "
                f"got {list(grad.shape)} but expected shape compatible with {list(shape)}"
            )
        return grad if grad.dtype == dtype else grad.astype(dtype)

    def _run_tensor_hooks(self, grads: list[np.ndarray | None]) -> list[np.ndarray | None]:
        """Apply hooks registered on this node's output tensors, then retain_grad."""
        # BEGIN SOLUTION 1.4
        from ..tensor import Tensor

        for nr, hooks in self._tensor_hooks.items():
            for hook in list(hooks):
                if grads[nr] is None:
                    continue
                result = hook(Tensor(grads[nr]))
                if result is not None:
                    grads[nr] = result.data
        for nr, ref in self._retained.items():
            tensor = ref()
            if tensor is None or grads[nr] is None:
                continue
            if tensor._grad is None:
                tensor._grad = Tensor(grads[nr].copy())
            else:
                tensor._grad = Tensor(tensor._grad.data + grads[nr])
        return grads
        # END SOLUTION

    def _has_tensor_hooks(self) -> bool:
        return bool(self._tensor_hooks or self._retained)


class AccumulateGrad(BackwardNode):
    """The node behind a leaf that requires grad: adds the gradient into ``.grad``."""

    # a leaf's hooks live on the tensor (``_backward_hooks``), never on this node
    _tensor_hooks = _retained = MappingProxyType({})

    def __init__(self, variable: Any) -> None:  # no per-node dicts: see above
        self.variable = variable
        self._output_meta = ((variable.shape, variable.data.dtype),)

    def _run_tensor_hooks(self, grads: list[np.ndarray | None]) -> list[np.ndarray | None]:
        # BEGIN SOLUTION 1.4
        from ..tensor import Tensor

        for hook in list(self.variable._backward_hooks or ()):
            if grads[0] is None:
                break
            result = hook(Tensor(grads[0]))
            if result is not None:
                grads[0] = result.data
        return grads
        # END SOLUTION

    def _has_tensor_hooks(self) -> bool:
        return bool(self.variable._backward_hooks)

    def _run_backward(self, grads: list[np.ndarray | None]) -> tuple[()]:
        (grad,) = grads
        if grad is not None:
            accumulate_into_leaf(self.variable, grad)
            leaf = self.variable
            if isinstance(leaf.data, _device.CudaArray) and leaf._grad is not None:
                _device.mark_on_device((leaf._grad,))  # a device parameter's .grad is there too
            for hook in list(leaf._post_accumulate_grad_hooks or ()):
                hook(leaf)
        return ()


def accumulate_into_leaf(leaf: Any, grad: np.ndarray) -> None:
    """Add ``grad`` into ``leaf.grad``: set on the first call, summed on later ones."""
    # BEGIN SOLUTION 1.2
    from ..tensor import Tensor

    if leaf._grad is None:
        leaf._grad = Tensor(np.array(grad, dtype=leaf.data.dtype, copy=True))
    else:
        leaf._grad.data += grad
    # END SOLUTION


def grad_accumulator(leaf: Any) -> AccumulateGrad:
    """The one AccumulateGrad node of a leaf (made on first use, shared by all edges)."""
    node = leaf._grad_accumulator() if leaf._grad_accumulator is not None else None
    if node is None:
        node = AccumulateGrad(leaf)
        leaf._grad_accumulator = weakref.ref(node)
    return node


def gradient_edge(tensor: Any) -> tuple[BackwardNode | None, int]:
    """Where a gradient for ``tensor`` must be sent: ``(node, output_nr)``."""
    if tensor.grad_fn is not None:
        return tensor.grad_fn, tensor._output_nr
    if tensor._requires_grad:
        return grad_accumulator(tensor), 0
    return None, 0


def _float32_alias(x: Any) -> Any:
    """A floating point Tensor's values in float32, as a history-free tensor that shares
    its version counter (so a save of it is still checked against in-place writes to
    ``x``); anything else as it is."""
    from ..tensor import Tensor

    if not isinstance(x, Tensor) or x.data.dtype not in dtypes.FLOATING:
        return x
    if x.data.dtype == np.float32:
        return x
    alias = x._alias()
    alias.data = x.data.astype(np.float32)
    return alias
