"""Random graph programs: DAGs with branches, reuse and shared leaves.

A program is ``{"leaves": [[values, requires_grad], ...], "ops": [[op, arg, ...], ...]}``.
Values are numbered leaves first, then each op's outputs in order: most ops have one
output, ``sincos`` two (sin, cos) and ``relu_mask`` two (relu, and ``a > 0`` as int64).
An op's args are value indices, except ``scale``'s second arg, a number.

With ``extended=True`` the programs also hold what the engine must get right beyond
single-output floating point ops: Functions with two outputs (edges point at one output,
gradients flow to the right one, an output nobody uses), integer outputs (never
differentiable), and ``zero``, whose backward returns None, so a node whose only consumer
is a ``zero`` receives no gradient at all (the nodes below it must still run).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from ..suites._support import literal

SHAPES = [(), (1,), (3,), (2, 3)]
UNARY = ("sin", "square", "exp", "sum", "sincos", "relu_mask", "positive", "zero")
# the kinds of each op's outputs, in order
OUTPUTS = {"sincos": ("float", "float"), "relu_mask": ("float", "int"), "positive": ("int",)}
_EXTENDED = ["sincos", "relu_mask", "positive", "zero"]


def outputs(op: str) -> tuple[str, ...]:
    """The kinds ("float" or "int") of an op's outputs."""
    return OUTPUTS.get(op, ("float",))


def operands(op: str, args: list[Any]) -> list[int]:
    """The value indices an op reads (``scale``'s factor is a number, not a value)."""
    return list(args[:1]) if op in UNARY or op == "scale" else list(args)


def layout(program: dict[str, Any]) -> list[int]:
    """For each op, the index of its first output value."""
    first, at = [], len(program["leaves"])
    for op, *_ in program["ops"]:
        first.append(at)
        at += len(outputs(op))
    return first


def value_kinds(program: dict[str, Any]) -> list[str]:
    """"float" or "int" for every value, leaves first."""
    kinds = ["float"] * len(program["leaves"])
    for op, *_ in program["ops"]:
        kinds.extend(outputs(op))
    return kinds


@st.composite
def programs(draw: Any, max_ops: int = 8, all_require_grad: bool = False,
             extended: bool = False) -> dict[str, Any]:
    """A program whose output is a scalar that depends on every leaf.

    Ops pick their operands among all earlier floating point values, so values are reused
    (fan-out) and leaves are shared; at least one leaf requires grad. The output sums
    every value, except (``extended`` only) some outputs of two-output ops and some
    values whose consumers include a ``zero``: those reach the output through their
    consumers only, or not at all.
    """
    shape = draw(st.sampled_from(SHAPES))
    n_leaves = draw(st.integers(1, 3))
    size = int(np.prod(shape, dtype=int))
    leaves = []
    for _ in range(n_leaves):
        flat = draw(st.lists(st.floats(-2, 2, allow_subnormal=False), min_size=size, max_size=size))
        rg = True if all_require_grad else draw(st.booleans())
        leaves.append([np.array(flat, dtype=np.float64).reshape(shape), rg])
    if not any(rg for _, rg in leaves):
        leaves[draw(st.integers(0, n_leaves - 1))][1] = True
    kinds = ["add", "mul", "sin", "square", "scale"] + (_EXTENDED if extended else [])
    ops: list[list[Any]] = []
    value_kind = ["float"] * n_leaves
    unfolded: set[int] = set()
    n_ops = draw(st.integers(1, max_ops))
    for _ in range(n_ops):
        floats = [i for i, k in enumerate(value_kind) if k == "float"]
        # (indices drawn as integers when every value is a float: the draws, and so the
        # programs a seed gives, stay those of the plain programs other suites use)
        pick = st.sampled_from(floats) if extended else st.integers(0, len(floats) - 1)
        kind = draw(st.sampled_from(kinds))
        a = draw(pick)
        first = len(value_kind)
        if kind in ("add", "mul"):
            ops.append([kind, a, draw(pick)])
        elif kind == "scale":
            ops.append([kind, a, draw(st.sampled_from([-2.0, -0.5, 0.5, 3.0]))])
        else:
            ops.append([kind, a])
        value_kind.extend(outputs(kind))
        if kind == "zero" and a >= n_leaves and draw(st.booleans()):
            unfolded.add(a)  # reached through the zero (and later consumers) only
        if kind == "sincos":
            unfolded.update(first + k for k in range(2) if draw(st.booleans()))
    # fold every other floating point value into the output (integers are never operands)
    total = len(value_kind)
    folded = [i for i in range(total) if value_kind[i] == "float" and i not in unfolded]
    acc = folded[0]
    for i in folded[1:]:
        ops.append(["add", acc, i])
        acc = total
        total += 1
    ops.append(["sum", acc])
    return {"leaves": leaves, "ops": ops}


def needs_grad(program: dict[str, Any]) -> list[bool]:
    """Whether each value requires grad (as torch sets it): a leaf as drawn, a floating
    point op output when some operand requires grad, an integer output never."""
    needs = [bool(rg) for _, rg in program["leaves"]]
    for op, *args in program["ops"]:
        any_input = any(needs[a] for a in operands(op, args))
        needs.extend(any_input and kind == "float" for kind in outputs(op))
    return needs


def backward_reach(program: dict[str, Any], roots: list[int] | None = None
                   ) -> tuple[set[int], set[int]]:
    """The ops whose backward the engine reaches from ``roots`` (default: the output), by
    op index: (those that receive a gradient on some path, those reached only through a
    ``zero``, whose backward sends None)."""
    n_leaves = len(program["leaves"])
    first = layout(program)
    producer = {}
    for i, (op, *_) in enumerate(program["ops"]):
        for k in range(len(outputs(op))):
            producer[first[i] + k] = i
    needs = needs_grad(program)
    start = [len(needs) - 1] if roots is None else roots
    live: set[int] = set()
    dead: set[int] = set()
    # values receiving a real gradient, then those receiving only None
    todo = [(v, True) for v in start if needs[v]]
    while todo:
        v, real = todo.pop()
        if v < n_leaves or v not in producer:
            continue
        i = producer[v]
        if i in live or (not real and i in dead):
            continue
        if real:
            live.add(i)
            dead.discard(i)
        else:
            dead.add(i)
        op, *args = program["ops"][i]
        todo.extend((a, real and op != "zero") for a in operands(op, args) if needs[a])
    return live, dead - live


def value_label(program: dict[str, Any], value: int) -> str:
    """Which value this is, for messages: "v4 (leaf x4)", "v6 (output 1 of sincos(v2),
    cos)", "v7 (relu_mask(v3)'s output 1, int64)"."""
    n_leaves = len(program["leaves"])
    if value < n_leaves:
        return f"v{value} (leaf x{value})"
    for first, (op, *args) in zip(layout(program), program["ops"], strict=True):
        kinds = outputs(op)
        if first <= value < first + len(kinds):
            k = value - first
            call = f"{op}({', '.join(f'v{a}' for a in operands(op, args))})"
            if len(kinds) == 1:
                return f"v{value} ({call}{', int64' if kinds[k] == 'int' else ''})"
            return f"v{value} (output {k} of {call}{', int64' if kinds[k] == 'int' else ''})"
    raise IndexError(value)


def describe(program: dict[str, Any]) -> str:
    """A one-line summary for failure messages."""
    leaves = ", ".join(
        f"x{i}{list(np.shape(v))}{' rg' if rg else ''}"
        for i, (v, rg) in enumerate(program["leaves"])
    )
    parts = []
    for first, (op, *a) in zip(layout(program), program["ops"], strict=True):
        names = ",".join(f"v{first + k}" for k in range(len(outputs(op))))
        parts.append(f"{names}={op}({', '.join(map(str, a))})")
    return f"leaves [{leaves}]; {'; '.join(parts)}"


# tinytrain source of the probes' own Functions that have no tinytrain operator
_FUNCTIONS = {
    "sincos": '''class SinCos(tt.autograd.Function):  # two outputs
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.sin(a.data), np.cos(a.data)

    @staticmethod
    def backward(ctx, g_sin, g_cos):
        (a,) = ctx.saved_tensors
        return g_sin * np.cos(a.data) - g_cos * np.sin(a.data)''',
    "relu_mask": '''class ReluMask(tt.autograd.Function):  # a float output and an int64 one
    @staticmethod
    def forward(ctx, a):
        ctx.mask = a.data > 0
        return np.where(ctx.mask, a.data, 0.0), ctx.mask.astype(np.int64)

    @staticmethod
    def backward(ctx, grad, grad_mask):
        return grad * ctx.mask''',
    "positive": '''class Positive(tt.autograd.Function):  # an int64 output only
    @staticmethod
    def forward(ctx, a):
        return (a.data > 0).astype(np.int64)

    @staticmethod
    def backward(ctx, grad):
        return None''',
    "zero": '''class Zero(tt.autograd.Function):  # backward returns None: no gradient
    @staticmethod
    def forward(ctx, a):
        return np.zeros_like(a.data)

    @staticmethod
    def backward(ctx, grad):
        return None''',
}
_CALLS = {"sincos": "SinCos.apply({})", "relu_mask": "ReluMask.apply({})",
          "positive": "Positive.apply({})", "zero": "Zero.apply({})"}


def reproducer(program: dict[str, Any], calls: int = 1, backward: bool = True,
               roots: list[int] | None = None, root_grads: list[Any] | None = None) -> str:
    """tinytrain code that runs a program with tinytrain's own operators (and small
    Functions for the ops tinytrain has no operator for); without ``backward`` it prints
    each value's graph attributes instead of the gradients. ``roots``: the values passed
    to ``tt.autograd.backward`` with ``root_grads`` instead of the output."""
    used = [op for op in _FUNCTIONS if any(o[0] == op for o in program["ops"])]
    lines = ["import numpy as np", "import tinytrain as tt"] if used else ["import tinytrain as tt"]
    lines += [_FUNCTIONS[op] for op in used]
    names: list[str] = []
    for i, (value, rg) in enumerate(program["leaves"]):
        names.append(f"x{i}")
        lines.append(f"x{i} = tt.tensor({literal(value)}, dtype=tt.float64, "
                     f"requires_grad={bool(rg)})")
    body = []
    for op, *args in program["ops"]:
        a = names[args[0]]
        if op in ("add", "mul"):
            expr = f"{a} {'+' if op == 'add' else '*'} {names[args[1]]}"
        elif op == "scale":
            expr = f"{a} * {args[1]}"
        elif op == "square":
            expr = f"{a} * {a}"
        elif op in _CALLS:
            expr = _CALLS[op].format(a)
        else:
            expr = f"{a}.{op}()"
        out = [f"v{len(names) + k}" for k in range(len(outputs(op)))]
        names.extend(out)
        body.append(f"{', '.join(out)} = {expr}")
    if not backward:
        lines.extend(body)
        lines.append(f"for v in [{', '.join(names)}]:")
        lines.append("    print(v.requires_grad, v.is_leaf, v.grad_fn)")
        return "\n".join(lines)
    if roots:
        grads = [f"tt.tensor({literal(g)}, dtype=tt.float64)" for g in root_grads or []]
        run = (f"tt.autograd.backward([{', '.join(names[r] for r in roots)}], "
               f"[{', '.join(grads)}])")
    else:
        run = f"{names[-1]}.backward()"
    if calls > 1:
        lines.append(f"for _ in range({calls}):")
        lines.extend("    " + line for line in [*body, run])
    else:
        lines.extend([*body, run])
    lines.append("print(" + ", ".join(f"x{i}.grad" for i in range(len(program["leaves"]))) + ")")
    return "\n".join(lines)
