"""Random programs with in-place writes at random points, views included (assignment 3).

A program is ``{"leaves": [[values, requires_grad], ...], "steps": [step, ...]}``. Value
``i`` is leaf ``i`` for ``i < len(leaves)``, else the result of step ``i - len(leaves)``;
an in-place step's result is its target itself (the same tensor under a new index). A
step is a dict: ``op``, ``args`` (value indices), and, by op, ``k`` (a number), ``key``
(for setitem: ``["index", i]`` or ``["slice", start, stop]``), ``bounds`` (clamp_) and
``no_grad`` (run the step under no_grad). After the steps, every value is folded into a
scalar loss (``sum(v * w_i)`` summed) and backward runs.

The same program runs in tinytrain (``graders.probes.inplace``) and in torch
(``graders.oracle.inplace``); out-of-place ops and views are probe Functions that save
exactly what torch's ops save, the in-place ops are the submission's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from ..checks.compare import literal
from .programs import function_class, functions_source

UNARY = ["sin", "exp", "square", "scale"]
INPLACE_BINARY = ["add_", "sub_", "mul_", "div_", "copy_"]
INPLACE_UNARY = ["relu_", "clamp_", "zero_", "fill_"]
NUMBERS = [-2.0, -0.5, 0.5, 2.0]
# no tiny magnitudes: dividing by them overflows, and where it overflows depends on the
# order of operations in a formula, which is not what these tests are about
VALUES = st.one_of(st.just(0.0), st.floats(0.05, 1.5), st.floats(-1.5, -0.05))


def _broadcasts(src: tuple[int, ...], dst: tuple[int, ...]) -> bool:
    try:
        return np.broadcast_shapes(src, dst) == dst
    except ValueError:
        return False


def _indexed_shape(shape: tuple[int, ...], key: list[Any]) -> tuple[int, ...]:
    if key[0] == "index":
        return shape[1:]
    return (len(range(*slice(key[1], key[2]).indices(shape[0]))), *shape[1:])


@st.composite
def inplace_programs(draw: Any, max_steps: int = 8, views: bool = True) -> dict[str, Any]:
    """A program of out-of-place ops, views and in-place writes (some under no_grad)."""
    shape = draw(st.sampled_from([(3,), (2, 3), (4,)]))
    n_leaves = draw(st.integers(1, 3))
    size = int(np.prod(shape))
    leaves = []
    for _ in range(n_leaves):
        flat = draw(st.lists(VALUES, min_size=size, max_size=size))
        leaves.append([np.array(flat, dtype=np.float64).reshape(shape), draw(st.booleans())])
    if not any(rg for _, rg in leaves):
        leaves[draw(st.integers(0, n_leaves - 1))][1] = True
    shapes = [shape] * n_leaves
    steps: list[dict[str, Any]] = []
    kinds = ["unary", "binary", "inplace", "inplace", "setitem"] + (["view"] * 2 if views else [])
    for _ in range(draw(st.integers(1, max_steps))):
        kind = draw(st.sampled_from(kinds))
        a = draw(st.integers(0, len(shapes) - 1))
        if kind in ("inplace", "setitem") and len(shapes) > n_leaves and draw(st.booleans()):
            a = draw(st.integers(n_leaves, len(shapes) - 1))  # fewer writes into leaves
        sa = shapes[a]
        step: dict[str, Any] | None = None
        out_shape = sa
        if kind == "unary":
            op = draw(st.sampled_from(UNARY))
            step = {"op": op, "args": [a]}
            if op == "scale":
                step["k"] = draw(st.sampled_from(NUMBERS))
        elif kind == "binary":
            partners = [i for i, s in enumerate(shapes) if s == sa]
            step = {"op": draw(st.sampled_from(["add", "mul"])),
                    "args": [a, draw(st.sampled_from(partners))]}
        elif kind == "view" and sa:
            choices = ["narrow", "select"] + (["t"] if len(sa) == 2 else [])
            op = draw(st.sampled_from(choices))
            if op == "narrow":
                start = draw(st.integers(0, sa[0] - 1))
                length = draw(st.integers(1, sa[0] - start))
                step = {"op": op, "args": [a], "key": [start, length]}
                out_shape = (length, *sa[1:])
            elif op == "select":
                step = {"op": op, "args": [a], "key": [draw(st.integers(0, sa[0] - 1))]}
                out_shape = sa[1:]
            else:
                step = {"op": op, "args": [a]}
                out_shape = sa[::-1]
        elif kind == "inplace":
            op = draw(st.sampled_from(INPLACE_BINARY + INPLACE_UNARY))
            step = {"op": op, "args": [a]}
            if op in INPLACE_BINARY:
                partners = [i for i, s in enumerate(shapes) if _broadcasts(s, sa)]
                if op != "copy_" and draw(st.booleans()):
                    step["k"] = draw(st.sampled_from(NUMBERS))
                else:
                    step["args"].append(draw(st.sampled_from(partners)))
                if op in ("add_", "sub_") and draw(st.booleans()):
                    step["alpha"] = draw(st.sampled_from([-1.5, 2.0]))
            elif op == "clamp_":
                lo = draw(st.sampled_from([None, -0.5, 0.0]))
                hi = draw(st.sampled_from([None, 0.5, 1.0] if lo is not None else [0.5, 1.0]))
                step["bounds"] = [lo, hi]
            elif op == "fill_":
                step["k"] = draw(st.sampled_from(NUMBERS))
        elif kind == "setitem" and sa:
            if draw(st.booleans()):
                key: list[Any] = ["index", draw(st.integers(0, sa[0] - 1))]
            else:
                start = draw(st.integers(0, sa[0] - 1))
                key = ["slice", start, draw(st.integers(start + 1, sa[0]))]
            target_shape = _indexed_shape(sa, key)
            partners = [i for i, s in enumerate(shapes) if _broadcasts(s, target_shape)]
            step = {"op": "setitem", "args": [a], "key": key}
            if partners and draw(st.booleans()):
                step["args"].append(draw(st.sampled_from(partners)))
            else:
                step["k"] = draw(st.sampled_from(NUMBERS))
        if step is None:
            continue
        if step["op"].endswith("_") or step["op"] == "setitem":
            step["no_grad"] = draw(st.integers(0, 3)) == 0
        steps.append(step)
        shapes.append(out_shape)
    if not any(_is_inplace(step) for step in steps):  # every program writes in place
        steps.append({"op": "mul_", "args": [len(shapes) - 1], "k": 2.0, "no_grad": False})
    return {"leaves": leaves, "steps": steps}


def fold_weights(program: dict[str, Any]) -> list[float]:
    """The weight of each value in the loss: distinct, so gradients tell values apart."""
    n = len(program["leaves"]) + len(program["steps"])
    return [1.0 + 0.25 * i for i in range(n)]


# the probe Function each out-of-place op and view of a program runs (they save what
# torch's ops save); in-place steps are the submission's own ops
_PROBE_OPS = {"sin": "sin", "exp": "exp", "square": "square", "scale": "scale", "add": "add",
              "mul": "torch_mul", "narrow": "narrow", "select": "select", "t": "transpose"}


def reproducer(program: dict[str, Any]) -> str:
    """A complete tinytrain script that runs the program as the grader did: the
    out-of-place ops and views are the probes' Functions (spelled out), the in-place
    writes the submission's. It prints every value's _version, requires_grad and is_leaf
    before backward, then the leaves' gradients, or the RuntimeError raised."""
    ops = {_PROBE_OPS[s["op"]] for s in program["steps"] if s["op"] in _PROBE_OPS}
    names = [f"x{i}" for i in range(len(program["leaves"]))]
    body = [
        f"x{i} = tt.tensor({literal(np.asarray(v))}, dtype=tt.float64, "
        f"requires_grad={bool(rg)})"
        for i, (v, rg) in enumerate(program["leaves"])
    ]
    for step in program["steps"]:
        name = f"v{len(names)}"
        line = step_code(step, names, name)
        body += ["with tt.no_grad():", "    " + line] if step.get("no_grad") else [line]
        names.append(name if not _is_inplace(step) else names[step["args"][0]])
    values = ", ".join(names)
    body += [f"values = [{values}]  # values numbered leaves first",
             'print("_version:", [v._version for v in values])',
             'print("requires_grad:", [v.requires_grad for v in values])',
             'print("is_leaf:", [v.is_leaf for v in values])',
             "loss = None",
             f"for v, w in zip(values, {fold_weights(program)!r}):",
             "    term = Sum.apply(Scale.apply(v, w))",
             "    loss = term if loss is None else Add.apply(loss, term)",
             "loss.backward()",
             *[f'print("{x}.grad:", {x}.grad)' for x in names[: len(program["leaves"])]]]
    return "\n".join([
        "import numpy as np", "import tinytrain as tt", "",
        functions_source(sorted(ops | {"sum", "scale", "add"})), "", "",
        "try:", *["    " + line for line in body],
        "except RuntimeError as error:  # where PyTorch raises, it raises a RuntimeError",
        '    print("RuntimeError:", error)'])


def _is_inplace(step: dict[str, Any]) -> bool:
    return step["op"].endswith("_") or step["op"] == "setitem"


def step_code(step: dict[str, Any], names: list[str], out: str) -> str:
    """One step as tinytrain code (probe Functions for out-of-place ops and views)."""
    op, args = step["op"], [names[i] for i in step["args"]]
    if op in ("sin", "exp", "square", "add", "mul", "t"):
        return f"{out} = {function_class(_PROBE_OPS[op])}.apply({', '.join(args)})"
    if op == "scale":
        return f"{out} = Scale.apply({args[0]}, {step['k']})"
    if op == "narrow":
        return f"{out} = Narrow.apply({args[0]}, {step['key'][0]}, {step['key'][1]})  # narrow"
    if op == "select":
        return f"{out} = Select.apply({args[0]}, {step['key'][0]})  # {args[0]}[{step['key'][0]}]"
    if op == "setitem":
        key = step["key"]
        index = str(key[1]) if key[0] == "index" else f"{key[1]}:{key[2]}"
        value = args[1] if len(args) > 1 else step["k"]
        return f"{args[0]}[{index}] = {value}"
    if op == "clamp_":
        lo, hi = step["bounds"]
        return f"{args[0]}.clamp_({lo}, {hi})"
    operand = args[1] if len(args) > 1 else step.get("k")
    extra = f", alpha={step['alpha']}" if "alpha" in step else ""
    if op in ("relu_", "zero_"):
        return f"{args[0]}.{op}()"
    return f"{args[0]}.{op}({operand}{extra})"
