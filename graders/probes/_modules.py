"""Module scenarios written once against PyTorch's ``nn`` API.

A model is described as plain data (a *spec*, see ``graders.strategies.modules``); each
scenario builds it, drives it and returns plain observations. The probes run the scenarios
with the submission's tinytrain, the oracle runs the very same code with torch, so both
sides build and use the model in the same way. ``lib`` is a namespace of small adapters
(``nn``, ``tensor``, ``array`` ...) that hides the few differences between the libraries.
Nothing here imports torch or the submission.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from ._observe import raised

_CLASSES: dict[tuple[int, str], type] = {}


def block_class(nn: Any, name: str) -> type:
    """A Module subclass called ``name`` whose ``extra_repr`` is set per instance."""
    key = (id(nn), name)
    if key not in _CLASSES:

        def __init__(self: Any, extra: str = "") -> None:  # noqa: N807
            nn.Module.__init__(self)
            self.extra = extra

        def extra_repr(self: Any) -> str:
            return self.extra

        def forward(self: Any, x: Any) -> Any:
            return x

        _CLASSES[key] = type(name, (nn.Module,), {
            "__init__": __init__, "extra_repr": extra_repr, "forward": forward})
    return _CLASSES[key]


def build(lib: Any, spec: dict[str, Any]) -> Any:
    """The model a spec describes: blocks register their parameters, then buffers, then
    children; afterwards tied parameters and shared submodules are attached, in spec order."""
    nn = lib.nn

    def make(node: dict[str, Any]) -> Any:
        kind = node["kind"]
        children = node.get("children", [])
        if kind == "seq":
            return nn.Sequential(*(make(c) for _, c in children))
        if kind == "list":
            return nn.ModuleList([make(c) for _, c in children])
        if kind == "dict":
            return nn.ModuleDict({k: make(c) for k, c in children})
        module = block_class(nn, node["name"])(node.get("extra", ""))
        for name, value in node.get("params", []):
            module.register_parameter(
                name, None if value is None else nn.Parameter(lib.tensor(value)))
        for name, value, persistent in node.get("buffers", []):
            module.register_buffer(name, None if value is None else lib.tensor(value),
                                   persistent=bool(persistent))
        for name, child in children:
            setattr(module, name, make(child))
        return module

    root = make(spec)

    def link(node: dict[str, Any], path: str) -> None:
        if node["kind"] == "block":
            module = module_at(root, path)
            for name, target in node.get("ties", []):
                setattr(module, name, tensor_at(root, target))
            for name, target in node.get("shares", []):
                setattr(module, name, module_at(root, target))
        for name, child in node.get("children", []):
            link(child, f"{path}.{name}" if path else name)

    link(spec, "")
    return root


def module_at(root: Any, path: str) -> Any:
    module = root
    for part in filter(None, path.split(".")):
        module = getattr(module, part)
    return module


def tensor_at(root: Any, path: str) -> Any:
    head, _, name = path.rpartition(".")
    return getattr(module_at(root, head), name)


def _names(pairs: Any) -> list[str]:
    return [name for name, _ in pairs]


# ----- scenarios ---------------------------------------------------------------------
def structure(lib: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """Names from every traversal method."""
    model = build(lib, spec)
    return {
        "named_parameters": _names(model.named_parameters()),
        "named_parameters(remove_duplicate=False)":
            _names(model.named_parameters(remove_duplicate=False)),
        "named_parameters(recurse=False)": _names(model.named_parameters(recurse=False)),
        "named_parameters(prefix='model')": _names(model.named_parameters(prefix="model")),
        "len(list(parameters()))": len(list(model.parameters())),
        "named_buffers": _names(model.named_buffers()),
        "named_buffers(remove_duplicate=False)":
            _names(model.named_buffers(remove_duplicate=False)),
        "named_buffers(recurse=False)": _names(model.named_buffers(recurse=False)),
        "named_buffers(prefix='model')": _names(model.named_buffers(prefix="model")),
        "len(list(buffers()))": len(list(model.buffers())),
        "len(list(buffers(recurse=False)))": len(list(model.buffers(recurse=False))),
        "len(list(parameters(recurse=False)))": len(list(model.parameters(recurse=False))),
        "named_modules": _names(model.named_modules()),
        "named_modules(prefix='model')": _names(model.named_modules(prefix="model")),
        "named_modules(prefix='model', remove_duplicate=False)":
            _names(model.named_modules(prefix="model", remove_duplicate=False)),
        "named_modules(remove_duplicate=False)":
            _names(model.named_modules(remove_duplicate=False)),
        "named_children": _names(model.named_children()),
        "len(list(children()))": len(list(model.children())),
        "len(list(modules()))": len(list(model.modules())),
        "state_dict(prefix='model.')": list(model.state_dict(prefix="model.").keys()),
    }


def state_dict_view(lib: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """state_dict's keys and values, and how the values relate to the model's tensors."""
    model = build(lib, spec)
    sd = model.state_dict()
    kept = model.state_dict(keep_vars=True)
    return {
        "keys": list(sd.keys()),
        "values": [lib.array(v) for v in sd.values()],
        "requires_grad": [bool(v.requires_grad) for v in sd.values()],
        "is_parameter": [isinstance(v, lib.nn.Parameter) for v in sd.values()],
        "shares_storage": [lib.same_storage(v, tensor_at(model, k)) for k, v in sd.items()],
        "keep_vars_keys": list(kept.keys()),
        "keep_vars_is_registered_tensor": [v is tensor_at(model, k) for k, v in kept.items()],
    }


def load_round_trip(lib: Any, spec_a: dict[str, Any], spec_b: dict[str, Any]) -> dict[str, Any]:
    """Load model A's state_dict into model B (same structure, other values)."""
    a, b = build(lib, spec_a), build(lib, spec_b)
    params_before = [p for _, p in b.named_parameters()]
    result = b.load_state_dict(a.state_dict())
    loaded = {k: lib.array(v) for k, v in b.state_dict().items()}
    same_objects = all(p is q for p, q in zip(params_before, (p for _, p in b.named_parameters()),
                                              strict=True))
    for p in a.parameters():  # B must hold copies, not A's storage
        lib.add_inplace(p, 1.0)
    after_change = {k: lib.array(v) for k, v in b.state_dict().items()}
    return {
        "missing_keys": list(result.missing_keys),
        "unexpected_keys": list(result.unexpected_keys),
        "loaded": loaded,
        "same_parameter_objects": same_objects,
        "after_changing_source": after_change,
    }


def load_errors(lib: Any, spec: dict[str, Any], edits: list[list[Any]],
                strict: bool) -> dict[str, Any]:
    """load_state_dict of a twin's state_dict with keys dropped, added or reshaped."""
    model = build(lib, spec)
    sd = dict(build(lib, spec).state_dict())
    for edit in edits:
        if edit[0] == "drop":
            del sd[edit[1]]
        else:  # "add" a new key or "reshape" an existing one
            sd[edit[1]] = lib.tensor(edit[2])
    result: list[Any] = []
    outcome = raised(lambda: result.append(model.load_state_dict(sd, strict=strict)))
    return {
        "raised": outcome,
        "missing_keys": list(result[0].missing_keys) if result else None,
        "unexpected_keys": list(result[0].unexpected_keys) if result else None,
    }


def train_eval(lib: Any, spec: dict[str, Any], script: list[list[str]]) -> dict[str, Any]:
    """Run train()/eval()/train(False) on the modules at the script's paths; after each
    call, the training flag of every module."""
    model = build(lib, spec)
    seen = []
    for path, op in script:
        module = module_at(model, path)
        returned = module.eval() if op == "eval" else module.train(op == "train")
        seen.append({
            "returned_self": returned is module,
            "training": [[name, bool(m.training)] for name, m in model.named_modules()],
        })
    return {"steps": seen, "non_bool": raised(lambda: model.train("no"))}


def zero_grad(lib: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """Module.zero_grad() and zero_grad(set_to_none=False)."""
    model = build(lib, spec)
    params = list(model.parameters())

    def fill() -> list[Any]:
        for i, p in enumerate(params):
            lib.set_grad(p, np.full(lib.shape(p), i + 1.0, dtype=np.float32))
        return [lib.grad_object(p) for p in params]

    fill()
    model.zero_grad()
    to_none = [lib.grad(p) for p in params]
    objects = fill()
    model.zero_grad(set_to_none=False)
    zeros = [lib.grad(p) for p in params]
    same = [lib.grad_object(p) is g for p, g in zip(params, objects, strict=True)]
    return {"set_to_none": to_none, "zeros": zeros, "same_grad_objects": same}


def versions(lib: Any, spec_a: dict[str, Any], spec_b: dict[str, Any]) -> dict[str, Any]:
    """The in-place framework calls PyTorch counts as writes (so that a tensor saved for
    backward and changed since is detected): for model B's parameters and buffers, the
    change of ``_version`` over ``B.load_state_dict(A.state_dict())`` (one copy into each
    tensor per state_dict entry naming it) and what a state_dict of B taken before the
    load then holds (it shares the loaded tensors' storage); for each parameter's grad,
    the change of ``_version`` over ``B.zero_grad(set_to_none=False)``."""
    a, b = build(lib, spec_a), build(lib, spec_b)
    tensors = [t for _, t in b.named_parameters()] + [t for _, t in b.named_buffers()]
    before = [int(t._version) for t in tensors]
    earlier = b.state_dict()
    b.load_state_dict(a.state_dict())
    loaded = [int(t._version) - v for t, v in zip(tensors, before, strict=True)]
    params = list(b.parameters())
    for p in params:
        lib.set_grad(p, np.ones(lib.shape(p), dtype=np.float32))
    grads = [lib.grad_object(p) for p in params]
    grads_before = [int(g._version) for g in grads]
    b.zero_grad(set_to_none=False)
    return {
        "load_state_dict": loaded,
        "earlier_state_dict": {k: lib.array(v) for k, v in earlier.items()},
        "zero_grad": [int(g._version) - v for g, v in zip(grads, grads_before, strict=True)],
    }


def to_float64(lib: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """model.to(float64): dtypes, values, parameter identity and grads."""
    model = build(lib, spec)
    params = list(model.parameters())
    for p in params:
        lib.set_grad(p, np.ones(lib.shape(p), dtype=np.float32))
    returned = model.to(lib.float64)
    return {
        "returned_self": returned is model,
        "same_parameter_objects": all(p is q for p, q in zip(params, model.parameters(),
                                                             strict=True)),
        "parameters": [[n, lib.dtype(p), lib.array(p)] for n, p in model.named_parameters()],
        "grads": [lib.dtype_of_grad(p) for p in model.parameters()],
        "buffers": [[n, lib.dtype(b), lib.array(b)] for n, b in model.named_buffers()],
        "requires_grad": [bool(p.requires_grad) for p in model.parameters()],
    }


def apply_order(lib: Any, spec: dict[str, Any]) -> list[str]:
    """The order in which Module.apply visits the modules (by class name and extra)."""
    model = build(lib, spec)
    paths = {id(m): name for name, m in model.named_modules()}
    order: list[str] = []
    assert model.apply(lambda m: order.append(paths.get(id(m), "?"))) is model
    return order


def containers(lib: Any, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """Sequential, ModuleList and ModuleDict operations, observed by their children's names
    (``named_modules``), lengths, indexing, errors and repr. ``params`` (the grader's): the
    extra_repr numbers, the out-of-range indices and the ModuleDict's keys."""
    nn = lib.nn
    p = {"k": 1, "a": 1, "b": 2, "seq_index": 9, "list_index": 99,
         "keys": ["b", "a", "c"], "missing": "zz", "nested_key": "x", **(params or {})}
    kb, ka, kc = p["keys"]

    def block(name: str, extra: str = "") -> Any:
        return block_class(nn, name)(extra)

    def names(m: Any) -> list[str]:
        return [n for n, _ in m.named_modules()]

    out: dict[str, Any] = {}
    seq = nn.Sequential(block("A"), block("B", f"k={p['k']}"), block("A"), block("C"))
    out["seq"] = names(seq)
    out["seq len"] = len(seq)
    out["seq[1]"] = repr(seq[1])
    out["seq[-1]"] = repr(seq[-1])
    out["seq[1:3]"] = names(seq[1:3])
    out["seq[1:3] type"] = type(seq[1:3]).__name__
    out["seq[::2]"] = names(seq[::2])
    out[f"seq[{p['seq_index']}]"] = raised(lambda: seq[p["seq_index"]])
    del seq[1]
    out["after del seq[1]"] = names(seq)
    seq.append(block("D"))
    out["after append"] = names(seq)
    seq[0] = block("E")
    out["after seq[0] = E"] = [type(m).__name__ for m in seq]
    out["seq repr"] = repr(seq)
    out["sequential of an OrderedDict"] = names(nn.Sequential(OrderedDict(
        [("first", block("A")), ("second", block("B"))])))

    ml = nn.ModuleList([block("A"), block("A"), block("B")])
    ml.append(block("A"))
    ml.extend([block("C"), block("C")])
    ml.insert(1, block("D"))
    out["list"] = names(ml)
    out["list repr"] = repr(ml)
    out["list[-2:]"] = names(ml[-2:])
    out["list[2]"] = repr(ml[2])
    del ml[0]
    out["after del list[0]"] = names(ml)
    out[f"list[{p['list_index']}]"] = raised(lambda: ml[p["list_index"]])
    out["list len"] = len(ml)

    md = nn.ModuleDict({kb: block("B"), ka: block("A")})
    md[kc] = block("C")
    out["dict"] = names(md)
    out["dict keys"] = list(md.keys())
    out["'a' in dict"] = ka in md
    out["dict pop"] = repr(md.pop(ka))
    out["after pop"] = list(md)
    out["dict len"] = len(md)
    out[f"dict[{p['missing']!r}]"] = raised(lambda: md[p["missing"]])
    out["dict repr"] = repr(md)

    nested = block("Net")
    nested.body = nn.Sequential(block("A"), nn.ModuleList([block("B"), block("B")]))
    nested.heads = nn.ModuleDict({p["nested_key"]: block("C", f"a={p['a']}\nb={p['b']}")})
    out["nested"] = names(nested)
    out["nested repr"] = repr(nested)
    return out


def registration(lib: Any, fill: list[float] | None = None) -> dict[str, Any]:
    """Attribute assignment and register_* rules, observed through named_parameters,
    named_buffers and state_dict. ``fill`` (the grader's): the values the tensors hold in
    place of ones, zeros and 5."""
    nn = lib.nn
    one, zero, five = fill or (1.0, 0.0, 5.0)
    m = block_class(nn, "Block")()
    m.weight = nn.Parameter(lib.tensor(np.full(2, one, np.float32)))
    m.register_buffer("mean", lib.tensor(np.full(2, zero, np.float32)))
    m.register_buffer("scratch", lib.tensor(np.full(1, zero, np.float32)), persistent=False)
    m.child = block_class(nn, "Block")()
    m.note = "plain attribute"
    out: dict[str, Any] = {}

    def observe(label: str) -> None:
        out[label] = {
            "named_parameters": _names(m.named_parameters()),
            "named_buffers": _names(m.named_buffers()),
            "state_dict": list(m.state_dict().keys()),
            "named_modules": _names(m.named_modules()),
        }

    observe("start")
    out["getattr weight is registered"] = m.weight is m._parameters["weight"]
    out["plain tensor to a parameter name"] = raised(
        lambda: setattr(m, "weight", lib.tensor(np.full(2, one, np.float32))))
    out["list to a buffer name"] = raised(lambda: setattr(m, "mean", [1.0]))
    out["dot in a buffer name"] = raised(
        lambda: m.register_buffer("a.b", lib.tensor(np.full(1, zero, np.float32))))
    out["empty parameter name"] = raised(lambda: m.register_parameter("", None))
    out["buffer over an existing attribute"] = raised(
        lambda: m.register_buffer("note", lib.tensor(np.full(1, zero, np.float32))))
    out["non-tensor buffer"] = raised(lambda: m.register_buffer("bad", [1.0]))
    out["missing attribute"] = raised(lambda: m.nothing_here)
    m.mean = lib.tensor(np.full(2, five, np.float32))  # a tensor to a buffer name replaces it
    out["buffer replaced"] = lib.array(m.mean)
    m.weight = None
    observe("weight = None")
    m.mean = nn.Parameter(lib.tensor(np.full(2, one, np.float32)))
    observe("Parameter assigned over the buffer 'mean'")
    m.register_buffer("scratch", lib.tensor(np.full(1, one, np.float32)))
    observe("'scratch' re-registered as persistent")
    del m.child
    observe("del child")
    m.child = block_class(nn, "Block")()
    m.child.bias = nn.Parameter(lib.tensor(np.full(3, zero, np.float32)))
    observe("new child with a parameter")

    class Early(nn.Module):
        def __init__(self) -> None:
            self.w = nn.Parameter(lib.tensor(np.full(1, one, np.float32)))

    out["parameter before Module.__init__"] = raised(Early)
    return out


def cycle(lib: Any, fill: list[float] | None = None) -> dict[str, Any]:
    """A submodule that keeps a reference to its parent (``child.parent = model``
    registers the model as the child's submodule: a cycle). The traversals that skip
    modules already seen list each module and tensor once; an error is observed as its
    type and message. ``fill`` (the grader's): the values the tensors hold in place of
    ones and zeros."""
    nn = lib.nn
    one, zero = (fill or (1.0, 0.0))[:2]
    model = block_class(nn, "Block")()
    model.weight = nn.Parameter(lib.tensor(np.full(2, one, np.float32)))
    model.register_buffer("mean", lib.tensor(np.full(2, zero, np.float32)))
    model.child = block_class(nn, "Block")()
    model.child.bias = nn.Parameter(lib.tensor(np.full(3, zero, np.float32)))
    model.child.parent = model

    def attempt(fn: Any) -> Any:
        try:
            return fn()
        except NotImplementedError:  # an unfinished stub is not an observed error
            raise
        except Exception as exc:  # noqa: BLE001 - a RecursionError, typically
            return f"{type(exc).__name__}: {exc}"

    return {
        "named_parameters": attempt(lambda: _names(model.named_parameters())),
        "named_buffers": attempt(lambda: _names(model.named_buffers())),
        "named_modules": attempt(lambda: _names(model.named_modules())),
        "len(list(parameters()))": attempt(lambda: len(list(model.parameters()))),
        "child.named_parameters": attempt(lambda: _names(model.child.named_parameters())),
    }
