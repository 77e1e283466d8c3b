"""Generated classes of submissions for the class-grading tests and benchmark.

A class is a folder with one entry per student, as an instructor gets it: folders, zips,
and a few broken ones. Its students are the reference, the template, known-wrong variants
(``tests/mutants``), a submission that hangs, one that crashes its worker, one that fills
its memory, and two near-copies of one another: student ``copy-a`` wrote several parts
its own way (the correct alternatives of ``tests/mutants``) and ``copy-b`` copied them,
adding comments and blank lines. Everyone else's code is the reference's, which the class
shares and the similarity check therefore ignores, so the two copies are the only pair with
code in common that nobody else has.

``ENGINES`` are task 1.2 engines for the known-source check (the grader's modules as
sources a student can copy): the probes' own engine pasted and renamed, and engines
written without it.
"""

from __future__ import annotations

import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ..mutants import Mutant, all_alternatives, all_mutants

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "reference" / "tinytrain"
TEMPLATE = ROOT / "student_template" / "tinytrain"

# where Function.apply records the graph once an input requires grad (task 1.1): every
# assignment goes through it, so these break every graded task
_APPLY = ("autograd/function.py", "    edges, meta = [], []\n")
HANG = "    while True:\n        pass\n"
CRASH = "    import os\n    os._exit(3)\n"
MEMORY = "    _hog = []\n    while True:\n        _hog.append(bytearray(2**26))\n"

COPIED = ("saved-names-by-dict", "copyslices-with-np-put", "scaler-float32-update",
          "named-members-by-id", "autocast-promote-as-a-set", "random-split-numpy")


_RUN_BACKWARD = '''def run_backward(
    roots: list[tuple[tuple[BackwardNode | None, int], np.ndarray]], retain_graph: bool
) -> None:
    """Propagate the root gradients through the graph, each node once, in an order where
    a node runs only after every node that sends it a gradient (a topological order).

    Gradients arriving at the same node from several paths (branches, a parameter used
    twice) are summed before the node runs. Without ``retain_graph`` each node frees its
    saved tensors after it runs.
    """
'''
_COUNT = '''

def _count_dependencies(roots: list[BackwardNode | None]) -> dict[BackwardNode, int]:
    """For each node reachable from ``roots``, the number of edges that point into it."""
'''
_ADD = '''

def _add_to_buffer(
    buffers: dict[BackwardNode, list[np.ndarray | None]],
    node: BackwardNode,
    output_nr: int,
    grad: np.ndarray,
) -> None:
    """Sum ``grad`` into the gradient waiting for ``node``'s output ``output_nr``."""
'''
_UNUSED = ('    raise NotImplementedError("task 1.2: Backward: topological order, accumulation, '
           'retain_graph")\n')  # the template's line: a part left as given

# the text of autograd/engine.py from ``def run_backward(`` on (the reference's three
# functions of task 1.2), per variant
ENGINES = {
    # graders/probes/_functions.py's run_backward and _buffer, the roots taken as given,
    # the leaf-accumulation swap dropped, every name changed
    "paste-probes-engine": _RUN_BACKWARD + '''    indegree: dict[Any, int] = {}
    visited: set[Any] = set()
    todo = [fn for (fn, _), _ in roots if fn is not None]
    while todo:
        fn = todo.pop()
        if fn in visited:
            continue
        visited.add(fn)
        for child, _ in fn.next_functions:
            if child is not None:
                indegree[child] = indegree.get(child, 0) + 1
                todo.append(child)
    pending: dict[Any, list[Any]] = {}
    for (fn, idx), g in roots:
        if fn is not None:
            _stash(pending, fn, idx, g)
    queue = [fn for fn in pending if indegree.get(fn, 0) == 0]
    while queue:
        fn = queue.pop()
        gs = pending.pop(fn)
        if fn._has_tensor_hooks():
            gs = fn._run_tensor_hooks(gs)
        if any(x is not None for x in gs):
            outs = fn._run_backward(gs)
        else:
            outs = (None,) * len(fn.next_functions)
        if not retain_graph:
            fn._release()
        for (child, idx), g in zip(fn.next_functions, outs, strict=False):
            if child is None:
                continue
            _stash(pending, child, idx, g)
            indegree[child] -= 1
            if indegree[child] == 0:
                queue.append(child)


def _stash(pending: dict[Any, list[Any]], fn: Any, idx: int, g: Any) -> None:
    slot = pending.setdefault(fn, [None] * len(fn._output_meta))
    if g is not None:
        slot[idx] = g if slot[idx] is None else slot[idx] + g
''' + _COUNT + _UNUSED + _ADD + _UNUSED,
    # written without the probes: Kahn's algorithm over a deque, the template's helpers
    "own-engine-kahn": _RUN_BACKWARD + '''    from collections import deque

    waiting = _count_dependencies([fn for (fn, _), _ in roots])
    incoming: dict[BackwardNode, list[np.ndarray | None]] = {}
    for (fn, slot), g in roots:
        if fn is not None:
            _add_to_buffer(incoming, fn, slot, g)
    queue = deque(fn for fn in incoming if waiting.get(fn, 0) == 0)
    while queue:
        fn = queue.popleft()
        grads = incoming.pop(fn, None) or [None] * len(fn._output_meta)
        if fn._has_tensor_hooks():
            grads = fn._run_tensor_hooks(grads)
        if all(g is None for g in grads):
            outgoing = [None] * len(fn.next_functions)
        else:
            outgoing = fn._run_backward(grads)
        if not retain_graph:
            fn._release()
        for (nxt, slot), g in zip(fn.next_functions, outgoing):
            if nxt is None:
                continue
            if g is not None:
                _add_to_buffer(incoming, nxt, slot, g)
            waiting[nxt] -= 1
            if not waiting[nxt]:
                queue.append(nxt)
''' + _COUNT + '''    from collections import Counter

    indegree: Counter = Counter()
    frontier = list({r: None for r in roots if r is not None})  # a root may repeat
    visited = set(frontier)
    while frontier:
        fn = frontier.pop()
        for nxt, _ in fn.next_functions:
            if nxt is None:
                continue
            indegree[nxt] += 1
            if nxt not in visited:
                visited.add(nxt)
                frontier.append(nxt)
    return dict(indegree)
''' + _ADD + '''    slots = buffers.setdefault(node, [None] * len(node._output_meta))
    slots[output_nr] = grad if slots[output_nr] is None else slots[output_nr] + grad
''',
    # written without the probes: the reverse of a depth-first post-order
    "own-engine-dfs": _RUN_BACKWARD + '''    order: list[BackwardNode] = []
    done: set[BackwardNode] = set()
    for (start, _), _ in roots:
        if start is None or start in done:
            continue
        done.add(start)
        path = [(start, iter(start.next_functions))]
        while path:
            fn, edges = path[-1]
            for nxt, _ in edges:
                if nxt is not None and nxt not in done:
                    done.add(nxt)
                    path.append((nxt, iter(nxt.next_functions)))
                    break
            else:
                order.append(path.pop()[0])
    sums: dict[BackwardNode, list[np.ndarray | None]] = {
        fn: [None] * len(fn._output_meta) for fn in order}
    for (fn, slot), g in roots:
        if fn is not None:
            _add_to_buffer(sums, fn, slot, g)
    for fn in reversed(order):
        grads = sums.pop(fn)
        if fn._has_tensor_hooks():
            grads = fn._run_tensor_hooks(grads)
        if any(g is not None for g in grads):
            results = fn._run_backward(grads)
            for (nxt, slot), g in zip(fn.next_functions, results):
                if nxt is not None and g is not None:
                    _add_to_buffer(sums, nxt, slot, g)
        if not retain_graph:
            fn._release()
''' + _COUNT + _UNUSED + _ADD + '''    total = buffers[node][output_nr]
    buffers[node][output_nr] = grad if total is None else total + grad
''',
}


@dataclass(frozen=True)
class Student:
    name: str  # the entry's name in the class (a zip's without .zip)
    kind: str  # reference, template, mutant, hang, crash, memory, copy, engine, syntax,
    # import-hang, empty, broken
    task: str | None = None  # the task a mutant breaks
    zipped: bool = False


def _edit(package: Path, file: str, find: str, replace: str) -> None:
    path = package / file
    text = path.read_text()
    if text.count(find) != 1:
        raise ValueError(f"{file}: snippet found {text.count(find)} times")
    path.write_text(text.replace(find, replace))


def _copy_reference(folder: Path) -> Path:
    package = folder / "tinytrain"
    shutil.copytree(REFERENCE, package, ignore=shutil.ignore_patterns("__pycache__"))
    return package


def _alternatives() -> list[Mutant]:
    by_id = {a.id: a for a in all_alternatives()}
    return [by_id[i] for i in COPIED]


def make_student(folder: Path, student: Student) -> None:
    """Write one student's submission into ``folder`` (which must not exist)."""
    folder.mkdir(parents=True)
    if student.kind == "reference":
        _copy_reference(folder)
    elif student.kind == "template":
        shutil.copytree(TEMPLATE, folder / "tinytrain", ignore=shutil.ignore_patterns("__pycache__"))
    elif student.kind == "mutant":
        mutant = next(m for m in all_mutants() if m.id == student.name.removeprefix("m-"))
        mutant.apply(folder)
    elif student.kind in ("hang", "crash", "memory"):
        package = _copy_reference(folder)
        body = {"hang": HANG, "crash": CRASH, "memory": MEMORY}[student.kind]
        _edit(package, _APPLY[0], _APPLY[1], body + _APPLY[1])
    elif student.kind == "copy":
        package = _copy_reference(folder)
        for alt in _alternatives():
            replace = alt.replace
            if student.name == "copy-b":  # the copy: same code, its own comments and spacing
                indent = replace[: len(replace) - len(replace.lstrip())]
                replace = f"{indent}# worked this out at office hours\n\n{replace}\n"
            _edit(package, alt.file, alt.find, replace)
    elif student.kind == "engine":  # the name is a key of ENGINES
        path = _copy_reference(folder) / "autograd" / "engine.py"
        text = path.read_text()
        path.write_text(text[: text.index("def run_backward(")] + ENGINES[student.name])
    elif student.kind == "syntax":  # a file import tinytrain runs does not parse
        # (a homework file: the given ones, __init__.py among them, are put back)
        hook = _copy_reference(folder) / "ops" / "arithmetic.py"
        hook.write_text(hook.read_text() + "\ndef unfinished(:\n")
    elif student.kind == "import-hang":  # importing tinytrain never returns
        hook = _copy_reference(folder) / "ops" / "arithmetic.py"
        future = "from __future__ import annotations\n"
        hook.write_text(hook.read_text().replace(future, future + "while True:\n    pass\n", 1))
    elif student.kind == "empty":
        (folder / "README.md").write_text("I could not get it to work.\n")
    else:
        raise ValueError(student.kind)


def zip_folder(folder: Path, target: Path) -> None:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, str(Path(folder.name) / path.relative_to(folder)))


def small_class() -> list[Student]:
    """Twelve entries for the project's tests (graded on task 1.1)."""
    return [
        Student("reference", "reference"),
        Student("template", "template"),
        Student("m-records-without-requires-grad", "mutant", "1.1"),
        Student("hang", "hang"),
        Student("crash", "crash"),
        Student("memory", "memory"),
        Student("copy-a", "copy"),
        Student("copy-b", "copy", zipped=True),
        Student("no-package", "empty"),
        Student("broken", "broken", zipped=True),
        Student("syntax-error", "syntax"),
        Student("import-hang", "import-hang"),
    ]


def full_class(size: int = 30) -> list[Student]:
    """``size`` students (at least 12): the small class's kinds, then one known-wrong
    variant per task in rubric order, as many as fit."""
    fixed = [s for s in small_class() if s.kind != "mutant"]
    seen, mutants = set(), []
    for mutant in all_mutants():
        if mutant.task not in seen:
            seen.add(mutant.task)
            mutants.append(Student(f"m-{mutant.id}", "mutant", mutant.task,
                                   zipped=len(mutants) % 4 == 1))
    room = size - len(fixed)
    if room < 1:
        raise ValueError(f"a full class has at least {len(fixed) + 1} students")
    return fixed + mutants[:room]


def build(folder: Path, students: list[Student]) -> Path:
    """Write the class into ``folder`` (created) and return it."""
    folder.mkdir(parents=True)
    for student in students:
        if student.kind == "broken":
            (folder / f"{student.name}.zip").write_bytes(b"PK\x03\x04 this is not a zip file")
            continue
        if student.zipped:
            staging = folder.parent / f".{folder.name}-staging" / student.name
            make_student(staging, student)
            zip_folder(staging, folder / f"{student.name}.zip")
            shutil.rmtree(staging.parent)
        else:
            make_student(folder / student.name, student)
    return folder
