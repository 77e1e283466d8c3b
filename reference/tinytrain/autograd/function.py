"""Function and the graph it builds.

A ``Function`` subclass defines ``forward(ctx, *inputs)`` (tensors in, NumPy arrays out)
and ``backward(ctx, *grads)`` (NumPy arrays in and out, one gradient per forward input).
``Function.apply`` runs forward and, when the call must be recorded, makes ``ctx`` the
``grad_fn`` of the outputs: a node whose ``next_functions`` point at the nodes that
produced the inputs, as in PyTorch.

Mixed precision (assignment 4) hooks in here too: under ``tt.amp.autocast`` a Function's
inputs are cast by its ``autocast_policy`` before forward, and a call whose result is
float16 or bfloat16 computes in float32 and rounds its outputs once ("opmath").
"""

from __future__ import annotations

import weakref
from types import MappingProxyType
from typing import Any

import numpy as np

from .. import dtypes
from ..cuda import _state as _cuda
from . import grad_mode
from .autocast_state import state as _autocast
from .saved import SavedTensor, save


class BackwardNode:
    """A vertex of the backward graph, and the ``ctx`` its Function's methods receive.

    ``next_functions[i]`` is ``(node, output_nr)`` for input ``i``: the node that produced
    that input (an ``AccumulateGrad`` for a leaf) and which of its outputs it was, or
    ``(None, 0)`` for an input that does not require grad.
    """

    _function: type[Function]
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
            if isinstance(leaf.data, _cuda.CudaArray) and leaf._grad is not None:
                _cuda.place(Function, (leaf._grad,))  # a device parameter's .grad is there too
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
            from ..amp.autocast_mode import autocast_inputs

            args = autocast_inputs(cls, args)
        cuda = _cuda.active.value and _cuda.device_of(args)
        if cuda:  # assignment 6: the op's kernel-backed twin runs on device tensors
            from ..cuda.device import kernel_function

            cls = kernel_function(cls)
        if cls.is_inplace:
            from .inplace import apply_inplace

            return apply_inplace(cls, args, kwargs)
        ctx = cls._backward_cls()
        ctx.needs_input_grad = needs_input_grad(args)
        low = _low_precision_result(args) if cls._uses_opmath else None
        if low is None:
            result = cls.forward(ctx, *args, **kwargs)
        else:
            result = forward_in_float32(cls, ctx, args, kwargs, low)
        single = not isinstance(result, tuple)
        raw = (result,) if single else result
        outputs = tuple([_as_tensor(r) for r in raw])
        if cuda:
            _cuda.place(cls, outputs)
        if ctx._to_save:
            _scalars_to_arrays(ctx, raw, outputs)
        if cls.is_view:
            _make_view(outputs[0], args[0])
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


# ----- opmath: low-precision calls compute in float32 (task 4.1) -----------------------
def _low_precision_result(args: tuple[Any, ...]) -> np.dtype | None:
    """float16 or bfloat16 when that is the dtype of this call's floating point result
    (PyTorch's promotion over its floating point tensor arguments), else None."""
    tensor = _Tensor or _tensor_type()
    if not any(isinstance(a, tensor) and a.data.dtype in dtypes.LOW_PRECISION for a in args):
        return None
    floating = [a for a in args if isinstance(a, tensor) and a.data.dtype in dtypes.FLOATING]
    result = dtypes.result_type(*floating)
    return result if result in dtypes.LOW_PRECISION else None


def _float32_alias(x: Any) -> Any:
    """A floating point Tensor's values in float32, as a history-free tensor that shares
    its version counter (so a save of it is still checked against in-place writes to
    ``x``); anything else as it is."""
    tensor = _Tensor or _tensor_type()
    if not isinstance(x, tensor) or x.data.dtype not in dtypes.FLOATING:
        return x
    if x.data.dtype == np.float32:
        return x
    alias = x._alias()
    alias.data = x.data.astype(np.float32)
    return alias


def _round_to(result: Any, dtype: np.dtype) -> Any:
    """A forward result in ``dtype`` when it is floating point (indices stay integers)."""
    array = np.asarray(result)
    if array.dtype not in dtypes.FLOATING:
        return result
    with np.errstate(over="ignore"):  # beyond float16's range: inf, as in PyTorch
        return array.astype(dtype)


def forward_in_float32(cls: type[Function], ctx: BackwardNode, args: tuple[Any, ...],
                       kwargs: dict[str, Any], dtype: np.dtype) -> Any:
    """``cls.forward`` for a call whose result is ``dtype`` (float16 or bfloat16), computed
    the way PyTorch's kernels compute it: on float32 values, with the outputs rounded to
    ``dtype`` once at the end. A matmul then accumulates its products in float32 (as
    tensor cores do) and a sum or softmax does not lose precision term by term.

    Afterwards forward's saves refer to the real inputs and outputs (low precision, as
    PyTorch keeps them; ``saved_tensors`` widens them again for backward), and the node is
    marked, so that backward computes in float32 too."""
    # BEGIN SOLUTION 4.1
    # HINT: _float32_alias(arg) gives a float32 stand-in for each floating point Tensor;
    # HINT: run forward on those, then round every output with _round_to(output, dtype).
    # HINT: The lines after this block use four names it must define: `wide` (the
    # HINT: arguments forward ran on, stand-ins included, a tuple in the order of args),
    # HINT: `single` (True when forward returned one array, not a tuple), `raw` (forward's
    # HINT: outputs as a tuple) and `rounded` (raw's outputs rounded, a tuple).
    wide = tuple([_float32_alias(a) for a in args])
    result = cls.forward(ctx, *wide, **kwargs)
    single = not isinstance(result, tuple)
    raw = (result,) if single else result
    rounded = tuple([_round_to(r, dtype) for r in raw])
    # END SOLUTION
    standins = {id(w): a for w, a in zip(wide, args, strict=True) if w is not a}
    standins.update({id(r): o for r, o in zip(raw, rounded, strict=True)})
    ctx._to_save = tuple(standins.get(id(x), x) for x in ctx._to_save)
    ctx._opmath = True
    return rounded[0] if single else rounded


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


def _make_view(view: Any, base: Any) -> None:
    """Let ``view`` share ``base``'s version counter (and root base), as a view does, and
    register it with the root base (an in-place write into the base rebases its views).

    A forward that had to copy (NumPy could not make a view) gives an ordinary tensor.
    """
    if not np.may_share_memory(view.data, base.data):
        return
    root = base._base if base._base is not None else base
    view._version_counter = base._version_counter
    view._base = root
    view._is_inference = base._is_inference
    inherited = base._creation_meta not in (None, "default")  # a view of a no_grad view
    made_in = "default" if grad_mode.is_grad_enabled() else "no_grad_mode"
    view._creation_meta = base._creation_meta if inherited else made_in
    if root._views is None:
        root._views = {}
    root._views[id(view)] = weakref.ref(view, _forget(root._views, id(view)))


def _forget(views: dict[int, weakref.ref], key: int) -> Any:
    """A weakref callback that drops a dead view from its base's registry."""

    def callback(ref: weakref.ref) -> None:
        if views.get(key) is ref:
            del views[key]

    return callback


def record(ctx: BackwardNode, inputs: tuple[Any, ...], outputs: tuple[Any, ...]) -> bool:
    """Make ``ctx`` the grad_fn of ``outputs`` if this call must be recorded.

    Returns True when it recorded. Fill in ``ctx.next_functions``, ``ctx.needs_input_grad``,
    ``ctx._input_meta`` and ``ctx._output_meta``, and set each floating-point output's
    ``grad_fn``, ``_output_nr`` and ``requires_grad``.
    """
    # BEGIN SOLUTION 1.1
    # HINT: record only when grad mode is on, inference mode is off (it wins even over
    # HINT: enable_grad) and some Tensor input requires grad.
    # HINT: gradient_edge(tensor) gives the (node, output_nr) pair for an input.
    # HINT: only floating point outputs get a grad_fn: test dtype in dtypes.FLOATING
    # HINT: (bfloat16's NumPy kind is "V", not "f").
    if not grad_mode.is_grad_enabled() or grad_mode.is_inference_mode_enabled():
        return False
    needs = tuple([getattr(t, "_requires_grad", False) for t in inputs])  # False for non-Tensors
    if True not in needs:
        return False
    edges, meta = [], []
    for t, need in zip(inputs, needs, strict=True):
        edges.append(gradient_edge(t) if need else (None, 0))
        meta.append((t.data.shape, t.data.dtype) if need else None)
    ctx.needs_input_grad = needs
    ctx.next_functions = tuple(edges)
    ctx._input_meta = tuple(meta)
    ctx._output_meta = tuple([(o.data.shape, o.data.dtype) for o in outputs])
    for nr, out in enumerate(outputs):
        if out.data.dtype in dtypes.FLOATING:  # integer outputs (indices) are not differentiable
            out.grad_fn = ctx
            out._output_nr = nr
            out._requires_grad = True
    return True
    # END SOLUTION
