"""Mutation testing of the graders: mutmut's operators over the reference's solution regions.

Each mutant is one change made by one of mutmut's mutation operators (its operator set and
its way of enumerating them: a libcst visitor over every node, restricted to the lines of
the ``# BEGIN SOLUTION <task>`` ... ``# END SOLUTION`` regions) to one file of
``reference/tinytrain``. It belongs to the task of its region. The "test" is the grader: the
mutated reference is graded as a submission on that task alone (``--tasks <task>
--no-shrink``); the mutant is killed when the task scores below its maximum. A grading that
crashes or runs past ``--timeout`` counts as killed, reported apart.

mutmut's own runner cannot be used: it switches mutants at run time through trampolines
that import ``mutmut`` and read an environment variable inside the code under test, while
the grader runs the submission in a sandboxed worker with its own environment (no mutmut,
a minimal environment). So mutmut enumerates and the mutant is written out as a file.

Every grading is a fork of this process, which has imported torch and the grader once:
each mutant is still a separate submission in a fresh grader process (with its own fresh
worker), without paying the imports again (~3 s of CPU a grading instead of ~6).

Results are cached (``--cache``, one JSON line per grading) under a key made of the
mutant's diff, the task, the grader's version (its files that can matter for the task's
assignment, torch's and Hypothesis's versions), the reference's files and the grading
settings: a rerun grades only what changed. ``scripts/mutation_equivalents.toml`` lists the
survivors that are equivalent to the reference, with the reason.

    python scripts/mutation_test.py --sample 5 --jobs 2          # every task, 5 mutants each
    python scripts/mutation_test.py --tasks 1 --sample 20        # assignment 1
    python scripts/mutation_test.py --list                       # count mutants, grade none
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: the graders of this checkout
    sys.path.insert(0, str(ROOT))

from graders import rubric as rubric_module  # noqa: E402
from graders.authoring.template import find_blocks, rubric_titles  # noqa: E402

REFERENCE = ROOT / "reference" / "tinytrain"
EQUIVALENTS = ROOT / "scripts" / "mutation_equivalents.toml"
DEFAULT_OUT = ROOT / "mutation-report"
# graders/ holds tools besides the grading itself; these never run in a grading
NOT_GRADING = ("classgrade", "deploy", "authoring")
KILLED = ("killed", "timeout", "crashed")  # outcomes that count as killed


@dataclass
class Mutant:
    """One mutation of one reference file, inside one task's solution region."""

    id: str
    task: str
    file: str  # path inside the tinytrain package
    line: int  # 1-based line of the mutated node in the reference file
    function: str  # the enclosing top-level function or method ("" at module level)
    operator: str  # mutmut's operator (its function name without "operator_")
    original: str  # the node's code
    mutated: str  # what mutmut (or the rewrite) put in its place
    operators: str = "mutmut"  # the operator set: "mutmut" or "rewrites"
    _source: str = dataclasses.field(repr=False, default="")
    _make: Callable[[], str] | None = dataclasses.field(repr=False, default=None)
    _code: str | None = dataclasses.field(repr=False, default=None)

    def code(self) -> str:
        """The whole mutated file (made on first use: it re-renders the module)."""
        if self._code is None:
            assert self._make is not None
            self._code = self._make()
        return self._code

    def diff(self) -> str:
        return "".join(difflib.unified_diff(
            self._source.splitlines(keepends=True), self.code().splitlines(keepends=True),
            fromfile=f"a/tinytrain/{self.file}", tofile=f"b/tinytrain/{self.file}", n=1))

    def compiles(self) -> bool:
        try:
            compile(self.code(), self.file, "exec")
        except SyntaxError:
            return False
        return True

    def apply(self, submission: Path) -> None:
        """Make ``submission/tinytrain`` the reference with this mutant applied."""
        target = submission / "tinytrain"
        shutil.copytree(REFERENCE, target, ignore=shutil.ignore_patterns("__pycache__"))
        (target / self.file).write_text(self.code())


# ----------------------------------------------------------------------------- enumeration

def solution_lines(text: str, path: str, titles: dict[str, str] | None = None) -> dict[int, str]:
    """{1-based line: task} for every line strictly inside a solution region of ``text``."""
    titles = titles if titles is not None else rubric_titles()
    lines: dict[int, str] = {}
    for block in find_blocks(text, path, titles):
        # block.start/end are the 0-based indices of the markers
        for number in range(block.start + 2, block.end + 1):
            lines[number] = block.task
    return lines


def _operators(names: dict[int, str]) -> list[tuple[type, Callable[[Any], Iterator[Any]]]]:
    """mutmut's operator table, each operator wrapped to record which one made a node."""
    from mutmut.mutation.mutators import mutation_operators

    def wrap(name: str, function: Callable[[Any], Iterable[Any]]) -> Callable[[Any], Iterator[Any]]:
        def recorded(node: Any) -> Iterator[Any]:
            for mutated in function(node):
                names[id(mutated)] = name
                yield mutated
        return recorded

    return [(kind, wrap(fn.__name__.removeprefix("operator_"), fn))
            for kind, fn in mutation_operators]


def file_mutants(text: str, rel: str, titles: dict[str, str],
                 tasks: set[str] | None = None,
                 operators: Iterable[str] = ("mutmut",)) -> list[Mutant]:
    """Every mutant of the operator sets ``operators`` ("mutmut": mutmut's; "rewrites": the
    student rewrites) in the solution regions of one file (of ``tasks`` only, when given),
    in source order within each set."""
    region = solution_lines(text, rel, titles)
    if tasks is not None:
        region = {n: t for n, t in region.items() if t in tasks}
    if not region:
        return []
    found = []
    for name in operators:
        if name not in OPERATOR_SETS:
            raise ValueError(f"unknown operator set {name!r}: one of {OPERATOR_SETS}")
        found.extend(mutmut_mutants(text, rel, region) if name == "mutmut"
                     else rewrite_mutants(text, rel, region))
    return found


def mutmut_mutants(text: str, rel: str, region: dict[int, str]) -> list[Mutant]:
    """Every mutant mutmut makes in one file's solution regions (``region``: line -> task)."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider
    from mutmut.mutation.file_mutation import NEVER_MUTATE_FUNCTION_NAMES, MutationVisitor
    from mutmut.mutation.pragma_handling import IgnoredCode

    class Visitor(MutationVisitor):
        """mutmut's visitor, but decorated functions are mutated too: mutmut skips them
        because its trampolines would copy the decorator; a mutant written out as a file
        has none (Triton kernels are all decorated with @triton.jit)."""

        def _skip_node_and_children(self, node: Any) -> bool:
            if isinstance(node, cst.FunctionDef) and node.decorators:
                return node.name.value in NEVER_MUTATE_FUNCTION_NAMES
            return super()._skip_node_and_children(node)

    names: dict[int, str] = {}
    wrapper = MetadataWrapper(cst.parse_module(text))
    visitor = Visitor(_operators(names), IgnoredCode(set(), set(), set()), set(region))
    wrapper.visit(visitor)
    module = wrapper.module
    positions = wrapper.resolve(PositionProvider)
    source_lines = text.splitlines()
    seen: Counter[tuple[str, ...]] = Counter()
    found = []
    for mutation in visitor.mutations:
        line = positions[mutation.original_node].start.line
        function = mutation.contained_by_top_level_function
        original = module.code_for_node(mutation.original_node)
        mutated = module.code_for_node(mutation.mutated_node)
        operator = names.get(id(mutation.mutated_node), "unknown")
        # an id that survives edits elsewhere: what changed, where (file, function and the
        # text of its line), and which of several identical changes on that line it is
        where = (rel, function.name.value if function is not None else "",
                 source_lines[line - 1].strip(), operator, original, mutated)
        seen[where] += 1
        digest = hashlib.sha1("\0".join((*where, str(seen[where]))).encode()).hexdigest()[:10]

        def make(node: Any = mutation.original_node, new: Any = mutation.mutated_node) -> str:
            return module.deep_replace(node, new).code

        found.append(Mutant(
            id=f"{region[line]}-{digest}", task=region[line], file=rel, line=line,
            function=where[1], operator=operator, original=original, mutated=mutated,
            _source=text, _make=make))
    return found


# ----------------------------------------------------------------------------- student rewrites

OPERATOR_SETS = ("mutmut", "rewrites")
_COMPARE_FLIP = {"LessThan": "LessThanEqual", "LessThanEqual": "LessThan",
                 "GreaterThan": "GreaterThanEqual", "GreaterThanEqual": "GreaterThan"}
_AXIS_2D = {"-1": "1", "-2": "0"}  # the axis a student who assumes 2-D arrays writes
_AUGMENTABLE = {"Add": "+", "Subtract": "-", "Multiply": "*", "Divide": "/"}


class RewriteVisitor:
    """Rewrites students make that agree with the reference on ordinary inputs and differ at
    an edge (NaN, a layout, a dtype, a sub-group, a range end, aliasing): each method
    ``rewrite_<name>(node)`` yields ``(operator, new node)`` for the nodes it applies to.
    Made with libcst (``collect`` walks the module), restricted to the solution regions like
    mutmut's operators."""

    def __init__(self, module: Any, numpy_name: str | None) -> None:
        self.module = module
        self.np = numpy_name  # how the file imported numpy ("np"), None when it did not
        self.in_kernel = False  # inside a @triton.jit function
        self.parents: Any = {}  # node -> parent (set by collect)

    # helpers ---------------------------------------------------------------------------
    def code(self, node: Any) -> str:
        return self.module.code_for_node(node)

    def expr(self, text: str) -> Any:
        import libcst as cst
        return cst.parse_expression(text)

    def atom(self, node: Any) -> str:
        """The node's code, parenthesised unless it is a name, attribute, call, subscript
        or number (so that it can stand as an operand)."""
        import libcst as cst
        text = self.code(node).strip()
        simple = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float)
        return text if isinstance(node, simple) else f"({text})"

    def dotted(self, func: Any) -> str:
        """``np.maximum`` for a call of ``np.maximum``; ``.max`` for a method call."""
        import libcst as cst
        if isinstance(func, cst.Name):
            return func.value
        if isinstance(func, cst.Attribute):
            if isinstance(func.value, cst.Name) and func.value.value in ("np", "numpy", "tl", "dist", "math"):
                return f"{func.value.value}.{func.attr.value}"
            return f".{func.attr.value}"
        return ""

    @staticmethod
    def positional(call: Any) -> list[Any]:
        return [a for a in call.args if a.keyword is None and not a.star]

    @staticmethod
    def keywords(call: Any) -> list[Any]:
        return [a for a in call.args if a.keyword is not None]

    # the rewrites ----------------------------------------------------------------------
    def rewrite_where_for_max(self, node: Any) -> Iterator[tuple[str, Any]]:
        """np.maximum(a, b) -> np.where(a > b, a, b) (NaN: maximum propagates it, the
        comparison picks b); np.minimum likewise, and Triton's tl.maximum / tl.minimum."""
        import libcst as cst
        if not isinstance(node, cst.Call) or len(node.args) != 2 or self.keywords(node):
            return
        name = self.dotted(node.func)
        module, _, fn = name.partition(".")
        if module in ("np", "numpy", "tl") and fn in ("maximum", "minimum") and \
                len(self.positional(node)) == 2:
            a, b = (self.atom(arg.value) for arg in node.args)
            op = ">" if fn == "maximum" else "<"
            yield "where_for_max", self.expr(f"{module}.where({a} {op} {b}, {a}, {b})")

    def rewrite_nan_ignoring(self, node: Any) -> Iterator[tuple[str, Any]]:
        """np.maximum -> np.fmax, np.minimum -> np.fmin, np.max / x.max(...) -> np.nanmax
        (and min): variants that ignore NaN where the reference propagates it."""
        import libcst as cst
        if not isinstance(node, cst.Call) or self.np is None:
            return
        name = self.dotted(node.func)
        swaps = {"maximum": "fmax", "minimum": "fmin", "max": "nanmax", "amax": "nanmax",
                 "min": "nanmin", "amin": "nanmin"}
        module, _, fn = name.partition(".")
        if module in ("np", "numpy") and swaps.get(fn):
            yield "nan_ignoring", node.with_changes(
                func=node.func.with_changes(attr=cst.Name(swaps[fn])))
        elif module == "" and fn in ("max", "min") and isinstance(node.func, cst.Attribute) \
                and not self.code(node.func.value).startswith(("self", "tl")):
            receiver = self.code(node.func.value).strip()
            rest = "".join(", " + self.code(a).strip().rstrip(",") for a in node.args)
            yield "nan_ignoring", self.expr(f"{self.np}.nan{fn}({receiver}{rest})")

    def rewrite_asarray_for_contiguous(self, node: Any) -> Iterator[tuple[str, Any]]:
        """np.ascontiguousarray(x) -> np.asarray(x): a strided array stays strided."""
        import libcst as cst
        if isinstance(node, cst.Call) and self.dotted(node.func) in (
                "np.ascontiguousarray", "numpy.ascontiguousarray"):
            yield "asarray_for_contiguous", node.with_changes(
                func=node.func.with_changes(attr=cst.Name("asarray")))

    def rewrite_view_for_copy(self, node: Any) -> Iterator[tuple[str, Any]]:
        """x.copy() -> x, np.copy(x) -> x, np.array(x, ...) -> np.asarray(x, ...) (without
        copy=): the caller's array (or the saved one) is shared where the reference copies."""
        import libcst as cst
        if not isinstance(node, cst.Call):
            return
        name = self.dotted(node.func)
        if name == ".copy" and not node.args:
            yield "view_for_copy", node.func.value
        elif name in ("np.copy", "numpy.copy") and len(node.args) == 1:
            yield "view_for_copy", node.args[0].value
        elif name in ("np.array", "numpy.array") and self.positional(node):
            args = [a for a in node.args if not (a.keyword and a.keyword.value == "copy")]
            if args:
                args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            yield "view_for_copy", node.with_changes(
                func=node.func.with_changes(attr=cst.Name("asarray")), args=args)

    def rewrite_reshape_memory_order(self, node: Any) -> Iterator[tuple[str, Any]]:
        """x.reshape(s) -> x.ravel(order="K").reshape(s): the elements read in memory order,
        which is the logical order only for a C-contiguous x."""
        import libcst as cst
        if isinstance(node, cst.Call) and self.dotted(node.func) == ".reshape" and node.args \
                and not self.code(node.func.value).strip().startswith("self") and self.np:
            receiver = self.atom(node.func.value)
            yield "reshape_memory_order", node.with_changes(
                func=node.func.with_changes(value=self.expr(f'{receiver}.ravel(order="K")')))

    def rewrite_dropped_keyword(self, node: Any) -> Iterator[tuple[str, Any]]:
        """f(..., k=v, ...) -> f(...): each keyword argument left out, one at a time (its
        default taken instead: keepdims, dtype, axis, out, group, mask, other...)."""
        import libcst as cst
        if not isinstance(node, cst.Call):
            return
        if self.dotted(node.func) in ("np.errstate", "numpy.errstate"):
            return  # only which warnings NumPy prints
        for i, arg in enumerate(node.args):
            if arg.keyword is None or arg.star or arg.keyword.value.isupper():
                continue  # an upper-case keyword is a Triton constexpr: dropping it cannot launch
            args = [*node.args[:i], *node.args[i + 1:]]
            if args and i == len(node.args) - 1:
                args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            yield f"dropped_keyword_{arg.keyword.value}", node.with_changes(args=args)

    def rewrite_mask_bound(self, node: Any, in_mask: bool) -> Iterator[tuple[str, Any]]:
        """In a comparison that builds a mask or a bound (a where's condition, a mask=, an
        index, an assignment to a *mask* name, anything with tl.arange): < <-> <= and
        > <-> >=, and the right-hand bound one less (n -> n - 1)."""
        import libcst as cst
        if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
            return
        target = node.comparisons[0]
        kind = type(target.operator).__name__
        if kind not in _COMPARE_FLIP or not (in_mask or "arange" in self.code(node)):
            return
        flipped = getattr(cst, _COMPARE_FLIP[kind])(
            whitespace_before=target.operator.whitespace_before,
            whitespace_after=target.operator.whitespace_after)
        yield "mask_bound", node.with_changes(comparisons=[target.with_changes(operator=flipped)])
        bound = self.atom(target.comparator)
        if kind.startswith("Less"):
            yield "mask_bound_minus_one", node.with_changes(
                comparisons=[target.with_changes(comparator=self.expr(f"{bound} - 1"))])

    def rewrite_range_end(self, node: Any) -> Iterator[tuple[str, Any]]:
        """range(a, b) -> range(a, b - 1) and range(a + 1, b); x[a:b] -> x[a:b - 1] and
        x[a + 1:b] (the first or last index of a range dropped)."""
        import libcst as cst
        if isinstance(node, cst.Call) and self.dotted(node.func) == "range" and \
                1 <= len(node.args) <= 2 and not self.keywords(node):
            stop = node.args[-1]
            yield "range_end", node.with_changes(args=[
                *node.args[:-1], stop.with_changes(value=self.expr(f"{self.atom(stop.value)} - 1"))])
            if len(node.args) == 2:
                start = node.args[0]
                yield "range_start", node.with_changes(args=[
                    start.with_changes(value=self.expr(f"{self.atom(start.value)} + 1")), stop])
        elif isinstance(node, cst.Slice) and node.step is None:
            if node.upper is not None and not self.code(node.upper).strip().startswith("-"):
                yield "range_end", node.with_changes(upper=self.expr(f"{self.atom(node.upper)} - 1"))
            if node.lower is not None:
                yield "range_start", node.with_changes(lower=self.expr(f"{self.atom(node.lower)} + 1"))

    def rewrite_global_rank(self, node: Any) -> Iterator[tuple[str, Any]]:
        """dist.get_rank(group) -> dist.get_rank() (the global rank for the group's),
        get_world_size likewise, get_process_group_ranks(group)[i] -> i."""
        import libcst as cst
        if isinstance(node, cst.Call) and node.args and \
                self.dotted(node.func).rpartition(".")[2] in ("get_rank", "get_world_size"):
            yield "global_rank", node.with_changes(args=[])
        elif isinstance(node, cst.Subscript) and isinstance(node.value, cst.Call) and \
                self.dotted(node.value.func).endswith("get_process_group_ranks") and \
                len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
            yield "global_rank", node.slice[0].slice.value

    def rewrite_dtype(self, node: Any) -> Iterator[tuple[str, Any]]:
        """dtype=<d> -> dtype=np.float32 / np.float64; x.astype(d) -> x; t.to(tl.float32) -> t
        (the dtype of an input, or a float64 accumulation, taken for granted)."""
        import libcst as cst
        if isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value == "dtype" \
                and self.np:
            current = self.code(node.value).strip()
            for fixed in ("float32", "float64"):
                if not current.endswith(fixed):
                    yield f"dtype_{fixed}", node.with_changes(value=self.expr(f"{self.np}.{fixed}"))
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.args:
            name = self.dotted(node.func)
            if name == ".astype" or (name == ".to" and self.code(node.args[0]).strip().startswith("tl.")):
                yield "dropped_cast", node.func.value
        elif isinstance(node, cst.Call) and self.dotted(node.func) in ("float", "int", "bool") and \
                len(node.args) == 1 and not self.keywords(node) and not self.in_kernel and \
                not isinstance(node.args[0].value, cst.SimpleString):
            yield "dropped_cast", node.args[0].value  # a NumPy scalar (or 0-d array) returned

    def rewrite_unstable_exp(self, node: Any) -> Iterator[tuple[str, Any]]:
        """np.exp(x - m) -> np.exp(x) where m is a max or a named shift (overflow at large
        logits; also tl.exp, tl.exp2, np.exp2)."""
        import libcst as cst
        if not (isinstance(node, cst.Call) and len(node.args) == 1 and
                self.dotted(node.func) in ("np.exp", "numpy.exp", "np.exp2", "tl.exp", "tl.exp2")):
            return
        value = node.args[0].value
        if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Subtract):
            shift = self.code(value.right)
            if "max" in shift or "shift" in shift or "lse" in shift or \
                    isinstance(value.right, (cst.Name, cst.Attribute)):
                yield "unstable_exp", node.with_changes(args=[node.args[0].with_changes(value=value.left)])

    def rewrite_two_d_axes(self, node: Any) -> Iterator[tuple[str, Any]]:
        """np.swapaxes(x, -1, -2) -> x.T (every axis reversed beyond 2-D); axis=-1 -> axis=1
        and axis=-2 -> axis=0 (the axis of a 2-D array)."""
        import libcst as cst
        if isinstance(node, cst.Call):
            name = self.dotted(node.func)
            values = [self.code(a.value).strip() for a in node.args]
            if name in ("np.swapaxes", "numpy.swapaxes") and sorted(values[1:]) == ["-1", "-2"]:
                yield "two_d_axes", self.expr(f"{self.atom(node.args[0].value)}.T")
            elif name == ".swapaxes" and sorted(values) == ["-1", "-2"]:
                yield "two_d_axes", self.expr(f"{self.atom(node.func.value)}.T")
        elif isinstance(node, cst.Arg) and node.keyword is not None and \
                node.keyword.value in ("axis", "dim", "axes"):
            value = self.code(node.value).strip()
            if value in _AXIS_2D:
                yield "two_d_axes", node.with_changes(value=self.expr(_AXIS_2D[value]))

    def rewrite_inplace(self, node: Any) -> Iterator[tuple[str, Any]]:
        """x = x + y -> x += y (writes into the array x names, which a caller may hold) and
        x += y -> x = x + y (a new array where the reference updates one in place)."""
        import libcst as cst
        if self.in_kernel or isinstance(getattr(node, "value", None), (cst.Integer, cst.Float)):
            return  # a Triton value is immutable, a number too: += only rebinds the name
        if isinstance(node, cst.Assign) and len(node.targets) == 1 and \
                isinstance(node.value, cst.BinaryOperation) and \
                type(node.value.operator).__name__ in _AUGMENTABLE and \
                self.code(node.targets[0].target).strip() == self.code(node.value.left).strip():
            operator = getattr(cst, type(node.value.operator).__name__ + "Assign")()
            yield "inplace", cst.AugAssign(target=node.targets[0].target, operator=operator,
                                           value=node.value.right)
        elif isinstance(node, cst.AugAssign) and type(node.operator).__name__.removesuffix(
                "Assign") in _AUGMENTABLE:
            target = self.code(node.target).strip()
            symbol = _AUGMENTABLE[type(node.operator).__name__.removesuffix("Assign")]
            value = self.atom(node.value)
            yield "out_of_place", cst.Assign(
                targets=[cst.AssignTarget(node.target)],
                value=self.expr(f"{target} {symbol} {value}"))

    def rewrite_truthiness_for_none(self, node: Any) -> Iterator[tuple[str, Any]]:
        """x is None -> not x, x is not None -> x (in a condition: 0, an empty container or
        an array is not None either)."""
        import libcst as cst
        parent = self.parents.get(node)
        if isinstance(node, cst.Comparison) and isinstance(parent, (cst.If, cst.While, cst.IfExp)) \
                and parent.test is node and len(node.comparisons) == 1 and \
                self.code(node.comparisons[0].comparator).strip() == "None":
            operator = type(node.comparisons[0].operator).__name__
            left = self.atom(node.left)
            if operator == "Is":
                yield "truthiness_for_none", self.expr(f"not {left}")
            elif operator == "IsNot":
                yield "truthiness_for_none", self.expr(left)

    def rewrite_equality_for_identity(self, node: Any) -> Iterator[tuple[str, Any]]:
        """a is b -> a == b, a is not b -> a != b (an array or a Tensor compares elementwise;
        two equal objects need not be the same one)."""
        import libcst as cst
        if isinstance(node, cst.ComparisonTarget) and self.code(node.comparator).strip() != "None":
            swap = {"Is": cst.Equal, "IsNot": cst.NotEqual}.get(type(node.operator).__name__)
            if swap is not None:  # (x == None is no rewrite: the truthiness of x is)
                yield "equality_for_identity", node.with_changes(operator=swap())

    def rewrite_iterate_original(self, node: Any) -> Iterator[tuple[str, Any]]:
        """for h in list(hooks) -> for h in hooks (and dict(d), tuple(t)): the loop runs over
        the container while the loop's body (a hook that removes itself) changes it."""
        import libcst as cst
        parent = self.parents.get(node)
        if isinstance(node, cst.Call) and isinstance(parent, cst.For) and parent.iter is node and \
                self.dotted(node.func) in ("list", "tuple", "dict", "sorted") and \
                len(node.args) == 1 and not node.args[0].keyword:
            yield "iterate_original", node.args[0].value

    def rewrite_dropped_default(self, node: Any) -> Iterator[tuple[str, Any]]:
        """getattr(o, "n", d) -> o.n, m.get(k, d) -> m[k], m.setdefault(k, v) -> m.get(k, v)
        (the object without the attribute, the missing key, the default never stored)."""
        import libcst as cst
        if not isinstance(node, cst.Call):
            return
        name, args = self.dotted(node.func), node.args
        if name == "getattr" and len(args) == 3 and isinstance(args[1].value, cst.SimpleString):
            attribute = args[1].value.evaluated_value
            if isinstance(attribute, str) and attribute.isidentifier():
                yield "dropped_default", self.expr(f"{self.atom(args[0].value)}.{attribute}")
        elif name == ".get" and 1 <= len(args) <= 2 and not self.keywords(node):
            key = self.code(args[0].value).strip()
            yield "dropped_default", self.expr(f"{self.atom(node.func.value)}[{key}]")
        elif name == ".setdefault" and len(args) == 2:
            yield "dropped_default", node.with_changes(
                func=node.func.with_changes(attr=cst.Name("get")))

    def rewrite_dropped_guard(self, node: Any) -> Iterator[tuple[str, Any]]:
        """max(1, n) -> n, min(n, cap) -> n with a constant bound (the division by zero or
        the range the guard kept out)."""
        import libcst as cst
        if isinstance(node, cst.Call) and self.dotted(node.func) in ("max", "min") and \
                len(node.args) == 2 and not self.keywords(node):
            constants = [isinstance(a.value, (cst.Integer, cst.Float)) for a in node.args]
            if constants.count(True) == 1:
                yield "dropped_guard", node.args[constants.index(False)].value

    def collect(self, region: set[int]) -> list[tuple[Any, Any, str, Any, int]]:
        """(original node, new node, operator, top-level function, line) for every rewrite
        of a node that lies on the region's lines, in source order."""
        import libcst as cst
        from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

        wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
        resolved = wrapper.resolve_many([PositionProvider, ParentNodeProvider])
        positions, parents = resolved[PositionProvider], resolved[ParentNodeProvider]
        self.parents = parents
        plain = [getattr(self, n) for n in dir(self)
                 if n.startswith("rewrite_") and n != "rewrite_mask_bound"]

        def in_mask(node: Any) -> bool:
            parent = parents.get(node)
            while parent is not None and not isinstance(parent, (cst.BaseStatement, cst.BaseSmallStatement)):
                if isinstance(parent, cst.SubscriptElement):
                    return True
                if isinstance(parent, cst.Arg):
                    if parent.keyword is not None and parent.keyword.value == "mask":
                        return True
                    call = parents.get(parent)
                    if isinstance(call, cst.Call) and call.args and call.args[0] is parent and \
                            self.dotted(call.func).endswith("where"):
                        return True
                parent = parents.get(parent)
            if isinstance(parent, cst.Assign):
                names = self.code(parent.targets[0].target).lower()
                return any(w in names for w in ("mask", "valid", "keep", "ok"))
            return False

        found: list[tuple[Any, Any, str, Any, int]] = []

        def walk(node: Any, function: Any) -> None:
            if isinstance(node, cst.FunctionDef) and function is None:
                function = node
            self.in_kernel = function is not None and any(
                "jit" in self.code(d.decorator) for d in function.decorators)
            if node in positions:
                span = positions[node]
                if span.start.line in region and span.end.line in region:
                    for rewrite in plain:
                        for name, new in rewrite(node):
                            found.append((node, new, name, function, span.start.line))
                    if isinstance(node, cst.Comparison):
                        for name, new in self.rewrite_mask_bound(node, in_mask(node)):
                            found.append((node, new, name, function, span.start.line))
            for child in node.children:
                walk(child, function)

        walk(self.module, None)
        return found


def rewrite_mutants(text: str, rel: str, region: dict[int, str]) -> list[Mutant]:
    """The student-rewrite mutants of one file's solution regions (``region``: line -> task)."""
    import libcst as cst

    module = cst.parse_module(text)
    numpy_name = next((n for n, pattern in (("np", "import numpy as np"), ("numpy", "import numpy"))
                       if pattern in text), None)
    visitor = RewriteVisitor(module, numpy_name)
    source_lines = text.splitlines()
    seen: Counter[tuple[str, ...]] = Counter()
    found = []
    for original_node, new_node, operator, function, line in visitor.collect(set(region)):
        original = module.code_for_node(original_node)
        mutated = module.code_for_node(new_node)
        if original == mutated:
            continue
        where = (rel, function.name.value if function is not None else "",
                 source_lines[line - 1].strip(), operator, original, mutated)
        seen[where] += 1
        # the operator set is part of the hash: a rewrite never shares an id with mutmut's
        digest = hashlib.sha1("\0".join(("rewrites", *where, str(seen[where]))).encode()).hexdigest()[:10]

        def make(node: Any = original_node, new: Any = new_node) -> str:
            return module.deep_replace(node, new).code

        found.append(Mutant(
            id=f"{region[line]}-{digest}", task=region[line], file=rel, line=line,
            function=where[1], operator=operator, original=original, mutated=mutated,
            operators="rewrites", _source=text, _make=make))
    return found


def all_mutants(reference: Path = REFERENCE, tasks: set[str] | None = None,
                operators: Iterable[str] = ("mutmut",)) -> list[Mutant]:
    """Every mutant of every solution region of ``reference`` (of ``tasks`` when given), of
    the operator sets ``operators``."""
    titles = rubric_titles()
    found = []
    for path in sorted(reference.rglob("*.py")):
        text = path.read_text()
        if "# BEGIN SOLUTION" in text:
            found.extend(file_mutants(text, str(path.relative_to(reference)), titles, tasks,
                                      operators))
    return found


def sample(mutants: list[Mutant], per_task: int, seed: int,
           sizes: dict[str, int] | None = None) -> list[Mutant]:
    """At most ``per_task`` mutants of each task (all when 0; ``sizes[task]`` instead where
    given): those whose hash with the seed is smallest. A mutant's place depends only on its
    id and the seed, so adding or removing other mutants changes the sample by at most
    those, and a larger sample holds the smaller one."""
    def rank(m: Mutant) -> str:
        return hashlib.sha256(f"{seed}:{m.id}".encode()).hexdigest()

    by_task: dict[str, list[Mutant]] = {}
    for m in mutants:
        by_task.setdefault(m.task, []).append(m)
    chosen = []
    for task, group in by_task.items():
        ranked = sorted(group, key=rank)
        size = (sizes or {}).get(task, per_task)
        chosen.extend(ranked[:size] if size else ranked)
    order = {id(m): i for i, m in enumerate(mutants)}
    return sorted(chosen, key=lambda m: order[id(m)])


# ----------------------------------------------------------------------------- versions

def _hash_files(paths: Iterable[Path], base: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(str(path.relative_to(base)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def grader_version(assignment: str, graders: Path = ROOT / "graders") -> str:
    """A hash of what a grading of ``assignment`` runs: the grader's files (not the other
    assignments' suites nor the tools that never grade), torch's and Hypothesis's versions."""
    import hypothesis
    import numpy
    import torch

    def counts(path: Path) -> bool:
        parts = path.relative_to(graders).parts
        if "__pycache__" in parts or parts[0] in NOT_GRADING or path.suffix == ".pyc":
            return False
        if parts[0] == "suites" and parts[1].startswith("hw"):
            return parts[1][2:].split("_", 1)[0] == assignment
        return path.is_file()

    files = _hash_files((p for p in graders.rglob("*") if p.is_file() and counts(p)), graders)
    versions = f"torch {torch.__version__} hypothesis {hypothesis.__version__} numpy {numpy.__version__}"
    return hashlib.sha256(f"{files} {versions}".encode()).hexdigest()[:16]


def reference_version(reference: Path = REFERENCE) -> str:
    files = (p for p in reference.rglob("*.py") if "__pycache__" not in p.parts)
    return _hash_files(files, reference)[:16]


def _signature() -> tuple[tuple[str, int, int], ...]:
    """Names, sizes and modification times of the grader's and the reference's files: a
    cheap way to notice an edit during a run."""
    files = [*(ROOT / "graders").rglob("*.py"), *(ROOT / "graders").rglob("*.toml"),
             *REFERENCE.rglob("*.py")]
    return tuple(sorted((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files))


# ----------------------------------------------------------------------------- grading

@dataclass
class Job:
    key: str
    task: str
    mutant: Mutant | None  # None: the unmutated reference (the task's baseline)


def _settings(args: argparse.Namespace) -> str:
    return f"seed={args.grader_seed} profile=default shrink=no"


def _key(task: str, diff: str, versions: dict[str, str], settings: str) -> str:
    text = "\0".join((task, versions[task.split(".")[0]], versions["reference"], settings, diff))
    return hashlib.sha256(text.encode()).hexdigest()


def _summarise(out: Path, task: str, code: int, log: str) -> dict[str, Any]:
    """The outcome of one grading from its score.json."""
    try:
        score = json.loads((out / "score.json").read_text())
        entry = next(t for t in score["tasks"] if t["id"] == task)
    except (OSError, ValueError, StopIteration, KeyError, TypeError):
        return {"outcome": "crashed", "detail": f"exit {code}, no score for {task}: {log[-400:]}"}
    statuses = Counter(test["status"] for test in entry["tests"])
    result: dict[str, Any] = {"score": entry["score"], "max_score": entry["max_score"],
                              "statuses": dict(statuses)}
    if code != 0 or score.get("error"):
        result.update(outcome="crashed", detail=f"exit {code}: {score.get('error') or log[-400:]}")
    elif entry["score"] < entry["max_score"]:
        first = next(t for t in entry["tests"] if t["status"] != "passed")
        result.update(outcome="killed",
                      detail=f"{first['name']} {first['status']}: {(first.get('message') or '')[:300]}")
    else:
        result.update(outcome="survived", detail="")
    return result


def _child(submission: Path, out: Path, task: str, grader_seed: int) -> None:
    """In the forked child: grade, then leave without running the parent's clean-ups."""
    import graders.cli

    code = 99
    try:
        log = open(out / "grader.log", "w")  # closed by os._exit
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        sys.stdout = sys.stderr = log
        code = graders.cli.main([str(submission), "--tasks", task, "--no-shrink",
                                 "--seed", str(grader_seed), "--out", str(out)])
    except BaseException:  # noqa: BLE001 - reported through the log and the exit code
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        os._exit(code)


class Runner:
    """Grades jobs in forked children, ``jobs`` at a time, with a wall-clock limit each."""

    def __init__(self, jobs: int, timeout: float, grader_seed: int) -> None:
        import torch  # noqa: F401 - imported once, before forking

        import graders.cli  # noqa: F401
        self.jobs, self.timeout, self.grader_seed = max(1, jobs), timeout, grader_seed
        self.cpu_s = 0.0

    def run(self, jobs: list[Job], done: Callable[[Job, dict[str, Any]], None],
            unchanged: Callable[[], bool] = lambda: True) -> None:
        """Grade ``jobs``; ``done`` gets each result. Stops starting new gradings when
        ``unchanged()`` turns false (the grader was edited: results would be cached under
        the wrong version)."""
        pending = list(jobs)
        running: dict[int, tuple[Job, Path, float, bool]] = {}
        while pending or running:
            if pending and not unchanged():
                print(f"the graders or the reference changed during the run: {len(pending)} "
                      "gradings not started; run again", file=sys.stderr, flush=True)
                pending.clear()
            while pending and len(running) < self.jobs:
                job = pending.pop(0)
                scratch = Path(tempfile.mkdtemp(prefix="tinytrain-mutant-"))
                submission, out = scratch / "submission", scratch / "out"
                out.mkdir()
                if job.mutant is None:
                    shutil.copytree(REFERENCE, submission / "tinytrain",
                                    ignore=shutil.ignore_patterns("__pycache__"))
                else:
                    job.mutant.apply(submission)
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    _child(submission, out, job.task, self.grader_seed)
                running[pid] = (job, scratch, time.monotonic(), False)
            time.sleep(0.05)
            for pid, (job, scratch, started, stopped) in list(running.items()):
                finished, status, usage = os.wait4(pid, os.WNOHANG)
                elapsed = time.monotonic() - started
                if not finished:
                    if elapsed > self.timeout and not stopped:
                        os.kill(pid, signal.SIGTERM)  # the grader stops its worker, writes a score
                        running[pid] = (job, scratch, started, True)
                    elif stopped and elapsed > self.timeout + 30:
                        os.kill(pid, signal.SIGKILL)
                    continue
                del running[pid]
                cpu = usage.ru_utime + usage.ru_stime
                self.cpu_s += cpu
                out = scratch / "out"
                log_path = out / "grader.log"
                log = log_path.read_text(errors="replace") if log_path.exists() else ""
                result = _summarise(out, job.task, os.waitstatus_to_exitcode(status), log)
                if stopped:
                    result.update(outcome="timeout", detail=f"stopped after {self.timeout:.0f} s")
                result.update(wall_s=round(elapsed, 1), cpu_s=round(cpu, 1))
                shutil.rmtree(scratch, ignore_errors=True)
                done(job, result)


# ----------------------------------------------------------------------------- equivalents, report

EQUIVALENT_KINDS = ("equivalent", "ungraded")


def load_equivalents(path: Path = EQUIVALENTS) -> dict[str, dict[str, str]]:
    """{mutant id: entry}: each entry names the file, its kind ("equivalent": no submission
    can tell it from the reference; "ungraded": it differs only in what the graders leave
    alone on purpose, such as the letter case of an error message) and says why."""
    if not path.exists():
        return {}
    data = tomllib.loads(path.read_text())
    entries = data.get("equivalent", {})
    for mutant_id, entry in entries.items():
        if not isinstance(entry, dict) or not str(entry.get("why", "")).strip() or "file" not in entry:
            raise ValueError(f"{path}: equivalent {mutant_id!r} needs a file and a why")
        entry.setdefault("kind", "equivalent")
        if entry["kind"] not in EQUIVALENT_KINDS:
            raise ValueError(f"{path}: equivalent {mutant_id!r}: kind is one of {EQUIVALENT_KINDS}")
    return entries


def task_table(records: list[dict[str, Any]], totals: Counter[str],
               equivalents: dict[str, dict[str, str]], tasks: list[str]) -> list[dict[str, Any]]:
    """Per task: mutants in its regions, graded, killed (by kind), survivors, equivalents,
    and the mutation score before and after the documented equivalents."""
    rows = []
    for task in tasks:
        mine = [r for r in records if r["task"] == task and r["outcome"] != "uncompilable"]
        counts = Counter(r["outcome"] for r in mine)
        killed = sum(counts[o] for o in KILLED)
        equivalent = sum(1 for r in mine if r["outcome"] == "survived" and r["id"] in equivalents)
        graded = len(mine)
        counted = graded - equivalent
        rows.append({
            "task": task, "mutants": totals[task], "graded": graded,
            "killed": counts["killed"], "timeout": counts["timeout"], "crashed": counts["crashed"],
            "survived": counts["survived"] - equivalent, "equivalent": equivalent,
            "uncompilable": sum(1 for r in records if r["task"] == task
                                and r["outcome"] == "uncompilable"),
            "score": killed / graded if graded else None,
            "score_after_equivalents": killed / counted if counted else None,
        })
    return rows


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def render_report(meta: dict[str, Any], rows: list[dict[str, Any]], records: list[dict[str, Any]],
                  equivalents: dict[str, dict[str, str]]) -> str:
    sets = meta.get("operators", ["mutmut"])
    described = " and ".join(f"mutmut {meta['mutmut']}'s operators" if o == "mutmut"
                             else "the student rewrites (libcst)" for o in sets)
    lines = [
        "# Mutation testing of the graders", "",
        f"Generated by `python scripts/mutation_test.py {meta['argv']}` on {meta['date']}.", "",
        f"- {described} over the solution regions of `reference/tinytrain`; "
        f"sample {meta['sample'] or 'all'} per task (seed {meta['seed']}); each mutant graded "
        f"on its own task (`--tasks T --no-shrink --seed {meta['grader_seed']}`).",
        f"- graded now: {meta['graded_now']} (cached: {meta['cached']}); wall {meta['wall_s']:.0f} s, "
        f"CPU {meta['cpu_s']:.0f} s; `uptime` before: {meta['uptime_before']}; "
        f"after: {meta['uptime_after']}.",
        "- killed: the task scored below its maximum; timeout / crashed: the grading ran past "
        "the limit or did not write the task's score (both count as killed).",
    ]
    for r in rows:
        if r is rows[0] or r.get("operators") != rows[rows.index(r) - 1].get("operators"):
            if sets != ["mutmut"]:
                lines += ["", f"### Operator set: {r.get('operators', 'mutmut')}"]
            lines += ["", "| task | mutants | graded | killed | timeout | crashed | survived "
                      "| equivalent | score | after equivalents |",
                      "|---|---|---|---|---|---|---|---|---|---|"]
        lines.append(f"| {r['task']} | {r['mutants']} | {r['graded']} | {r['killed']} | "
                     f"{r['timeout']} | {r['crashed']} | {r['survived']} | {r['equivalent']} | "
                     f"{_percent(r['score'])} | {_percent(r['score_after_equivalents'])} |")
    baseline_bad = [b for b in meta["baselines"] if b["outcome"] != "survived"]  # full marks
    if meta["baselines"] and not baseline_bad:
        lines += ["", f"The unmutated reference scored full marks on each of the "
                  f"{len(meta['baselines'])} tasks (graded first, as a baseline)."]
    if baseline_bad:
        lines += ["", "**The unmutated reference lost points** (every mutant of these tasks reads "
                  "as killed; fix that first):", ""]
        lines += [f"- {b['task']}: {b['outcome']}: {b.get('detail', '')}" for b in baseline_bad]
    survivors = [r for r in records if r["outcome"] == "survived" and r["id"] not in equivalents]
    lines += ["", f"## Surviving mutants ({len(survivors)})", ""]
    if not survivors:
        lines.append("None.")
    for r in survivors:
        lines += [f"### {r['id']} ({r['file']}:{r['line']}, {r['function']}, "
                  f"{r.get('operators', 'mutmut')} {r['operator']})", "",
                  "```diff", r["diff"].rstrip("\n"), "```", ""]
    listed = [r for r in records if r["id"] in equivalents]
    lines += ["", f"## Equivalent mutants in this sample ({len(listed)})", ""]
    for r in listed:
        note = "" if r["outcome"] == "survived" else f" **{r['outcome']}: no longer equivalent?**"
        entry = equivalents[r["id"]]
        lines += [f"- `{r['id']}` ({entry['kind']}; {r['file']}:{r['line']}, "
                  f"`{r['original'].strip()[:60]}` -> `{r['mutated'].strip()[:60]}`){note}: "
                  f"{entry['why']}"]
    if meta["stale_equivalents"]:
        lines += ["", "Listed as equivalent but no such mutant any more: "
                  + ", ".join(f"`{i}`" for i in meta["stale_equivalents"])]
    return "\n".join(lines) + "\n"


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return "unknown"


def _record(m: Mutant, result: dict[str, Any]) -> dict[str, Any]:
    return {"id": m.id, "task": m.task, "operators": m.operators, "file": m.file,
            "line": m.line, "function": m.function, "operator": m.operator,
            "original": m.original, "mutated": m.mutated,
            "diff": m.diff(), **result}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", help="task ids or assignments, comma-separated (default: all)")
    parser.add_argument("--sample", type=int, default=5, help="mutants per task (0: all; default 5)")
    parser.add_argument("--more", action="append", default=[], metavar="TASKS=N",
                        help="another sample size for some tasks or assignments: 1=20 "
                             "(repeatable)")
    parser.add_argument("--seed", type=int, default=0, help="which mutants the sample draws")
    parser.add_argument("--ids", help="grade exactly these mutant ids (comma-separated)")
    parser.add_argument("--jobs", type=int, default=1, help="gradings at once (default 1)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds a grading may take")
    parser.add_argument("--grader-seed", type=int, default=0, help="the grader's --seed")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="report folder")
    parser.add_argument("--cache", type=Path, help="results cache (default OUT/cache.jsonl)")
    parser.add_argument("--equivalents", type=Path, default=EQUIVALENTS)
    parser.add_argument("--no-baseline", action="store_true",
                        help="do not grade the unmutated reference on each task first")
    parser.add_argument("--reuse-killed", action="store_true",
                        help="take a mutant's 'killed' from any earlier grader version (sound "
                             "when checks were only added since)")
    parser.add_argument("--list", action="store_true", help="count the mutants, grade none")
    parser.add_argument("--operators", default="mutmut",
                        help="operator sets, comma-separated: mutmut (mutmut's operators, the "
                             "default), rewrites (the student rewrites); the report goes to "
                             "OUT/<sets> unless it is mutmut alone")
    args = parser.parse_args(argv)
    operators = [o.strip() for o in args.operators.split(",") if o.strip()]
    unknown = sorted(set(operators) - set(OPERATOR_SETS))
    if unknown or not operators:
        parser.error(f"unknown operator sets {unknown}: choose from {', '.join(OPERATOR_SETS)}")
    out = args.out if operators == ["mutmut"] or args.out != DEFAULT_OUT \
        else DEFAULT_OUT / "+".join(operators)
    started, uptime_before = time.monotonic(), _uptime()

    rubric = rubric_module.load()
    tasks = [t.id for t in rubric.select(args.tasks)]
    if args.ids:  # an id starts with its task
        named = {mutant_id.rsplit("-", 1)[0] for mutant_id in args.ids.split(",")}
        tasks = [t for t in tasks if t in named]
    everything = all_mutants(REFERENCE, set(tasks), OPERATOR_SETS if args.ids else operators)
    if args.ids:
        operators = [o for o in OPERATOR_SETS if any(m.operators == o and m.id in args.ids.split(",")
                                                     for m in everything)]
    totals = Counter((m.operators, m.task) for m in everything)
    if args.ids:
        wanted = set(args.ids.split(","))
        chosen = [m for m in everything if m.id in wanted]
        if len(chosen) != len(wanted):
            missing = wanted - {m.id for m in chosen}
            print(f"unknown mutant ids: {', '.join(sorted(missing))}", file=sys.stderr)
            return 2
        tasks = [t for t in tasks if any(m.task == t for m in chosen)]
    else:
        sizes = {}
        for item in args.more:
            spec, _, size = item.partition("=")
            sizes.update({t.id: int(size) for t in rubric.select(spec.replace("+", ","))})
        chosen = []
        for name in operators:  # each set sampled on its own: one set's mutants never
            chosen.extend(sample([m for m in everything if m.operators == name],  # displace
                                 args.sample, args.seed, sizes))               # the other's
    if args.list:
        for name in operators:
            for task in tasks:
                print(f"{name} {task}: {totals[name, task]} mutants, "
                      f"{sum(m.task == task and m.operators == name for m in chosen)} sampled")
        print(f"total: {len(everything)} mutants, {len(chosen)} sampled")
        return 0

    equivalents = load_equivalents(args.equivalents)
    out.mkdir(parents=True, exist_ok=True)
    # one cache for every operator set: a key is the diff graded, whichever set made it
    cache_path = args.cache or args.out / "cache.jsonl"
    cache: dict[str, dict[str, Any]] = {}
    killed_by_id: dict[str, dict[str, Any]] = {}
    if cache_path.exists():
        for line in cache_path.read_text().splitlines():
            if line.strip():
                entry = json.loads(line)
                cache[entry["key"]] = entry
                if entry.get("outcome") in KILLED and entry.get("id"):
                    killed_by_id[entry["id"]] = entry
    versions = {a: grader_version(a) for a in {t.split(".")[0] for t in tasks}}
    versions["reference"] = reference_version()
    settings = _settings(args)

    jobs: list[Job] = []
    results: dict[str, dict[str, Any]] = {}
    records: dict[str, dict[str, Any]] = {}
    for task in ([] if args.no_baseline else tasks):
        jobs.append(Job(_key(task, "", versions, settings), task, None))
    for m in chosen:
        if not m.compiles():
            records[m.id] = _record(m, {"outcome": "uncompilable", "detail": "does not compile"})
            continue
        jobs.append(Job(_key(m.task, m.diff(), versions, settings), m.task, m))
    todo, cached = [], 0
    for job in jobs:
        hit = cache.get(job.key)
        if hit is None and args.reuse_killed and job.mutant is not None:
            hit = killed_by_id.get(job.mutant.id)
        if hit is not None:
            results[job.key] = hit
            cached += 1
        else:
            todo.append(job)
    print(f"{len(chosen)} mutants sampled of {len(everything)} in {len(tasks)} tasks; "
          f"{len(todo)} gradings to run, {cached} cached", flush=True)

    runner = Runner(args.jobs, args.timeout, args.grader_seed)
    count = [0]
    with cache_path.open("a") as cache_file:
        def done(job: Job, result: dict[str, Any]) -> None:
            count[0] += 1
            entry = {"key": job.key, "id": job.mutant.id if job.mutant else None,
                     "task": job.task, **result}
            results[job.key] = entry
            cache_file.write(json.dumps(entry) + "\n")
            cache_file.flush()
            name = job.mutant.id if job.mutant else f"{job.task} baseline"
            print(f"[{count[0]}/{len(todo)}] {name}: {result['outcome']} "
                  f"({result['wall_s']} s, CPU {result['cpu_s']} s)", flush=True)

        signature = _signature()

        def unchanged() -> bool:
            return _signature() == signature

        runner.run(todo, done, unchanged)

    if any(job.key not in results for job in jobs):
        print("no report written: some gradings did not run (their results are cached; "
              "run again to grade the rest)", flush=True)
        return 1
    baselines = []
    for job in jobs:
        result = results[job.key]
        if job.mutant is None:
            baselines.append({"task": job.task, **{k: result.get(k) for k in ("outcome", "detail")}})
        else:
            fields = {k: v for k, v in result.items() if k not in ("key", "id", "task")}
            records[job.mutant.id] = _record(job.mutant, fields)
    ordered = [records[m.id] for m in chosen]
    try:
        import importlib.metadata
        mutmut_version = importlib.metadata.version("mutmut")
    except importlib.metadata.PackageNotFoundError:
        mutmut_version = "?"
    enumerated = None
    if args.tasks is None and not args.ids:  # the equivalents name mutants of every set
        others = [o for o in OPERATOR_SETS if o not in operators]
        enumerated = {m.id for m in [*everything, *all_mutants(REFERENCE, None, others)]}
    meta = {
        "argv": " ".join(argv if argv is not None else sys.argv[1:]),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "mutmut": mutmut_version,
        "sample": (f"ids {args.ids}" if args.ids else
                   " ".join([str(args.sample), *(f"({m})" for m in args.more)])),
        "seed": args.seed,
        "grader_seed": args.grader_seed, "graded_now": len(todo), "cached": cached,
        "wall_s": time.monotonic() - started,
        "cpu_s": runner.cpu_s + resource.getrusage(resource.RUSAGE_SELF).ru_utime,
        "uptime_before": uptime_before, "uptime_after": _uptime(), "baselines": baselines,
        "versions": versions,
        "stale_equivalents": sorted(set(equivalents) - enumerated) if enumerated is not None else [],
    }
    meta["operators"] = operators
    rows = []
    for name in operators:
        mine = [r for r in ordered if r["operators"] == name]
        counts = Counter({task: totals[name, task] for task in tasks})
        rows.extend({"operators": name, **row} for row in task_table(mine, counts, equivalents, tasks))
    (out / "report.md").write_text(render_report(meta, rows, ordered, equivalents))
    (out / "mutants.json").write_text(json.dumps(
        {"meta": meta, "tasks": rows, "mutants": ordered}, indent=1) + "\n")
    for r in rows:
        print(f"{r['operators']:>8} {r['task']:>5}: {r['graded']:3d} graded, {r['survived']} "
              f"surviving, {r['equivalent']} equivalent: {_percent(r['score_after_equivalents'])}")
    print(f"wrote {out / 'report.md'} and {out / 'mutants.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
