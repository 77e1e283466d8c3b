"""The conformance matrix: what grading the reference exercises, per task (issue 19).

    python scripts/conformance.py                 # every task: rewrite the matrix
    python scripts/conformance.py --tasks 2.1,2.3  # only these tasks' entries

Each task is graded (``--no-sandbox``, in a fresh process of its own, so every
observation belongs to exactly that task) with two instruments around each probe call,
through ``InProcessClient``'s ``instrument`` hook (a sandboxed grading has none):
coverage.py in branch mode over ``reference/tinytrain`` and a call recorder (a profile
function) that notes every call the probes make into tinytrain's public API: which
parameters got a non-default value, and each array argument's dtype and layout
(contiguous, transposed, strided, offset). The results go to ``docs/conformance.json``
(the API itself comes from introspection of the reference, each callable with its torch
twin's signature) and ``docs/conformance.md`` is rendered from it; the exemptions with
their reasons are in ``scripts/conformance_exemptions.toml``, and
``tests/test_conformance.py`` checks the committed files against all three.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import pkgutil
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "reference"
PACKAGE = REFERENCE / "tinytrain"
JSON_PATH = ROOT / "docs" / "conformance.json"
DOC_PATH = ROOT / "docs" / "conformance.md"
EXEMPTIONS_PATH = ROOT / "scripts" / "conformance_exemptions.toml"
# operators and protocols a class's own dict may define that are API (the rest of its
# dunders are Python's machinery: repr, hash, len, ...)
DUNDERS = frozenset(f"__{n}__" for n in (
    "init call getitem setitem add radd iadd sub rsub isub mul rmul imul truediv rtruediv "
    "itruediv matmul rmatmul pow rpow neg abs eq ne lt le gt ge").split())
# where a tinytrain module's twin lives in torch, longest prefix first
TORCH_MODULES = (("tinytrain.data", "torch.utils.data"), ("tinytrain.cuda", None),
                 ("tinytrain.models", None), ("tinytrain", "torch"))
LAYOUTS = ("contiguous", "transposed", "strided", "offset")


# ----- the API: introspection of the reference ------------------------------------------
def solution_blocks() -> list[Any]:
    """Every solution block of the reference (``graders.authoring.template``)."""
    sys.path.insert(0, str(ROOT))
    from graders import rubric
    from graders.authoring.template import find_blocks

    titles = {t.id: t.title for t in rubric.load().tasks}
    blocks = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(PACKAGE))
        blocks.extend(find_blocks(path.read_text(), rel, titles))
    return blocks


def _functions(obj: Any) -> list[Any]:
    """The plain functions behind ``obj`` (a function, a static or class method, a
    Triton kernel), outermost first."""
    obj = getattr(obj, "__func__", obj)
    obj = getattr(obj, "fn", obj)  # triton.JITFunction
    out = []
    while inspect.isfunction(obj) and obj not in out:
        out.append(obj)
        obj = getattr(obj, "__wrapped__", None)
    return out


def _parameters(fn: Any) -> list[dict[str, Any]]:
    params = []
    for p in inspect.signature(fn).parameters.values():
        if p.name in ("self", "cls", "ctx") and not params:
            continue
        variadic = p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        params.append({
            "name": ("*" if p.kind == p.VAR_POSITIONAL else "**" if variadic else "") + p.name,
            "default": None if p.default is p.empty else repr(p.default)[:60],
            "required": p.default is p.empty and not variadic,
            # an array argument by its annotation (``Tensor | None``, not ``Callable[[Tensor], ...]``)
            "tensor": bool({x.strip(" '\"") for x in str(p.annotation).split("|")}
                           & {"Tensor", "np.ndarray", "ndarray"}),
        })
    return params


def _torch_twin(key: str) -> str | None:
    """``torch``'s callable of the same name and its signature, where both exist."""
    try:
        import torch  # noqa: F401 - imported for getattr below
    except ImportError:
        return None
    prefix, twin = next((p, t) for p, t in TORCH_MODULES if key == p or key.startswith(p + "."))
    if twin is None:
        return None
    path = twin + key[len(prefix):]
    obj: Any = sys.modules["torch"]
    for part in path.split(".")[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    try:
        return f"{path}{inspect.signature(obj)}"
    except (TypeError, ValueError):  # a builtin: its docstring's first line has it
        first = (getattr(obj, "__doc__", None) or "").strip().split("\n", 1)[0]
        name = path.rsplit(".", 1)[1]
        if first.startswith(name + "("):
            return f"{path}{first[len(name):]}"
        return f"{path}(...)"


def public_api(twins: bool = True) -> dict[str, dict[str, Any]]:
    """Every public function and class of tinytrain the rubric grades (defined in a file
    with a solution block), with its public methods, parameters and aliases; keyed by
    the shortest public name. Imports the reference: run it in a process of its own."""
    import importlib

    graded = {str(PACKAGE / b.path) for b in solution_blocks()}
    sys.path.insert(0, str(REFERENCE))
    import tinytrain

    names: dict[int, list[str]] = defaultdict(list)
    objects: dict[int, Any] = {}
    modules = [tinytrain]
    for info in pkgutil.walk_packages(tinytrain.__path__, "tinytrain."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            modules.append(importlib.import_module(info.name))
    for module in modules:
        exported = getattr(module, "__all__", None)
        for name in exported if exported is not None else vars(module):
            obj = getattr(module, name, None)
            if name.startswith("_") or inspect.ismodule(obj) or obj is None:
                continue
            fns = _functions(obj)
            if not (inspect.isclass(obj) or fns):
                continue
            home = getattr(obj, "__module__", "") or ""
            if not home.startswith("tinytrain") or (exported is None and home != module.__name__):
                continue
            source = inspect.getsourcefile(obj if inspect.isclass(obj) else fns[-1])
            if source not in graded:
                continue
            names[id(obj)].append(f"{module.__name__}.{name}")
            objects[id(obj)] = obj
    members: list[tuple[str, str, Any, list[str]]] = []  # (name, kind, callable, aliases)
    for ident, obj in objects.items():
        aliases = sorted(set(names[ident]), key=lambda n: (n.count("."), len(n), n))
        key = aliases[0]
        if inspect.isclass(obj):
            members.append((key, "class", obj.__init__ if "__init__" in vars(obj) else None,
                            aliases[1:]))
            for name, member in sorted(vars(obj).items()):
                if name == "__init__" or not (name in DUNDERS or not name.startswith("_")):
                    continue
                if _functions(member):
                    members.append((f"{key}.{name}", "method", member, []))
        else:
            members.append((key, "function", obj, aliases[1:]))
    # one function under several names (``tt.add``, ``Tensor.add``, ``Tensor.__add__``) is
    # one callable: a call cannot tell which name it came by
    groups: dict[int, list[tuple[str, str, Any, list[str]]]] = defaultdict(list)
    for member in members:
        fns = _functions(member[2]) if member[2] is not None else []
        groups[id(fns[-1]) if fns else id(member)].append(member)
    order = {"function": 0, "class": 1, "method": 2}
    api: dict[str, dict[str, Any]] = {}
    for group in groups.values():
        group.sort(key=lambda m: (order[m[1]], m[0].count("."), len(m[0]), m[0]))
        name, kind, member, aliases = group[0]
        aliases = sorted({*aliases, *(a for m in group[1:] for a in (m[0], *m[3]))})
        fns = _functions(member) if member is not None else []
        entry: dict[str, Any] = {"kind": kind, "aliases": aliases}
        entry["parameters"] = _parameters(fns[-1]) if fns else []
        if fns:
            code = fns[-1].__code__
            if code.co_filename.startswith(str(PACKAGE) + os.sep):  # not a dataclass's
                where = Path(code.co_filename).relative_to(PACKAGE)
                entry["defined"] = f"{where}:{code.co_firstlineno}"
        if twins:
            entry["torch"] = _torch_twin(name)
        api[name] = entry
    return dict(sorted(api.items()))


# ----- the instruments --------------------------------------------------------------------
def layout(array: Any) -> list[str]:
    """The layout tags of a NumPy array (a tensor's storage): contiguous, transposed
    (a permutation of a dense layout), or strided (gaps or negative steps); plus offset
    when it starts past its base's first element."""
    if array.flags.c_contiguous:
        tags = ["contiguous"]
    else:
        order = sorted(range(array.ndim), key=lambda d: -array.strides[d])
        dense = min(array.strides, default=0) >= 0 and array.transpose(order).flags.c_contiguous
        tags = ["transposed" if dense else "strided"]
    import numpy as np

    root = array
    while isinstance(root.base, np.ndarray):
        root = root.base
    if root is not array and array.__array_interface__["data"][0] != root.__array_interface__["data"][0]:
        tags.append("offset")
    return tags


_REQUIRED = object()


class Recorder:
    """The call recorder: a profile function, active only inside probe calls, that notes
    each call of one of tinytrain's public callables (from a probe or from tinytrain
    itself: a value a model passes on to its layers is exercised by the test too)."""

    def __init__(self, api: dict[str, dict[str, Any]]) -> None:
        import numpy as np
        import tinytrain

        self.ndarray, self.tensor = np.ndarray, tinytrain.Tensor
        self.codes: dict[Any, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
        self.specs: dict[str, list[tuple[str, str, Any, bool]]] = {}
        for key, entry in api.items():
            fns = _functions(_resolve(key, entry["kind"]))
            if not fns:
                continue
            fn = fns[-1]
            cells = dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__ or ())))
            self.codes[fn.__code__].append((key, cells))
            defaults = {p.name: p.default for p in inspect.signature(fn).parameters.values()}
            self.specs[key] = [
                (p["name"], p["name"].lstrip("*"),
                 _REQUIRED if p["required"] or p["name"].startswith("*") else defaults.get(
                     p["name"], _REQUIRED), p["name"].startswith("*"))
                for p in entry["parameters"]]
        self.seen: dict[str, dict[str, Any]] = {}

    def _profile(self, frame: Any, event: str, arg: Any) -> None:
        if event != "call":
            return
        entries = self.codes.get(frame.f_code)
        if entries is None:
            return
        values = frame.f_locals
        if len(entries) > 1:  # one code object behind several names: their closures tell
            entries = [e for e in entries if all(values.get(n) is v for n, v in e[1].items())]
        for key, _ in entries[:1]:
            try:
                self._note(key, values)
            except Exception:  # noqa: BLE001 - the recorder never changes what grading sees
                pass

    def _note(self, key: str, values: dict[str, Any]) -> None:
        seen = self.seen.get(key)
        if seen is None:
            seen = self.seen[key] = {"called": True, "nondefault": set(), "arrays": {}}
        nondefault, arrays = seen["nondefault"], seen["arrays"]
        for name, local, default, variadic in self.specs[key]:
            value = values.get(local, _REQUIRED)
            if value is _REQUIRED:
                continue
            if variadic:
                if value:
                    nondefault.add(name)
                items = list(value.values()) if isinstance(value, dict) else value[:8]
            else:
                if default is not _REQUIRED and name not in nondefault and not _same(value, default):
                    nondefault.add(name)
                items = value[:8] if type(value) in (list, tuple) else (value,)
            for item in items:
                array = item.data if isinstance(item, self.tensor) else item
                if isinstance(array, self.ndarray):
                    arrays.setdefault(name, set()).add((str(array.dtype), *layout(array)))

    def result(self) -> dict[str, Any]:
        """What was seen, as JSON: per callable, the parameters given a non-default value
        and each array argument's layouts and dtypes."""
        out = {}
        for key, seen in sorted(self.seen.items()):
            arrays = {}
            for name, kinds in sorted(seen["arrays"].items()):
                arrays[name] = {"layouts": [t for t in LAYOUTS if any(t in k[1:] for k in kinds)],
                                "dtypes": sorted({k[0] for k in kinds})}
            out[key] = {"called": True, "nondefault": sorted(seen["nondefault"]), "arrays": arrays}
        return out

    @contextlib.contextmanager
    def __call__(self, probe: str) -> Any:
        threading.setprofile(self._profile)  # ranks as threads (assignment 7)
        sys.setprofile(self._profile)
        try:
            yield
        finally:
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]


def _same(value: Any, default: Any) -> bool:
    """Whether ``value`` is the parameter's default (no array comparison)."""
    if value is default:
        return True
    if type(value) is not type(default) or not isinstance(default, (int, float, str, tuple)):
        return False
    try:
        return bool(value == default)
    except Exception:  # noqa: BLE001 - a tuple holding arrays: not the default
        return False


def _resolve(key: str, kind: str) -> Any:
    import importlib

    parts = key.split(".")
    for cut in range(len(parts) - 1, 0, -1):  # the longest prefix that is a module
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
            break
        except ImportError:
            continue
    parts = parts[cut:]
    for part in parts[:-1]:
        obj = getattr(obj, part)
    if kind == "method":
        return inspect.getattr_static(obj, parts[-1])
    obj = getattr(obj, parts[-1])
    return obj.__init__ if kind == "class" and "__init__" in vars(obj) else obj


KERNEL_FILES = "<tinytrain kernel source>/"  # graders.probes._cuda_source._FILES


def _kernels_under_their_files() -> None:
    """The grader builds the kernels it launches from their source text, under file
    names of its own (``graders.probes._cuda_source``: ``<tinytrain kernel
    source>/KEY/tinytrain/cuda/x.py``, the file's text line for line), which coverage.py
    never traces; in this process its tracer takes them for the reference's files.
    (Coverage is patched, not the grader: the kernel machinery's seal would refuse.)"""
    from coverage.inorout import InOrOut

    trace = InOrOut.should_trace

    def should_trace(self: Any, filename: str, frame: Any = None) -> Any:
        _, found, rest = filename.partition("/tinytrain/")
        if filename.startswith(KERNEL_FILES) and found:
            return trace(self, str(PACKAGE / rest), None)
        return trace(self, filename, frame)

    InOrOut.should_trace = should_trace  # type: ignore[method-assign]


def grade_one(task_id: str) -> dict[str, Any]:
    """Grade the reference on one task, instrumented; its observations and coverage."""
    import coverage

    sys.path.insert(0, str(ROOT))
    from graders import rubric as rubric_module
    from graders.runner.run import run_suites

    api = _api_in_subprocess(twins=False)
    recorders: list[Recorder] = []
    cov = coverage.Coverage(branch=True, data_file=None, config_file=False,
                            include=[str(PACKAGE / "*")])

    @contextlib.contextmanager
    def instrument(probe: str) -> Any:
        if not recorders:  # the first probe call has imported the submission (as grading does)
            recorders.append(Recorder(api))
        cov.start()
        try:
            with recorders[0](probe):
                yield
        finally:
            cov.stop()

    _kernels_under_their_files()
    rubric = rubric_module.load()
    start = time.perf_counter()
    results = run_suites(REFERENCE, rubric, (rubric.task(task_id),), sandbox=False,
                         instrument=instrument)
    seconds = time.perf_counter() - start
    total = taken = 0
    missed = []
    for block in [b for b in solution_blocks() if b.task == task_id]:
        analysis = cov._analyze(str(PACKAGE / block.path))
        stats, missing = analysis.branch_stats(), analysis.missing_branch_arcs()
        for line in sorted(stats):
            if block.start + 1 < line <= block.end:
                total += stats[line][0]
                taken += stats[line][1]
                missed += [f"{block.path}:{line}->{'exit' if d < 0 else d}"
                           for d in sorted(missing.get(line, []))]
    return {
        "task": task_id,
        "tests": len(results),
        "passed": sum(r.status == "passed" for r in results),
        "failed": [f"{r.name}: {r.status}: {r.message[:300]}" for r in results
                   if r.status != "passed"],
        "seconds": round(seconds, 1),
        "branches": {"total": total, "taken": taken, "missed": missed},
        "calls": recorders[0].result() if recorders else {},
    }


def static_branches() -> dict[str, int]:
    """Per task, the branch exits of its solution blocks as coverage.py's parser counts
    them (no grading: the tests compare it with the committed totals, so a changed
    reference needs a fresh matrix)."""
    from coverage.config import DEFAULT_EXCLUDE
    from coverage.misc import join_regex
    from coverage.parser import PythonParser

    totals: dict[str, int] = defaultdict(int)
    counts: dict[str, dict[int, int]] = {}
    for block in solution_blocks():
        if block.path not in counts:
            parser = PythonParser(filename=str(PACKAGE / block.path),
                                  exclude=join_regex(DEFAULT_EXCLUDE))
            parser.parse_source()
            counts[block.path] = parser.exit_counts()
        totals[block.task] += sum(n for line, n in counts[block.path].items()
                                  if n > 1 and block.start + 1 < line <= block.end)
    return dict(totals)


# ----- the matrix: merging, exemptions, rendering -----------------------------------------
def build(api: dict[str, dict[str, Any]], tasks: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The matrix from the API and each task's raw observations."""
    matrix: dict[str, Any] = {}
    for key, entry in api.items():
        params = {}
        for param in entry["parameters"]:
            name = param["name"]
            row: dict[str, Any] = {"default": param["default"], "tasks": []}
            layouts: dict[str, list[str]] = {}
            dtypes: dict[str, list[str]] = {}
            for task_id, task in tasks.items():
                seen = task["calls"].get(key)
                if seen is None:
                    continue
                if name in seen["nondefault"] or (param["required"] and seen["called"]):
                    row["tasks"].append(task_id)
                arrays = seen["arrays"].get(name)
                for tag in arrays["layouts"] if arrays else ():
                    layouts.setdefault(tag, []).append(task_id)
                for dtype in arrays["dtypes"] if arrays else ():
                    dtypes.setdefault(dtype, []).append(task_id)
            if layouts or param["tensor"]:
                row["layouts"] = {t: layouts[t] for t in LAYOUTS if t in layouts}
                row["dtypes"] = dict(sorted(dtypes.items()))
            params[name] = row
        matrix[key] = {
            "kind": entry["kind"], "defined": entry.get("defined"), "aliases": entry["aliases"],
            "torch": entry.get("torch"),
            "called_by": [t for t, task in tasks.items() if key in task["calls"]],
            "parameters": params,
        }
    coverage = {t: {"tests": task["tests"], "passed": task["passed"], **task["branches"]}
                for t, task in tasks.items()}
    return {"generated_by": "python scripts/conformance.py", "api": matrix, "coverage": coverage}


def unbuild(matrix: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each task's observations back from a matrix (``build``'s inverse, enough to
    rebuild it), so ``--tasks`` grades only those tasks and keeps the others'."""
    tasks: dict[str, dict[str, Any]] = {}
    for task_id, cov in matrix["coverage"].items():
        calls: dict[str, Any] = {}
        for key, entry in matrix["api"].items():
            if task_id not in entry["called_by"]:
                continue
            arrays: dict[str, Any] = {}
            for name, row in entry["parameters"].items():
                layouts = [t for t, ids in row.get("layouts", {}).items() if task_id in ids]
                dtypes = [d for d, ids in row.get("dtypes", {}).items() if task_id in ids]
                if layouts or dtypes:
                    arrays[name] = {"layouts": layouts, "dtypes": dtypes}
            calls[key] = {"called": True, "arrays": arrays,
                          "nondefault": [n for n, r in entry["parameters"].items()
                                         if task_id in r["tasks"]]}
        tasks[task_id] = {"tests": cov["tests"], "passed": cov["passed"], "calls": calls,
                          "branches": {k: cov[k] for k in ("total", "taken", "missed")}}
    return tasks


def gaps(matrix: dict[str, Any]) -> dict[str, set[str]]:
    """What nothing in grading reaches: parameters never given a non-default value (or a
    required one never passed), array arguments never given a non-contiguous layout, and
    solution branches their own task never takes."""
    out: dict[str, set[str]] = {"parameter": set(), "layout": set(), "branch": set()}
    for key, entry in matrix["api"].items():
        for name, row in entry["parameters"].items():
            if not row["tasks"]:
                out["parameter"].add(f"{key}:{name}")
            if "layouts" in row and not set(row["layouts"]) - {"contiguous"}:
                out["layout"].add(f"{key}:{name}")
    for task_id, cov in matrix["coverage"].items():
        out["branch"].update(f"{task_id} {at}" for at in cov["missed"])
    return out


def load_exemptions(path: Path = EXEMPTIONS_PATH) -> dict[str, dict[str, str]]:
    """``{kind: {item: reason}}`` from the exemptions file (kinds as in ``gaps``)."""
    data = tomllib.loads(path.read_text()) if path.exists() else {}
    out: dict[str, dict[str, str]] = {k: {} for k in ("parameter", "layout", "branch")}
    for kind, groups in data.items():
        for group in groups:
            for item in group["items"]:
                out[kind][item] = group.get("reason", "").strip()
    return out


EXEMPTIONS_HEADER = """\
# Exemptions of the conformance matrix (docs/conformance.md), checked by
# tests/test_conformance.py: each item is a gap no graded test reaches, with the reason.
#   [[parameter]]  "callable:parameter": no task gives it a non-default value (a required
#                  one: no task calls the callable)
#   [[layout]]     "callable:argument": no task gives this array argument a layout other
#                  than contiguous
#   [[branch]]     "task file:line->target": a branch of that task's solution blocks its
#                  own tests never take
# `python scripts/conformance.py --prune` drops items that are no longer gaps;
# `--propose` appends the open gaps as groups with an empty reason, to be written.
"""


def write_exemptions(groups: dict[str, list[dict[str, Any]]], path: Path = EXEMPTIONS_PATH) -> None:
    """Write ``{kind: [{"reason", "items"}]}`` as the exemptions file."""
    out = [EXEMPTIONS_HEADER]
    for kind in ("parameter", "layout", "branch"):
        for group in groups.get(kind, []):
            if not group["items"]:
                continue
            out += ["", f"[[{kind}]]", f"reason = {json.dumps(group['reason'])}", "items = ["]
            out += [f"  {json.dumps(item)}," for item in group["items"]]
            out.append("]")
    path.write_text("\n".join(out) + "\n")


def update_exemptions(matrix: dict[str, Any], prune: bool, propose: bool) -> None:
    """Drop exempted items that are no longer gaps; append open gaps for a reason."""
    groups = tomllib.loads(EXEMPTIONS_PATH.read_text()) if EXEMPTIONS_PATH.exists() else {}
    found = gaps(matrix)
    exempt: set[str] = set()
    for kind in ("parameter", "layout", "branch"):
        for group in groups.setdefault(kind, []):
            if prune:
                group["items"] = [i for i in group["items"] if i in found[kind]]
            exempt.update(f"{kind} {i}" for i in group["items"])
        left = sorted(i for i in found[kind] if f"{kind} {i}" not in exempt)
        if propose and left:
            groups[kind].append({"reason": "", "items": left})
    write_exemptions(groups)


def _assignment(task_id: str) -> str:
    return task_id.split(".")[0]


def _tasks(ids: list[str]) -> str:
    return ", ".join(ids) if ids else "**none**"


def render(matrix: dict[str, Any], exemptions: dict[str, dict[str, str]]) -> str:
    """``docs/conformance.md`` from the matrix: per assignment, each callable's
    parameters and array arguments, then each task's branch coverage."""
    by_assignment: dict[str, list[str]] = defaultdict(list)
    for key, entry in matrix["api"].items():
        homes = sorted({_assignment(t) for t in entry["called_by"]}, key=int)
        by_assignment[homes[0] if homes else "none"].append(key)
    lines = [
        "# Conformance matrix", "",
        "Generated by `python scripts/conformance.py` (from `docs/conformance.json`; do not "
        "edit). It grades the reference once per task, in-process and instrumented, and "
        "records which public callables of tinytrain the probes call, which parameters get "
        "a non-default value (a required one counts when passed), which dtypes and layouts "
        "each array argument gets, and which branches of each task's solution blocks run. "
        "A gap is either covered by a test or exempted with its reason in "
        "`scripts/conformance_exemptions.toml`; `tests/test_conformance.py` checks both "
        "against the committed files. Back to [grading](grading.md).", "",
        "```",
        "python scripts/conformance.py                  # grade every task, rewrite both files",
        "python scripts/conformance.py --tasks 2.1,5    # these tasks only, the rest kept",
        "python scripts/conformance.py --render         # grade nothing: rebuild from the JSON",
        "python scripts/conformance.py --prune --propose  # drop stale exemptions, list open gaps",
        "```", "",
        "Each task is graded in a process of its own (`--no-sandbox`, one task at a time, "
        "so each observation belongs to exactly its task); a grading without the script "
        "has no instrument. A layout is *transposed* when the array is a permutation of a "
        "dense layout, *strided* when it has gaps or negative steps, *offset* when it "
        "starts past its base's first element. Only calls from outside tinytrain count "
        "(the API as the probes drive it, not tinytrain's calls of itself).", "",
        "Marks: **none** = no task; *(exempt)* = a gap listed with its reason.", "",
    ]
    for assignment in sorted(by_assignment, key=lambda a: (a == "none", a.zfill(3))):
        title = "not called by any task" if assignment == "none" else f"assignment {assignment}"
        lines += [f"## API first called in {title}", "",
                  "| callable | parameter | non-default in | layouts | dtypes |",
                  "|---|---|---|---|---|"]
        for key in by_assignment[assignment]:
            entry = matrix["api"][key]
            first = True
            for name, row in entry["parameters"].items() or [("", None)]:
                label = f"`{key}`" if first else ""
                first = False
                if row is None:
                    lines.append(f"| {label} | - | {_tasks(entry['called_by'])} | | |")
                    continue
                mark = " *(exempt)*" if f"{key}:{name}" in exemptions["parameter"] else ""
                layouts = ""
                if "layouts" in row:
                    layouts = "; ".join(f"{t}: {', '.join(v)}" for t, v in row["layouts"].items())
                    layouts = layouts or "**none**"
                    if f"{key}:{name}" in exemptions["layout"]:
                        layouts += " *(exempt)*"
                dtypes = ", ".join(row.get("dtypes", {}))
                lines.append(f"| {label} | `{name}` | {_tasks(row['tasks'])}{mark} | {layouts} "
                             f"| {dtypes} |")
        lines.append("")
    lines += ["## Branch coverage of the solution blocks, per task", "",
              "| task | tests passed | branches taken | missed (file:line->target) |",
              "|---|---|---|---|"]
    for task_id, cov in sorted(matrix["coverage"].items(),
                               key=lambda kv: tuple(map(int, kv[0].split(".")))):
        missed = ", ".join(
            f"`{m}`" + (" *(exempt)*" if f"{task_id} {m}" in exemptions["branch"] else "")
            for m in cov["missed"])
        lines.append(f"| {task_id} | {cov['passed']}/{cov['tests']} | "
                     f"{cov['taken']}/{cov['total']} | {missed} |")
    return "\n".join(lines) + "\n"


def _api_in_subprocess(twins: bool) -> dict[str, dict[str, Any]]:
    """``public_api`` in a fresh interpreter (the reference stays out of this one)."""
    out = subprocess.run([sys.executable, __file__, "--api", *(["--twins"] if twins else [])],
                         check=True, capture_output=True, text=True, cwd=ROOT)
    return json.loads(out.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", help="comma-separated task ids (default: every task)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # the per-task child
    parser.add_argument("--api", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--twins", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--render", action="store_true",
                        help="grade nothing: rebuild both files from the committed "
                        "observations and the API as it is now")
    parser.add_argument("--prune", action="store_true",
                        help="drop exemptions of what is no longer a gap")
    parser.add_argument("--propose", action="store_true",
                        help="append the gaps without an exemption, with empty reasons")
    args = parser.parse_args(argv)
    if args.api:
        print(json.dumps(public_api(twins=args.twins)))
        return 0
    if args.one:
        print(json.dumps(grade_one(args.one)))
        return 0
    previous = json.loads(JSON_PATH.read_text()) if JSON_PATH.exists() else None
    tasks = unbuild(previous) if previous else {}
    sys.path.insert(0, str(ROOT))
    from graders import rubric as rubric_module

    rubric = rubric_module.load()
    for task_id in [] if args.render else [t.id for t in rubric.select(args.tasks)]:
        print(f"grading {task_id} instrumented ...", file=sys.stderr, flush=True)
        with tempfile.TemporaryFile("w+") as out:
            child = subprocess.run([sys.executable, __file__, "--one", task_id],
                                   stdout=out, cwd=ROOT)
            out.seek(0)
            lines = out.read().splitlines()
        if child.returncode != 0 or not lines:
            print(f"  the instrumented grading of {task_id} failed (exit code "
                  f"{child.returncode}); its previous entry is kept", file=sys.stderr)
            continue
        task = tasks[task_id] = json.loads(lines[-1])
        print(f"  {task['passed']}/{task['tests']} passed in {task['seconds']} s, "
              f"branches {task['branches']['taken']}/{task['branches']['total']}",
              file=sys.stderr)
        for failure in task["failed"]:
            print(f"  NOT PASSED under instrumentation: {failure}", file=sys.stderr)
    known = {t.id for t in rubric.tasks}
    tasks = {t: tasks[t] for t in sorted(tasks, key=lambda t: tuple(map(int, t.split("."))))
             if t in known}
    matrix = build(_api_in_subprocess(twins=True), tasks)
    JSON_PATH.write_text(json.dumps(matrix, indent=1) + "\n")
    if args.prune or args.propose:
        update_exemptions(matrix, args.prune, args.propose)
    DOC_PATH.write_text(render(matrix, load_exemptions()))
    found = gaps(matrix)
    exempt = load_exemptions()
    for kind, items in found.items():
        left = sorted(items - set(exempt[kind]))
        print(f"{kind}: {len(items)} gaps, {len(left)} without an exemption", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
