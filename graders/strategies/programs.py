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

import ast
import functools
import re
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import strategies as st

from ..checks.compare import literal

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


# The probes' own Functions (``graders.probes._functions`` and others) as source text,
# read from the probe modules themselves, so a reproducer runs exactly the forward and
# backward the grader ran: it then needs none of assignment 2's operators. In a probe
# module they derive from a base class and may log their backward calls; a reproducer's
# derive from tt.autograd.Function and log nothing.
_PROBES = Path(__file__).resolve().parents[1] / "probes"
_CALL_LOG = re.compile(r"^\s*calls\.append\(.*\)\n", re.M)


@functools.cache
def _probe_module(module: str, builder: str) -> tuple[dict[str, str], ast.FunctionDef]:
    text = (_PROBES / f"{module}.py").read_text()
    tree = ast.parse(text)
    function = next(node for node in tree.body
                    if isinstance(node, ast.FunctionDef) and node.name == builder)
    sources = {}
    for node in function.body:
        if isinstance(node, ast.ClassDef):
            source = textwrap.dedent(" " * node.col_offset
                                     + ast.get_source_segment(text, node, padded=False))
            source = source.replace(f"class {node.name}(base):",
                                    f"class {node.name}(tt.autograd.Function):", 1)
            sources[node.name] = _CALL_LOG.sub("", source).rstrip()
    return sources, function


def classes_source(names: list[str], module: str = "_functions",
                   builder: str = "functions") -> str:
    """The tinytrain source of the Function classes ``names`` that ``builder`` in probe
    module ``module`` defines, in the module's order, under a comment saying what they
    are."""
    sources, _ = _probe_module(module, builder)
    chosen = [source for name, source in sources.items() if name in names]
    return "\n\n\n".join(["# the grader's own small Functions: its probes run these rather "
                           "than tinytrain's\n# operators, so this needs only the task graded "
                           "and the tasks before it", *chosen])


@functools.cache
def _probe_functions() -> dict[str, str]:
    """{op name: class name} of the Functions of ``graders.probes._functions``."""
    sources, builder = _probe_module("_functions", "functions")
    namespace = next(node.value for node in builder.body if isinstance(node, ast.Assign)
                     and isinstance(node.value, ast.Call)
                     and getattr(node.value.func, "id", "") == "SimpleNamespace")
    return {kw.arg: kw.value.id for kw in namespace.keywords
            if isinstance(kw.value, ast.Name) and kw.value.id in sources}


def function_class(op: str) -> str:
    """The class name of the probe Function for a probe op name ("torch_mul": TorchMul)."""
    return _probe_functions()[op]


def functions_source(ops: list[str]) -> str:
    """The tinytrain source of the probe Functions for ``ops`` (probe op names)."""
    return classes_source([function_class(op) for op in ops if op in _probe_functions()])


# The probes set the grad-mode flags directly (task 1.3's context managers are graded on
# their own): a reproducer does the same, and says which block it stands for.
_MODE_FLAGS = {
    "no_grad": ("False, False", "with tt.no_grad():"),
    "enable_grad": ("True, False", "with tt.enable_grad():"),
    "inference_mode": ("False, True", "with tt.inference_mode():"),
    "inference_mode+enable_grad": ("True, True",
                                   "with tt.inference_mode(), tt.enable_grad():"),
}

# Tensor hooks without task 1.4: the probes' own copy of its hook runner and registration.
_HOOKS = '''# tensor hooks before task 1.4 is done: the grader's copy of 1.4's hook runner, and
# register_hook(v, hook), which does what v.register_hook(hook) does once 1.4 is done
from tinytrain.autograd.function import AccumulateGrad, BackwardNode


def _apply_hooks(hooks, grads, nr):
    for hook in list(hooks):
        if grads[nr] is not None:
            result = hook(tt.Tensor(grads[nr]))
            if result is not None:
                grads[nr] = result.data


def _node_hooks(node, grads):
    for nr, hooks in node._tensor_hooks.items():
        _apply_hooks(hooks, grads, nr)
    return grads


def _leaf_hooks(node, grads):
    _apply_hooks(node.variable._backward_hooks or (), grads, 0)
    return grads


BackwardNode._run_tensor_hooks, AccumulateGrad._run_tensor_hooks = _node_hooks, _leaf_hooks


def register_hook(v, hook):
    if v.grad_fn is None:
        v._backward_hooks = (v._backward_hooks or []) + [hook]
    else:
        v.grad_fn._tensor_hooks.setdefault(v._output_nr, []).append(hook)'''


def reproducer(program: dict[str, Any], calls: int = 1, backward: bool = True,
               roots: list[int] | None = None, root_grads: list[Any] | None = None, *,
               retain_graph: bool = False, mode: str | None = None, edges: bool = False,
               hooks: list[list[Any]] | None = None, sharing: bool = False) -> str:
    """A complete tinytrain script that runs a program as the grader did: with the
    probes' own small Functions, spelled out, so it needs assignment 1's tasks only.

    Without ``backward`` it prints each value's graph attributes (with ``edges``, its
    grad_fn's next_functions too), the ops run under the grad-mode flags of ``mode``.
    With it, ``calls`` backward passes, each on a fresh forward or (``retain_graph``) all
    through one graph: of the output, or of ``roots`` with ``root_grads`` through
    ``tt.autograd.backward``; ``hooks`` ([value, k], ...) put a hook ``g * k`` on those
    values. Then it prints the leaves' .grad (with ``sharing``, the given gradients too,
    and whether a .grad shares memory with another one or with a given gradient)."""
    lines = ["import numpy as np", "import tinytrain as tt"]
    if mode is not None and not backward:
        lines.append("from tinytrain.autograd import grad_mode")
    lines += ["", functions_source([op for op, *_ in program["ops"]])]
    if hooks:
        lines += ["", "", _HOOKS]
    lines += ["", ""]
    names: list[str] = []
    for i, (value, rg) in enumerate(program["leaves"]):
        names.append(f"x{i}")
        lines.append(f"x{i} = tt.tensor({literal(value)}, dtype=tt.float64, "
                     f"requires_grad={bool(rg)})")
    body = []
    for op, *args in program["ops"]:
        call = function_class(op) + ".apply"
        if op == "scale":
            expr = f"{call}({names[args[0]]}, {float(args[1])!r})"
        else:
            expr = f"{call}({', '.join(names[a] for a in operands(op, args))})"
        out = [f"v{len(names) + k}" for k in range(len(outputs(op)))]
        names.extend(out)
        body.append(f"{', '.join(out)} = {expr}")
    if not backward:
        return "\n".join(lines + _graph_lines(body, names, mode, edges))
    n_leaves = len(program["leaves"])
    lines += _backward_lines(body, names, n_leaves, calls, roots, root_grads, retain_graph,
                             hooks)
    leaves = names[:n_leaves]
    lines += [f'print("{x}.grad:", {x}.grad)' for x in leaves]
    if sharing:
        given = [f"g{k}" for k in range(len(root_grads or []))] if roots else []
        lines += [f'print("{g} after backward:", {g})' for g in given]
        lines += [f"arrays = [x.grad.data for x in [{', '.join(leaves)}] if x.grad is not None]"
                  + (f" + [g.data for g in [{', '.join(given)}]]" if given else ""),
                  "# torch: False (each .grad is an array of its own)",
                  'print(".grad sharing memory:", any(np.shares_memory(a, b) '
                  "for i, a in enumerate(arrays) for b in arrays[i + 1:]))"]
    return "\n".join(lines)


def _graph_lines(body: list[str], names: list[str], mode: str | None, edges: bool,
                 ) -> list[str]:
    lines = []
    if mode is not None:
        flags, stands_for = _MODE_FLAGS[mode]
        lines += [f"# the ops run as inside `{stands_for}`: the grader sets the flags",
                  "# (grad enabled, inference mode) itself, not through task 1.3's code",
                  f"grad_mode._state.grad_enabled, grad_mode._state.inference = {flags}"]
    lines += body
    if mode is not None:
        lines.append("grad_mode._state.grad_enabled, grad_mode._state.inference = True, False")
    lines += ["",
              "",
              "def node(fn):",
              "    return None if fn is None else type(fn).__name__",
              "",
              "",
              f"for name, v in zip({names!r}, [{', '.join(names)}]):",
              '    print(name, "requires_grad:", v.requires_grad, "is_leaf:", v.is_leaf, '
              '"grad_fn:", node(v.grad_fn))']
    if edges:
        lines += ["    if v.grad_fn is not None:",
                  '        print("    next_functions:", '
                  "[(node(n), nr) for n, nr in v.grad_fn.next_functions])"]
    return lines


def _backward_lines(body: list[str], names: list[str], n_leaves: int, calls: int,
                    roots: list[int] | None, root_grads: list[Any] | None,
                    retain_graph: bool, hooks: list[list[Any]] | None) -> list[str]:
    lines = []
    keep = "retain_graph=True" if retain_graph else ""
    if roots:
        given = [f"g{k}" for k in range(len(root_grads or []))]
        lines += [f"{g} = tt.tensor({literal(v)}, dtype=tt.float64)"
                  for g, v in zip(given, root_grads or [], strict=True)]
        run = (f"tt.autograd.backward([{', '.join(names[r] for r in roots)}], "
               f"[{', '.join(given)}]{', ' + keep if keep else ''})")
    else:
        run = f"{names[-1]}.backward({keep})"
    # a hook returning g * k, computed in NumPy (tinytrain's * is task 2.1)
    registered = [(v, f"register_hook({names[v]}, lambda g: tt.tensor(g.data * {float(k)!r}))")
                  for v, k in hooks or []]
    lines += [line for v, line in registered if v < n_leaves]  # kept across forwards
    node_hooks = [line for v, line in registered if v >= n_leaves]
    if calls > 1 and not retain_graph:
        lines.append(f"for _ in range({calls}):  # a fresh forward for each backward")
        lines += ["    " + line for line in [*body, *node_hooks, run]]
    else:
        lines += [*body, *node_hooks, *[run] * calls]
    return lines
