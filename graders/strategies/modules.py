"""Random module trees as plain data (specs; built by ``graders.probes._modules.build``).

A spec node is ``{"kind": "block" | "seq" | "list" | "dict", "children": [[name, node]]}``;
a block also has ``name`` (its class name), ``extra`` (its extra_repr), ``params``
(``[[name, array or None]]``), ``buffers`` (``[[name, array or None, persistent]]``),
``ties`` (``[[name, dotted path of a parameter elsewhere]]``) and ``shares``
(``[[name, dotted path of a childless block elsewhere]]``): weight tying and shared
submodules, attached after the whole tree is built.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from hypothesis import strategies as st

PARAM_NAMES = ["weight", "bias", "scale"]
BUFFER_NAMES = ["running_mean", "mask", "steps"]
CHILD_NAMES = ["encoder", "head", "fc", "blocks"]
SHAPES = [(), (2,), (3,), (2, 3)]


def _array(draw: Any, dtype: Any = np.float32) -> np.ndarray:
    shape = draw(st.sampled_from(SHAPES))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "i":
        return rng.integers(0, 10, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@st.composite
def _node(draw: Any, depth: int, root: bool = False) -> dict[str, Any]:
    kind = "block" if depth == 0 or root else draw(
        st.sampled_from(["block", "block", "seq", "list", "dict"]))
    if kind == "block":
        node: dict[str, Any] = {
            "kind": "block",
            "name": draw(st.sampled_from(["Block", "Head"])),
            "extra": draw(st.sampled_from(["", "", "k=3", "a=1\nb=2"])),
        }
        node["params"] = [
            [name, None if draw(st.integers(0, 6)) == 0 else _array(draw)]
            for name in draw(st.lists(st.sampled_from(PARAM_NAMES), max_size=2, unique=True))
        ]
        buffers = []
        for name in draw(st.lists(st.sampled_from(BUFFER_NAMES), max_size=2, unique=True)):
            dtype = np.int64 if name == "steps" else np.float32
            value = None if draw(st.integers(0, 6)) == 0 else _array(draw, dtype)
            buffers.append([name, value, draw(st.booleans())])
        node["buffers"] = buffers
        names = draw(st.lists(st.sampled_from(CHILD_NAMES), max_size=2 if depth else 0,
                              unique=True))
        node["children"] = [[n, draw(_node(depth - 1))] for n in names]
        return node
    # an empty container (falsy: len() == 0) still is a submodule
    count = draw(st.sampled_from([0, 1, 1, 2, 3]))
    children = [draw(_node(depth - 1)) for _ in range(count)]
    if kind == "dict":
        keys = draw(st.permutations(["a", "b", "c"]))[:count]
        return {"kind": "dict", "children": [[k, c] for k, c in zip(keys, children, strict=True)]}
    return {"kind": kind, "children": [[str(i), c] for i, c in enumerate(children)]}


def walk(spec: dict[str, Any], path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """(dotted path, node) of every node, pre-order."""
    out = [(path, spec)]
    for name, child in spec.get("children", []):
        out.extend(walk(child, f"{path}.{name}" if path else name))
    return out


@st.composite
def module_specs(draw: Any, max_depth: int = 3, links: bool = True) -> dict[str, Any]:
    """A random model: nested blocks and containers, with tied parameters and shared
    submodules when ``links``. The root is always a block."""
    spec = draw(_node(max_depth, root=True))
    if not links:
        return spec
    nodes = walk(spec)
    blocks = [(p, n) for p, n in nodes if n["kind"] == "block"]
    params = [f"{p}.{name}" if p else name
              for p, n in blocks for name, value in n["params"] if value is not None]
    for _, node in blocks:
        if params and draw(st.integers(0, 3)) == 0:
            node["ties"] = [["tied", draw(st.sampled_from(params))]]
    # a block shares a childless block that shares nothing itself: no cycles
    sharers = [p for p, _ in blocks if draw(st.integers(0, 3)) == 0]
    targets = [p for p, n in blocks if p and not n["children"] and p not in sharers]
    for path, node in blocks:
        if path in sharers and targets:
            node["shares"] = [["shared", draw(st.sampled_from(targets))]]
    return spec


def revalue(spec: dict[str, Any], seed: int) -> dict[str, Any]:
    """The same structure with other values in every parameter and buffer."""
    rng = np.random.default_rng(seed)
    out = copy.deepcopy(spec)
    for _, node in walk(out):
        for entry in node.get("params", []) + node.get("buffers", []):
            if entry[1] is not None:
                value = entry[1]
                entry[1] = (rng.integers(10, 20, value.shape).astype(value.dtype)
                            if value.dtype.kind == "i"
                            else rng.standard_normal(value.shape).astype(value.dtype))
    return out


def describe(spec: dict[str, Any]) -> str:
    """The model as tinytrain-like pseudo-code, for failure messages."""
    lines = []
    for path, node in walk(spec):
        where = f"model.{path}" if path else "model"
        if node["kind"] != "block":
            kind = {"seq": "Sequential", "list": "ModuleList", "dict": "ModuleDict"}[node["kind"]]
            lines.append(f"{where} = {kind}(...)  # children {[n for n, _ in node['children']]}")
            continue
        lines.append(f"{where} = {node['name']}()")
        for name, value in node["params"]:
            shape = None if value is None else list(np.shape(value))
            lines.append(f"{where}.register_parameter({name!r}, "
                         f"{'None' if value is None else f'Parameter(shape {shape})'})")
        for name, value, persistent in node["buffers"]:
            shape = None if value is None else f"tensor(shape {list(np.shape(value))})"
            lines.append(f"{where}.register_buffer({name!r}, {shape}, persistent={persistent})")
    for path, node in walk(spec):
        for name, target in node.get("ties", []):
            where = f"model.{path}" if path else "model"
            lines.append(f"{where}.{name} = model.{target}  # tied parameter")
        for name, target in node.get("shares", []):
            where = f"model.{path}" if path else "model"
            lines.append(f"{where}.{name} = model.{target}  # shared submodule")
    return "\n".join(lines)
