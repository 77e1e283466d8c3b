"""Small Functions the probes build graphs with, so the engine tasks are graded with
the submission's ``Function``/engine but without depending on its operators."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import numpy as np

_CACHE: dict[int, SimpleNamespace] = {}


def functions(tt: Any) -> SimpleNamespace:
    """Function subclasses of the submission's ``tt.autograd.Function``; ``ns.calls``
    logs each backward call by op name, in call order."""
    ns = _CACHE.get(id(tt))
    if ns is not None:
        return ns
    # They compute in their inputs' dtypes (no float32 "opmath" for float16 inputs, task
    # 4.1), so the graders of other tasks that use them in float16 do not depend on 4.1.
    base = type("ProbeFunction", (tt.autograd.Function,), {"opmath": False})
    calls: list[str] = []

    class Add(base):
        @staticmethod
        def forward(ctx, a, b):
            return a.data + b.data

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            return grad, grad

    class Mul(base):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a.data * b.data

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            a, b = ctx.saved_tensors
            return grad * b.data, grad * a.data

    class Sin(base):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return np.sin(a.data)

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            (a,) = ctx.saved_tensors
            return grad * np.cos(a.data)

    class Exp(base):
        @staticmethod
        def forward(ctx, a):
            out = np.exp(a.data)
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            (out,) = ctx.saved_tensors
            return grad * out.data

    class Square(base):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a.data * a.data

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            (a,) = ctx.saved_tensors
            return 2 * grad * a.data

    class Scale(base):
        @staticmethod
        def forward(ctx, a, k):
            ctx.k = k
            return a.data * k

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            return grad * ctx.k, None

    class Sum(base):
        @staticmethod
        def forward(ctx, a):
            ctx.shape = a.data.shape
            return np.asarray(a.data.sum())

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            return np.broadcast_to(grad, ctx.shape).copy()

    # ----- for assignment 3: ops that save exactly what torch's save (same tensors, same
    # order), so version errors and saved-tensor hook calls can be compared with torch;
    # and views (is_view=True), so in-place writes through views can be graded without the
    # student's assignment-2 shape ops.
    class TorchMul(base):
        """torch.mul: saves ``other`` if ``self`` needs a gradient, then ``self`` if
        ``other`` does (MulBackward0's _saved_other, _saved_self)."""

        saved_names = ("other", "self")

        @staticmethod
        def forward(ctx, a, b):
            recording = tt.is_grad_enabled()
            ctx.save_for_backward(b if recording and a.requires_grad else None,
                                  a if recording and b.requires_grad else None)
            return a.data * b.data

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            b, a = ctx.saved_tensors
            return (None if b is None else grad * b.data), (None if a is None else grad * a.data)

    class Narrow(base):
        """``a.narrow(0, start, length)``: a view of rows start..start+length."""

        is_view = True

        @staticmethod
        def forward(ctx, a, start, length):
            ctx.shape, ctx.rows = a.data.shape, slice(start, start + length)
            return a.data[ctx.rows]

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            out = np.zeros(ctx.shape, grad.dtype)
            out[ctx.rows] = grad
            return out, None, None

    class Select(base):
        """``a.select(0, index)`` (``a[index]``): a view, 0-dim for a vector."""

        is_view = True

        @staticmethod
        def forward(ctx, a, index):
            ctx.shape, ctx.index = a.data.shape, index
            return a.data[index, ...]

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            out = np.zeros(ctx.shape, grad.dtype)
            out[ctx.index, ...] = grad
            return out, None

    class Transpose(base):
        """``a.t()`` of a matrix: a view."""

        is_view = True

        @staticmethod
        def forward(ctx, a):
            return a.data.T

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            return grad.T

    class Linear(base):
        """``x @ w + b`` (saves x and w, like torch's addmm/mm)."""

        @staticmethod
        def forward(ctx, x, w, b):
            ctx.save_for_backward(x, w)
            return x.data @ w.data + b.data

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            x, w = ctx.saved_tensors
            return grad @ w.data.T, x.data.T @ grad, grad.sum(axis=0)

    class Tanh(base):
        """tanh, saving its result (like torch)."""

        @staticmethod
        def forward(ctx, a):
            out = np.tanh(a.data)
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            (out,) = ctx.saved_tensors
            return grad * (1 - out.data * out.data)

    # ----- for assignment 1: what the engine must get right beyond one float output
    class SinCos(base):
        """Two outputs, (sin a, cos a): edges point at one of them."""

        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return np.sin(a.data), np.cos(a.data)

        @staticmethod
        def backward(ctx, g_sin, g_cos):
            calls.append(getattr(ctx, "label", "?"))
            (a,) = ctx.saved_tensors
            return g_sin * np.cos(a.data) - g_cos * np.sin(a.data)

    class ReluMask(base):
        """(relu(a), a > 0 as int64): a float output and an integer one."""

        @staticmethod
        def forward(ctx, a):
            ctx.mask = np.asarray(a.data > 0)
            return np.where(ctx.mask, a.data, np.zeros_like(a.data)), ctx.mask.astype(np.int64)

        @staticmethod
        def backward(ctx, grad, grad_mask):
            calls.append(getattr(ctx, "label", "?"))
            return grad * ctx.mask

    class Positive(base):
        """``a > 0`` as int64 (like a comparison or an argmax): not differentiable."""

        @staticmethod
        def forward(ctx, a):
            return np.asarray(a.data > 0).astype(np.int64)

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            return None

    class Zero(base):
        """Zeros whose backward returns None: its input receives no gradient."""

        @staticmethod
        def forward(ctx, a):
            return np.zeros_like(a.data)

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            return None

    ns = SimpleNamespace(
        add=Add, mul=Mul, sin=Sin, exp=Exp, square=Square, scale=Scale, sum=Sum, calls=calls,
        torch_mul=TorchMul, narrow=Narrow, select=Select, transpose=Transpose, linear=Linear,
        tanh=Tanh, sincos=SinCos, relu_mask=ReluMask, positive=Positive, zero=Zero,
    )
    _CACHE[id(tt)] = ns
    return ns


def apply(fns: SimpleNamespace, op: str, args: list[Any], label: str = "") -> Any:
    """Apply one probe op and tag its node with ``label`` (for the backward call log)."""
    out = getattr(fns, op).apply(*args)
    for o in out if isinstance(out, tuple) else (out,):
        node = getattr(o, "grad_fn", None)
        if node is not None:
            node.label = label or op
    return out


def _floating(dtype: Any) -> bool:
    return dtype.kind == "f" or dtype.name == "bfloat16"  # bfloat16's kind is "V"


def _record_for(tt: Any, function_module: Any) -> Any:
    """The probes' own copy of graph recording (task 1.1's ``record``), built from the
    submission's given parts (``gradient_edge``, the grad-mode flags)."""

    def record(ctx: Any, inputs: tuple[Any, ...], outputs: tuple[Any, ...]) -> bool:
        if not tt.is_grad_enabled() or tt.is_inference_mode_enabled():
            return False
        needs = tuple(bool(getattr(t, "_requires_grad", False)) for t in inputs)
        if not any(needs):
            return False
        ctx.needs_input_grad = needs
        ctx.next_functions = tuple(function_module.gradient_edge(t) if need else (None, 0)
                                   for t, need in zip(inputs, needs, strict=True))
        ctx._input_meta = tuple((t.data.shape, t.data.dtype) if need else None
                                for t, need in zip(inputs, needs, strict=True))
        ctx._output_meta = tuple((o.data.shape, o.data.dtype) for o in outputs)
        for nr, out in enumerate(outputs):
            if _floating(out.data.dtype):
                out.grad_fn = ctx
                out._output_nr = nr
                out._requires_grad = True
        return True

    return record


@contextlib.contextmanager
def own_recording(tt: Any) -> Iterator[None]:
    """While active, ``Function.apply`` records the graph with the probes' own copy of
    task 1.1's ``record``: the engine (1.2), grad modes (1.3) and hooks (1.4) are graded
    on a graph built right, whatever the state of 1.1 (which its own probes grade)."""
    function_module = importlib.import_module(f"{tt.__name__}.autograd.function")
    original = function_module.record
    function_module.record = _record_for(tt, function_module)
    try:
        yield
    finally:
        function_module.record = original


# ----- the probes' own engine (a copy of task 1.2's), for grading hooks (task 1.4) -------
def _accumulate_into_leaf(leaf: Any, grad: np.ndarray) -> None:
    """Task 1.2's leaf accumulation: set .grad on the first call, add on later ones."""
    if leaf._grad is None:
        leaf._grad = type(leaf)(np.array(grad, dtype=leaf.data.dtype, copy=True))
    else:
        leaf._grad.data += grad


def _buffer(buffers: dict[Any, list[Any]], node: Any, nr: int, grad: Any) -> None:
    buffer = buffers.setdefault(node, [None] * len(node._output_meta))
    if grad is not None:
        buffer[nr] = grad if buffer[nr] is None else buffer[nr] + grad


def run_backward(tt: Any, roots: list[tuple[Any, Any]], retain_graph: bool = False) -> None:
    """Backward from ``roots`` ((tensor, gradient array or None for ones)) with the probes'
    own copy of task 1.2's engine and leaf accumulation: each node once, in topological
    order, its tensor hooks (``_run_tensor_hooks``, task 1.4) applied to its gradients
    before its backward runs. The hooks, retain_grad and detach of task 1.4 are graded on
    it, whatever the state of the submission's engine."""
    node_module = importlib.import_module(f"{tt.__name__}.autograd.node")
    seeds = []
    for tensor, grad in roots:
        data = tensor.data
        seeds.append((node_module.gradient_edge(tensor),
                      np.ones(data.shape, data.dtype) if grad is None
                      else np.asarray(grad, dtype=data.dtype)))
    counts: dict[Any, int] = {}
    seen: set[Any] = set()
    stack = [node for (node, _), _ in seeds if node is not None]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        for next_node, _ in node.next_functions:
            if next_node is not None:
                counts[next_node] = counts.get(next_node, 0) + 1
                stack.append(next_node)
    buffers: dict[Any, list[Any]] = {}
    for (node, nr), grad in seeds:
        if node is not None:
            _buffer(buffers, node, nr, grad)
    ready = [node for node in buffers if counts.get(node, 0) == 0]
    original = node_module.accumulate_into_leaf  # looked up there by AccumulateGrad
    node_module.accumulate_into_leaf = _accumulate_into_leaf
    try:
        while ready:
            node = ready.pop()
            grads = buffers.pop(node)
            if node._has_tensor_hooks():
                grads = node._run_tensor_hooks(grads)
            if any(g is not None for g in grads):
                input_grads = node._run_backward(grads)
            else:
                input_grads = (None,) * len(node.next_functions)
            if not retain_graph:
                node._release()
            for (next_node, nr), grad in zip(node.next_functions, input_grads, strict=False):
                if next_node is None:
                    continue
                _buffer(buffers, next_node, nr, grad)
                counts[next_node] -= 1
                if counts[next_node] == 0:
                    ready.append(next_node)
    finally:
        node_module.accumulate_into_leaf = original


# ----- the probes' own tensor hooks (a copy of task 1.4's), for grading the engine -------
def _hook_runners(tensor_type: Any) -> tuple[Any, Any]:
    """Task 1.4's ``_run_tensor_hooks`` for a node and for a leaf's AccumulateGrad (each
    hook gets the previous one's result; a returned tensor replaces the gradient)."""

    def apply_hooks(hooks: Any, grads: list[Any], nr: int) -> None:
        for hook in list(hooks):
            if grads[nr] is not None:
                result = hook(tensor_type(grads[nr]))
                if result is not None:
                    grads[nr] = result.data

    def node_hooks(node: Any, grads: list[Any]) -> list[Any]:
        for nr, hooks in node._tensor_hooks.items():
            apply_hooks(hooks, grads, nr)
        return grads

    def leaf_hooks(node: Any, grads: list[Any]) -> list[Any]:
        apply_hooks(node.variable._backward_hooks or (), grads, 0)
        return grads

    return node_hooks, leaf_hooks


@contextlib.contextmanager
def own_hooks(tt: Any) -> Iterator[None]:
    """While active, nodes apply tensor hooks with the probes' own copy of task 1.4's
    ``_run_tensor_hooks`` (retain_grad left out), so the engine (1.2) can be graded on
    calling them whatever the state of 1.4. Register hooks with ``add_hook``."""
    node_module = importlib.import_module(f"{tt.__name__}.autograd.node")
    node_cls, leaf_cls = node_module.BackwardNode, node_module.AccumulateGrad
    saved = (node_cls.__dict__["_run_tensor_hooks"], leaf_cls.__dict__["_run_tensor_hooks"])
    node_cls._run_tensor_hooks, leaf_cls._run_tensor_hooks = _hook_runners(tt.Tensor)
    try:
        yield
    finally:
        node_cls._run_tensor_hooks, leaf_cls._run_tensor_hooks = saved


def add_hook(tensor: Any, hook: Any) -> None:
    """Register ``hook`` on ``tensor`` in the framework's (given) hook lists, without the
    submission's ``register_hook`` (task 1.4)."""
    if tensor.grad_fn is None:
        if tensor._backward_hooks is None:
            tensor._backward_hooks = []
        tensor._backward_hooks.append(hook)
    else:
        tensor.grad_fn._tensor_hooks.setdefault(tensor._output_nr, []).append(hook)
