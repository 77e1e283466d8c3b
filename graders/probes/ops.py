"""Probes for assignment 2: call one operator through tinytrain's public API and observe
its outputs and gradients.

Isolation from assignment 1: while the operator runs, ``tinytrain.autograd.function.record``
(the module global that ``Function.apply`` looks up at each call) is replaced by
``_Capture``, which records nothing: it only notes each (ctx, inputs, outputs) and sets
``ctx.needs_input_grad`` for the inputs under test. When exactly one Function ran, its
backward is called directly with the incoming gradients, so an operator is graded even
while the student's graph building and engine are unfinished. An operator built from
several Functions (a composite) is graded through the real engine instead.

Isolation from the other tasks of assignment 2: a helper that belongs to one task and
that operators of other tasks call (2.1's ``sum_to_shape``, which matmul's backward
uses) is replaced, while those operators run, by the probes' own copy (``own_helpers``,
named by the grader). Likewise from assignment 4: a float16 or bfloat16 call computes
in float32 through ``Function.apply``'s opmath (task 4.1's ``forward_in_float32``),
which the probes' copy replaces while an operator of another task runs.

Layouts: each tensor argument arrives contiguous (the wire keeps values, not strides)
with the name of its layout, and ``layout`` rebuilds it here; ``tt.Tensor`` keeps the
view as it is given.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import operator
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

from . import probe
from ._observe import array, grad, raised


def _offset(a: np.ndarray) -> np.ndarray:
    """``a``'s values in a view that starts inside a larger buffer (``base[1:, 1:]``; for
    0-d, one element into a buffer of two)."""
    if a.ndim == 0:
        base = np.zeros(2, a.dtype)
        view = base[1:].reshape(())
    else:
        base = np.zeros(tuple(n + 1 for n in a.shape), a.dtype)
        view = base[(slice(1, None),) * a.ndim]
    view[...] = a
    return view


_LAYOUTS = {
    "contiguous": lambda a: a,
    "transposed": np.asfortranarray,  # the transpose of a C-contiguous array
    "sliced": lambda a: np.repeat(a, 2, axis=-1)[..., ::2],  # every other element
    "offset": _offset,
    "flipped": lambda a: np.flip(np.flip(a).copy()),  # negative strides in every dim
}


def layout(a: np.ndarray, name: str) -> np.ndarray:
    """``a``'s values in the memory layout ``name`` (one of the grader's LAYOUTS)."""
    return _LAYOUTS[name](np.asarray(a))


class _Inputs:
    """The submission's tensors for a wire sample; ``wanted`` are those whose gradient
    is checked, in order."""

    def __init__(self, tt: Any, args: list[Any], kwargs: dict[str, Any], requires_grad: bool,
                 layout: str | None = None) -> None:
        self.wanted: list[Any] = []
        self._tt, self._requires_grad, self._layout = tt, requires_grad, layout
        self.args = [self._build(a) for a in args]
        self.kwargs = {k: self._build(v) for k, v in kwargs.items()}

    def _build(self, x: Any) -> Any:
        if isinstance(x, dict) and "tensor" in x:
            data = _LAYOUTS[self._layout or x["layout"]](x["tensor"])
            tensor = self._tt.Tensor(data)
            if x["grad"] and (data.dtype.kind == "f" or data.dtype.name == "bfloat16"):
                if self._requires_grad:
                    tensor.requires_grad_(True)
                self.wanted.append(tensor)
            return tensor
        if isinstance(x, dict) and "index" in x:
            return tuple(_index_item(item) for item in x["index"])
        if isinstance(x, list):
            return [self._build(v) for v in x]
        if isinstance(x, tuple):
            return tuple(self._build(v) for v in x)
        return x


def _index_item(item: list[Any]) -> Any:
    kind = item[0]
    if kind == "none":
        return None
    if kind == "ellipsis":
        return Ellipsis
    if kind == "slice":
        return slice(*item[1:])
    return int(item[1])


def _invoke(tt: Any, call: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Call the operator the way ``call`` names it ("tt.nn.functional.relu",
    "Tensor.sum", "operator.add")."""
    kind, _, name = call.partition(".")
    if kind == "operator":
        return getattr(operator, name)(*args, **kwargs)
    if kind == "Tensor":
        member = getattr(args[0], name)
        return member(*args[1:], **kwargs) if callable(member) else member
    target = tt
    for part in name.split("."):
        target = getattr(target, part)
    return target(*args, **kwargs)


def _outputs(result: Any) -> list[Any]:
    return list(result) if isinstance(result, tuple) else [result]


class _Capture:
    """Stands in for ``record``: records nothing, remembers every Function applied."""

    def __init__(self, wanted: list[Any]) -> None:
        self.wanted_ids = {id(t) for t in wanted}
        self.calls: list[tuple[Any, tuple[Any, ...], tuple[Any, ...]]] = []

    def __call__(self, ctx: Any, inputs: tuple[Any, ...], outputs: tuple[Any, ...]) -> bool:
        ctx.needs_input_grad = tuple(id(x) in self.wanted_ids for x in inputs)
        self.calls.append((ctx, inputs, outputs))
        return False


def _run_isolated(tt: Any, call: str, inputs: _Inputs) -> tuple[Any, _Capture]:
    function_module = importlib.import_module(f"{tt.__name__}.autograd.function")
    capture = _Capture(inputs.wanted)
    original = function_module.record
    function_module.record = capture
    try:
        result = _invoke(tt, call, inputs.args, inputs.kwargs)
    finally:
        function_module.record = original
    return result, capture


def _bits(a: Any) -> bytes:
    """An array's (or a tensor's data's) values, bit for bit (NaN payloads, -0.0)."""
    a = getattr(a, "data", a) if not isinstance(a, np.ndarray) else a
    return np.ascontiguousarray(a).tobytes() if isinstance(a, np.ndarray) else b""


class _Snapshot:
    """The bits of the arrays a backward is given or may keep (incoming gradients,
    inputs, outputs, the arrays its forward saved), to tell afterwards whether it wrote
    into any of them."""

    NAMES = ("incoming gradients", "inputs", "outputs", "saved arrays")

    def __init__(self, grads: list[Any], inputs: Any, outputs: Any, saved: Any = ()) -> None:
        self.groups = [list(g) for g in (grads, inputs, outputs, saved)]
        self.parts = [[_bits(a) for a in group] for group in self.groups]

    def unchanged(self) -> dict[str, bool]:
        return {name: [_bits(a) for a in group] == before
                for name, group, before in zip(self.NAMES, self.groups, self.parts, strict=True)
                if group}


def _arrays_in(x: Any, depth: int = 2) -> list[Any]:
    """The arrays (or tensors) in ``x``: itself, or in its tuples, lists and dicts."""
    if isinstance(x, np.ndarray):
        return [x]
    if not isinstance(x, (np.generic, list, tuple, dict, str, bytes, int, float)):
        try:  # a tensor (its .data); a NumPy scalar's .data is a memoryview, not looked at
            if isinstance(getattr(x, "data", None), np.ndarray):
                return [x]
        except Exception:  # noqa: BLE001 - an attribute that cannot be read holds nothing
            return []
    if depth and isinstance(x, (list, tuple)):
        return [a for v in x for a in _arrays_in(v, depth - 1)]
    if depth and isinstance(x, dict):
        return [a for v in x.values() for a in _arrays_in(v, depth - 1)]
    return []


def _saved_arrays(ctx: Any) -> list[Any]:
    """The arrays the graph keeps for backward on a Function run without recording, found
    without relying on the submission's private names: what ``ctx.saved_tensors`` (the
    public API) gives, and every array or tensor held in the ctx's own attributes
    (``save_for_backward``'s store, whatever its name, and ``ctx.mask = ...``)."""
    found: list[Any] = []
    try:
        found += _arrays_in(tuple(ctx.saved_tensors))
    except Exception:  # noqa: BLE001 - a failing accessor leaves the attributes to look at
        pass
    found += _arrays_in(dict(getattr(ctx, "__dict__", {})))
    unique: dict[int, Any] = {}
    for x in found:
        unique.setdefault(id(getattr(x, "data", x) if not isinstance(x, np.ndarray) else x), x)
    return list(unique.values())


# (graders.suites._opchecks requires this key of an isolated backward's observation)
SECOND_BACKWARD = "arrays the graph keeps (a second backward must give the same gradients)"


def _result_bits(result: Any) -> list[Any]:
    """What a backward returned, bit for bit (dtype, shape and values of each gradient)."""
    out: list[Any] = []
    for g in result if isinstance(result, tuple) else (result,):
        a = g if isinstance(g, (np.ndarray, np.generic)) or g is None else getattr(g, "data", g)
        if isinstance(a, (np.ndarray, np.generic)):
            a = np.asarray(a)
            out.append((a.dtype.str, a.shape, np.ascontiguousarray(a).tobytes()))
        else:
            out.append(repr(a))
    return out


def _direct_backward(capture: _Capture, inputs: _Inputs,
                     grad_outputs: list[np.ndarray | None],
                     grad_layout: str = "contiguous",
                     owned: dict[str, bool] | None = None) -> list[np.ndarray | None]:
    """Call the one Function's backward with the incoming gradients (zeros for outputs
    that get none, as the engine does; each given one in ``grad_layout``) and collect
    each wanted input's gradient. A call that ran in float32 for low-precision inputs
    (opmath) gets float32 gradients, as the engine gives it. ``owned`` gets, for the
    incoming gradients, the inputs, the outputs and the saved arrays, whether backward
    left them as they were."""
    owned = {} if owned is None else owned
    ctx, args, outputs = capture.calls[0]
    opmath = getattr(ctx, "_opmath", False)

    def incoming() -> list[np.ndarray]:
        grads = []
        for k, out in enumerate(outputs):
            given = grad_outputs[k] if k < len(grad_outputs) else None
            data = out.data
            if given is None:
                grads.append(np.zeros(data.shape, data.dtype))
                continue
            values = np.asarray(given, dtype=data.dtype)
            if opmath and values.dtype.name in ("float16", "bfloat16"):
                values = values.astype(np.float32)  # (before the layout: a cast copies densely)
            grads.append(layout(values, grad_layout))
        return grads

    grads = incoming()
    before = _Snapshot(grads, args, outputs, _saved_arrays(ctx))
    result = type(ctx)._function.backward(ctx, *grads)
    first = _result_bits(result)
    owned.update(before.unchanged())
    # torch calls a retained graph's backward again on the same ctx: it must give the
    # same gradients, however (and wherever) the submission keeps what it saved
    try:
        again = _result_bits(type(ctx)._function.backward(ctx, *incoming()))
    except Exception:  # noqa: BLE001 - a backward that cannot run twice fails the check
        again = None
    owned[SECOND_BACKWARD] = again == first
    if not isinstance(result, tuple):
        result = (result,)
    found: dict[int, np.ndarray] = {}
    for arg, g in zip(args, result, strict=False):  # trailing Nones may be left out
        if g is None or id(arg) not in capture.wanted_ids:
            continue
        # (an ndarray's own .data is a memoryview, which bfloat16 cannot give)
        # (and a NumPy scalar's, which a 0-d result indexed out of an array is)
        g = g if isinstance(g, np.ndarray) else np.asarray(
            g if isinstance(g, np.generic) else getattr(g, "data", g))
        if g.shape == arg.data.shape:  # the engine casts a well-shaped gradient, too
            g = g.astype(arg.data.dtype, copy=False)
        found[id(arg)] = found[id(arg)] + g if id(arg) in found else g
    return [found.get(id(t)) for t in inputs.wanted]


def _sum_to_shape(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The probes' own copy of task 2.1's broadcast reducer: sum ``grad`` over the dims
    broadcasting prepended and the size-1 dims it stretched."""
    shape = tuple(shape)
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    if extra:
        grad = grad.sum(axis=tuple(range(extra)))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=stretched, keepdims=True) if stretched else grad


def _forward_in_float32(function_module: Any) -> Any:
    """The probes' copy of ``Function.apply``'s opmath (task 4.1's
    ``forward_in_float32``, the part before its given lines): forward runs on float32
    stand-ins of low-precision inputs and its outputs are rounded once; built on the
    submission's own given helpers of ``function_module``."""

    def forward_in_float32(cls: Any, ctx: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                           dtype: np.dtype) -> Any:
        wide = tuple(function_module._float32_alias(a) for a in args)
        # what forward saves, seen through the public save_for_backward (not through the
        # submission's private name for its store), saved again below with the stand-ins
        # replaced by the real inputs and outputs
        saves: list[tuple[Any, ...]] = []
        save = ctx.save_for_backward
        ctx.save_for_backward = lambda *items: (saves.append(items), save(*items))[-1]
        try:
            result = cls.forward(ctx, *wide, **kwargs)
        finally:
            del ctx.save_for_backward
        single = not isinstance(result, tuple)
        raw = (result,) if single else result
        rounded = tuple(function_module._round_to(r, dtype) for r in raw)
        standins = {id(w): a for w, a in zip(wide, args, strict=True) if w is not a}
        standins.update({id(r): o for r, o in zip(raw, rounded, strict=True)})
        if saves:
            ctx.save_for_backward(*(standins.get(id(x), x) for x in saves[-1]))
        ctx._opmath = True
        return rounded[0] if single else rounded

    return forward_in_float32


# name: (its module, our copy (or a factory of it, given that module), where it is looked up)
_HELPERS = {
    "sum_to_shape": ("ops._helpers", _sum_to_shape, "ops"),
    "forward_in_float32": ("amp.opmath", _forward_in_float32, "amp.opmath"),
}
_FACTORIES = {"forward_in_float32"}


_UNDER: dict[str, tuple[int, list[Any]]] = {}  # prefix: (len(sys.modules), its modules)


def _modules_under(prefix: str) -> list[Any]:
    """The loaded modules named ``prefix`` or ``prefix.*`` (scanned again only when
    sys.modules has grown or shrunk: a scan of every module at each probe call costs
    more than the operator)."""
    count = len(sys.modules)
    cached = _UNDER.get(prefix)
    if cached is None or cached[0] != count:
        found = [m for n, m in list(sys.modules.items())
                 if n == prefix or n.startswith(prefix + ".")]
        _UNDER[prefix] = cached = (count, found)
    return cached[1]


@contextlib.contextmanager
def _own_helpers(tt: Any, names: list[str]) -> Iterator[None]:
    """Put the probes' copies of the named helpers in place of the submission's in every
    loaded module (of ``tt.ops`` for sum_to_shape, the helper's own module for
    forward_in_float32) that holds the submission's (they are looked up as module
    globals at each call), and put the originals back afterwards."""
    swapped = []
    try:
        for name in names:
            home, copy, where = _HELPERS[name]
            home_module = importlib.import_module(f"{tt.__name__}.{home}")
            original = getattr(home_module, name, None)
            if name in _FACTORIES:
                copy = copy(home_module)
            if original is None:
                continue
            for module in _modules_under(f"{tt.__name__}.{where}"):
                if getattr(module, name, None) is original:
                    setattr(module, name, copy)
                    swapped.append((module, name, original))
        yield
    finally:
        for module, name, original in swapped:
            setattr(module, name, original)


def _with_own_helpers(fn: Any) -> Any:
    """Let a probe take ``own_helpers`` (names of helpers of other tasks, see
    ``_own_helpers``) and run with the probes' copies of them."""

    @functools.wraps(fn)
    def wrapper(tt: Any, *args: Any, own_helpers: list[str] | None = None, **kwargs: Any) -> Any:
        with _own_helpers(tt, list(own_helpers or [])):
            return fn(tt, *args, **kwargs)

    return wrapper


@probe
@_with_own_helpers
def forward(tt: Any, call: str, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The operator's outputs (nothing is recorded, so assignment 1 is not needed)."""
    inputs = _Inputs(tt, args, kwargs, requires_grad=False)
    result, _ = _run_isolated(tt, call, inputs)
    return {"outputs": [array(o) for o in _outputs(result)]}


@probe
@_with_own_helpers
def backward(tt: Any, call: str, args: list[Any], kwargs: dict[str, Any],
             grad_outputs: list[np.ndarray | None], grad_layout: str = "contiguous"
             ) -> dict[str, Any]:
    """Outputs, and the gradient of each wanted input for ``grad_outputs`` (each given
    in the memory layout ``grad_layout``): from the Function's own backward when one
    Function ran, else through the engine."""
    inputs = _Inputs(tt, args, kwargs, requires_grad=True)
    result, capture = _run_isolated(tt, call, inputs)
    outputs = [array(o) for o in _outputs(result)]
    if len(capture.calls) == 1:
        owned: dict[str, bool] = {}
        grads = _direct_backward(capture, inputs, grad_outputs, grad_layout, owned)
        return {"outputs": outputs, "grads": grads, "path": "isolated", "unchanged": owned}
    inputs = _Inputs(tt, args, kwargs, requires_grad=True)
    results = _outputs(_invoke(tt, call, inputs.args, inputs.kwargs))
    roots = [(o, tt.Tensor(layout(np.asarray(g), grad_layout)))
             for o, g in zip(results, grad_outputs, strict=False) if g is not None]
    # through the engine (other tasks' code runs too), only the inputs are watched
    leaves = [x for x in _flat([*inputs.args, *inputs.kwargs.values()]) if hasattr(x, "data")]
    before = _Snapshot([], leaves, [])
    tt.autograd.backward([o for o, _ in roots], [g for _, g in roots])
    return {"outputs": outputs, "grads": [grad(t) for t in inputs.wanted], "path": "engine",
            "unchanged": before.unchanged()}


def _flat(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    for x in items:
        out += _flat(list(x)) if isinstance(x, (list, tuple)) else [x]
    return out


@probe
@_with_own_helpers
def view(tt: Any, call: str, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Whether the output is a view of the first input (contiguous inputs): shared
    storage, shared version counter, and ``_base`` the input."""
    inputs = _Inputs(tt, args, kwargs, requires_grad=False, layout="contiguous")
    result, _ = _run_isolated(tt, call, inputs)
    base, out = inputs.args[0], _outputs(result)[0]
    return {
        "shares_storage": bool(np.shares_memory(out.data, base.data)),
        "shares_version_counter": out._version_counter is base._version_counter,
        "base_is_input": out._base is base,
    }


@probe
@_with_own_helpers
def raises(tt: Any, call: str, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """What the operator raises on these inputs ({"type": None} when nothing)."""
    inputs = _Inputs(tt, args, kwargs, requires_grad=False)
    return raised(lambda: _run_isolated(tt, call, inputs))
