"""The task index: for each rubric task, where it is graded (``docs/tasks.md``).

For every task of ``graders/rubric.toml``: its grader tests (``graders/suites``), the probes
they call, the oracle functions they use, the reference files with its solution blocks and
its known-wrong variants (``tests/mutants``). Everything is read from the source with
``ast``: no suite, probe, oracle or torch is imported and pytest is not run.

- A test belongs to a task by its marker: ``@task("2.6")`` (``pytest.mark.task``), or
  ``marks=task(entry.task)`` in the parameters of a table-driven test, whose entries come
  from the op table (``OpInfo``), the kernel table (``KernelInfo``, ``WrapperInfo``,
  ``DeviceOpInfo``) or the mapping table (``MappingInfo``).
- What a test calls is what its function reaches: its own body and the grader functions
  it calls, followed through imports inside ``graders/`` (suites, checks, tables, oracle).
  A probe is a string naming a registered probe (``@probe`` in ``graders/probes/``), as in
  ``submission.call("ops.forward", ...)``; an f-string ``f"ops.{probe}"`` counts with the
  string constants that complete it. An oracle function is a function of
  ``graders/oracle`` reached that way.

``python -m graders.authoring.task_index`` writes ``docs/tasks.md``; ``--check`` exits 1
when it is stale. ``tinytrain-grade --explain 2.6`` prints one task's entry.
"""

from __future__ import annotations

import argparse
import ast
import functools
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from graders import rubric

GRADERS = Path(__file__).resolve().parents[1]
ROOT = GRADERS.parent
INDEX = ROOT / "docs" / "tasks.md"
TASK_ID = re.compile(r"^\d+\.\d+$")
SOLUTION = re.compile(r"#\s*BEGIN SOLUTION\s+(\d+\.\d+)")
# table constructors: the field that names an entry (keyword, or positional index)
TABLE_CLASSES = {"OpInfo": ("name", 0), "KernelInfo": ("name", 0), "WrapperInfo": ("name", 0),
                 "DeviceOpInfo": ("name", 0), "MappingInfo": ("path", 0)}
# the table lists a parametrized test draws its entries from, by the name it uses
TABLE_LISTS = {"OPS": "OpInfo", "KERNELS": "KernelInfo", "WRAPPERS": "WrapperInfo",
               "DEVICE_OPS": "DeviceOpInfo", "MAPPINGS": "MappingInfo"}


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@dataclass
class Module:
    name: str  # graders.suites.hw2_ops.test_ops
    path: Path
    tree: ast.Module
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    imports: dict[str, str] = field(default_factory=dict)  # local name -> dotted target
    assigns: dict[str, ast.expr] = field(default_factory=dict)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve_from(module: str, is_package: bool, level: int, target: str | None) -> str:
    if level == 0:
        return target or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _load(path: Path) -> Module:
    tree = ast.parse(path.read_text(), str(path))
    module = Module(_module_name(path), path, tree)
    package = path.name == "__init__.py"
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            module.functions[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    module.assigns[target.id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                and node.value is not None:
            module.assigns[node.target.id] = node.value
        elif isinstance(node, ast.ImportFrom):
            source = _resolve_from(module.name, package, node.level, node.module)
            for alias in node.names:
                module.imports[alias.asname or alias.name] = f"{source}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                module.imports[alias.asname or alias.name.split(".")[0]] = \
                    alias.name if alias.asname else alias.name.split(".")[0]
    return module


class Source:
    """Every module of ``graders/`` parsed once, with what the index needs of them."""

    def __init__(self) -> None:
        self.modules = {m.name: m for m in map(_load, sorted(GRADERS.rglob("*.py")))}
        self.probes = self._probes()
        self.entry_nodes: dict[tuple[str, str], tuple[Module, ast.Call]] = {}
        self.entries = self._entries()

    def _probes(self) -> set[str]:
        names = set()
        for module in self.modules.values():
            if not module.name.startswith("graders.probes."):
                continue
            short = module.name.rsplit(".", 1)[-1]
            for fn in module.functions.values():
                if any(isinstance(d, ast.Name) and d.id == "probe" for d in fn.decorator_list):
                    names.add(f"{short}.{fn.name}")
        return names

    def _entries(self) -> dict[str, list[tuple[str, str, str, frozenset[str]]]]:
        """Table class -> (entry name, task, file, fields given a true value) for every
        constructor call in graders/ (``differentiable`` unless given as False)."""
        defaults = {}
        self.optional: set[str] = set()  # fields that default to nothing: () None False
        for module in self.modules.values():
            for node in module.tree.body:
                if isinstance(node, ast.ClassDef) and node.name in TABLE_CLASSES:
                    for item in node.body:
                        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) \
                                and item.value is not None and ast.unparse(item.value) in (
                                    "()", "None", "False"):
                            self.optional.add(item.target.id)
                        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) \
                                and item.target.id == "task" and isinstance(item.value, ast.Constant):
                            defaults[node.name] = item.value.value
        entries: dict[str, list[tuple[str, str, str, frozenset[str]]]] = \
            {c: [] for c in TABLE_CLASSES}
        for module in self.modules.values():
            for node in ast.walk(module.tree):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                        and node.func.id in TABLE_CLASSES):
                    continue
                key, position = TABLE_CLASSES[node.func.id]
                kw = {k.arg: k.value for k in node.keywords}
                name = kw.get(key, node.args[position] if len(node.args) > position else None)
                task = kw.get("task") or next(
                    (a for a in node.args if isinstance(a, ast.Constant)
                     and isinstance(a.value, str) and TASK_ID.match(a.value)), None)
                if not isinstance(name, ast.Constant):
                    continue
                task_id = task.value if isinstance(task, ast.Constant) \
                    else defaults.get(node.func.id)
                given = {k for k, v in kw.items() if k and not (
                    isinstance(v, ast.Constant) and not v.value)
                    and not (isinstance(v, ast.Tuple | ast.List) and not v.elts)}
                if not (isinstance(kw.get("differentiable"), ast.Constant)
                        and kw["differentiable"].value is False):
                    given.add("differentiable")
                if task_id:
                    self.entry_nodes[(node.func.id, name.value)] = (module, node)
                    entries[node.func.id].append(
                        (name.value, task_id, _rel(module.path), frozenset(given)))
        return entries

    def function(self, dotted: str) -> tuple[Module, ast.FunctionDef] | None:
        module, _, name = dotted.rpartition(".")
        found = self.modules.get(module)
        if found is None:
            return None
        if name in found.functions:
            return found, found.functions[name]
        if name in found.imports and found.imports[name] != dotted:  # a re-export
            return self.function(found.imports[name])
        return None

    def resolve(self, module: Module, node: ast.expr) -> str | None:
        """The dotted name a call's function refers to (``oracle.forward`` with ``from
        graders.oracle import ops as oracle`` is ``graders.oracle.ops.forward``)."""
        if isinstance(node, ast.Name):
            if node.id in module.functions:
                return f"{module.name}.{node.id}"
            return module.imports.get(node.id)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            base = module.imports.get(node.value.id)
            if base:
                return f"{base}.{node.attr}"
        return None


@dataclass
class Reach:
    strings: set[str] = field(default_factory=set)
    prefixes: set[str] = field(default_factory=set)
    oracle: set[str] = field(default_factory=set)
    tables: set[str] = field(default_factory=set)


def _reach(source: Source, module: Module, nodes: list[ast.AST], reach: Reach,
           seen: set[str]) -> None:
    """Strings, f-string prefixes, oracle functions and table lists reached from ``nodes``."""
    for root in nodes:
        for node in ast.walk(root):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                reach.strings.add(node.value)
            elif isinstance(node, ast.JoinedStr) and node.values \
                    and isinstance(node.values[0], ast.Constant):
                reach.prefixes.add(str(node.values[0].value))
            elif isinstance(node, ast.Name) and node.id in TABLE_LISTS:
                reach.tables.add(TABLE_LISTS[node.id])
            elif isinstance(node, ast.Attribute) and node.attr in TABLE_LISTS:
                reach.tables.add(TABLE_LISTS[node.attr])
            if isinstance(node, ast.Name | ast.Attribute):
                dotted = source.resolve(module, node)
                if not dotted or not dotted.startswith("graders.") or dotted in seen:
                    continue
                seen.add(dotted)
                found = source.function(dotted)
                if found is None:
                    continue
                target_module, fn = found
                if target_module.name.startswith("graders.oracle"):
                    reach.oracle.add(f"{target_module.name}.{fn.name}")
                _reach(source, target_module, [fn], reach, seen)


@dataclass
class Test:
    file: str  # where pytest collects it
    name: str
    tasks: set[str]  # direct markers
    table: str | None  # table-driven: the table class its entries come from
    reach: Reach
    defined_in: str = ""  # where its function is written, when elsewhere (generated checks)


def _marker_tasks(decorators: list[ast.expr]) -> set[str]:
    tasks = set()
    for d in decorators:
        if isinstance(d, ast.Call) and d.args and isinstance(d.args[0], ast.Constant):
            func = ast.unparse(d.func)
            if func in ("task", "pytest.mark.task", "mark.task"):
                tasks.add(str(d.args[0].value))
    return tasks


def _param_tasks(source: Source, module: Module, fn: ast.FunctionDef) -> set[str]:
    """Tasks given as constants in a parametrized test's marks (``marks=task("4.1")``)."""
    found = set()
    for d in fn.decorator_list:
        if isinstance(d, ast.Call) and ast.unparse(d.func).endswith("parametrize"):
            for arg in d.args[1:]:
                nodes: list[ast.AST] = [arg]
                if isinstance(arg, ast.Name) and arg.id in module.assigns:
                    nodes = [module.assigns[arg.id]]
                if isinstance(arg, ast.Call):
                    found_fn = source.function(source.resolve(module, arg.func) or "")
                    if found_fn:
                        nodes.append(found_fn[1])
                for node in nodes:
                    found |= _marker_tasks([n for n in ast.walk(node) if isinstance(n, ast.Call)])
    return found


def _table_driven(source: Source, module: Module, fn: ast.FunctionDef) -> str | None:
    """The table a parametrized test's marks come from (``marks=task(x.task)``), if any."""
    for d in fn.decorator_list:
        if not (isinstance(d, ast.Call) and ast.unparse(d.func).endswith("parametrize")):
            continue
        for arg in d.args[1:]:
            nodes: list[ast.AST] = [arg]
            if isinstance(arg, ast.Name) and arg.id in module.assigns:
                nodes = [module.assigns[arg.id]]
            if isinstance(arg, ast.Call):
                dotted = source.resolve(module, arg.func)
                found = source.function(dotted) if dotted else None
                if found:
                    nodes.append(found[1])
            text = " ".join(ast.unparse(n) for n in nodes)
            if "task(" in text and ".task)" in text:
                reach = Reach()
                _reach(source, module, nodes, reach, set())
                tables = set(reach.tables)
                if not tables:  # the list is a local (the ops of one assignment)
                    tables = {cls for name, cls in TABLE_LISTS.items()
                              if re.search(rf"\b{name}\b", ast.unparse(module.tree))}
                # a filter on the entries: [op for op in ops if op.view], _cases(ops, "kinks")
                attrs = set(re.findall(r"if \w+\.(\w+)\]", text))
                attrs |= set(re.findall(r"_cases\(\w+, '(\w+)'\)", text))
                attrs = {a for a in attrs if a in source.optional}
                attrs |= set(re.findall(r"for [\w, ]+ in \w+\.(\w+)", text)) & source.optional
                if re.search(r"\bdifferentiable\b", ast.unparse(arg)):
                    attrs.add("differentiable")
                return ",".join(sorted(tables)) + "".join(f"|{a}" for a in sorted(attrs)) \
                    or None
    return None


def _tests(source: Source) -> list[Test]:
    tests = []
    for module in source.modules.values():
        if not module.name.startswith("graders.suites."):
            continue
        defs: list[tuple[Module, ast.FunctionDef, str | None]] = []
        for node in ast.walk(module.tree):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                defs.append((module, node, None))
        # generated checks: op_checks("2") exposes the op table's checks in this module
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id == "op_checks" and node.args \
                    and isinstance(node.args[0], ast.Constant):
                helper = source.function(source.resolve(module, node.func) or "")
                if helper:
                    for inner in ast.walk(helper[1]):
                        if isinstance(inner, ast.FunctionDef) and inner.name.startswith("test_"):
                            defs.append((helper[0], inner, str(node.args[0].value)))
        if module.name.endswith("._opchecks"):
            continue
        for owner, fn, assignment in defs:
            reach = Reach()
            _reach(source, owner, [fn], reach, set())
            table = _table_driven(source, owner, fn)
            if assignment is not None:
                table = f"{table}@{assignment}"
            tasks = _marker_tasks(fn.decorator_list) | _param_tasks(source, owner, fn)
            tests.append(Test(_rel(module.path), fn.name, tasks, table, reach,
                              "" if owner is module else _rel(owner.path)))
    return tests


def _probes(source: Source, reach: Reach) -> set[str]:
    found = {s for s in reach.strings if s in source.probes}
    for prefix in reach.prefixes:
        found |= {prefix + s for s in reach.strings if prefix + s in source.probes}
    return found


def _solutions() -> dict[str, dict[str, int]]:
    blocks: dict[str, dict[str, int]] = {}
    for path in sorted((ROOT / "reference" / "tinytrain").rglob("*.py")):
        for match in SOLUTION.finditer(path.read_text()):
            files = blocks.setdefault(match.group(1), {})
            files[_rel(path)] = files.get(_rel(path), 0) + 1
    return blocks


def _mutants() -> dict[str, list[tuple[str, str, str]]]:
    """Task -> (kind, id, file) of every ``Mutant(...)`` in tests/mutants."""
    found: dict[str, list[tuple[str, str, str]]] = {}
    for path in sorted((ROOT / "tests" / "mutants").glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in tree.body:
            targets = [t.id for t in getattr(node, "targets", [getattr(node, "target", None)])
                       if isinstance(t, ast.Name)]
            if not targets or targets[0] not in ("MUTANTS", "ALTERNATIVES"):
                continue
            kind = "mutant" if targets[0] == "MUTANTS" else "alternative"
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and ast.unparse(call.func) == "Mutant":
                    kw = {k.arg: k.value for k in call.keywords}
                    if isinstance(kw.get("task"), ast.Constant) and isinstance(kw.get("id"), ast.Constant):
                        found.setdefault(kw["task"].value, []).append(
                            (kind, kw["id"].value, _rel(path)))
    return found


def _code(items: list[str] | set[str]) -> str:
    return ", ".join(f"`{i}`" for i in sorted(items)) or "none"


def entries() -> dict[str, str]:
    """Task id -> its entry (Markdown), in rubric order."""
    return dict(_entries())


@functools.cache
def _entries() -> tuple[tuple[str, str], ...]:
    source = Source()
    tests = _tests(source)
    solutions = _solutions()
    mutants = _mutants()
    out = {}
    for task in rubric.load().tasks:
        lines = [f"## {task.id} {task.title}", "",
                 f"{task.points:g} points, {task.visibility}"
                 + (", integration (runs the whole stack)" if task.integration else "") + ".", ""]
        mine: list[tuple[str, str, str, str]] = []  # (file, test, how, defined in)
        probes: set[str] = set()
        oracle: set[str] = set()
        for test in tests:
            how = ""
            reach = Reach(set(test.reach.strings), set(test.reach.prefixes),
                          set(test.reach.oracle), set(test.reach.tables))
            if task.id in test.tasks:
                pass
            elif test.table:
                spec, _, assignment = test.table.partition("@")
                if assignment and task.assignment != assignment:
                    continue
                tables, *attrs = spec.split("|")
                names = [n for cls in tables.split(",") for n, t, _, given in
                         source.entries.get(cls, []) if t == task.id and set(attrs) <= given]
                if not names:
                    continue
                # what the entries themselves reach: their case strategies, checks, oracles
                for cls in tables.split(","):
                    for n in names:
                        if (cls, n) in source.entry_nodes:
                            module, node = source.entry_nodes[(cls, n)]
                            _reach(source, module, [node], reach, set())
                how = " for " + ", ".join(f"`{n}`" for n in sorted(set(names)))
            else:
                continue
            mine.append((test.file, test.name, how, test.defined_in))
            probes |= _probes(source, reach)
            oracle |= {o for o in reach.oracle if not o.rsplit(".", 1)[-1].startswith("_")}
        lines.append(f"- **Tests** ({len(mine)} functions):")
        for file, defined in sorted({(f, d) for f, _, _, d in mine}):
            listed = [f"`{name}`{how}" for f, name, how, d in mine if (f, d) == (file, defined)]
            where = f" (written in `{defined}`)" if defined else ""
            lines.append(f"  - `{file}`{where}: " + "; ".join(listed))
        tables = sorted({f for cls in TABLE_CLASSES for n, t, f, _ in source.entries[cls]
                         if t == task.id})
        if tables:
            lines.append(f"- **Table entries** in {_code(tables)}")
        lines.append(f"- **Probes** (`graders/probes/`): {_code(probes)}")
        lines.append("- **Oracle** (`graders/oracle/`): "
                     + _code({o.removeprefix('graders.oracle.') for o in oracle}))
        blocks = solutions.get(task.id, {})
        lines.append("- **Solution blocks** (`# BEGIN SOLUTION " + task.id + "`): "
                     + (", ".join(f"`{f}` ({n})" for f, n in sorted(blocks.items())) or "none"))
        for kind, label in (("mutant", "Mutants"), ("alternative", "Correct alternatives")):
            listed = [(i, f) for k, i, f in mutants.get(task.id, []) if k == kind]
            if listed or kind == "mutant":
                files = sorted({f for _, f in listed})
                lines.append(f"- **{label}** ({len(listed)}, in {_code(files)}): "
                             + _code([i for i, _ in listed]))
        out[task.id] = "\n".join(lines) + "\n"
    return tuple(out.items())


HEADER = """# Task index

Generated by `python -m graders.authoring.task_index` from the source (do not edit; a test
checks it is current). For each task of `graders/rubric.toml`: its grader tests (by their
`@task` marker, or the table entries of a table-driven test), the probes they call
(`submission.call("module.function", ...)`, run in the worker), the oracle functions they
use (run with torch in the grader), the reference files with its solution blocks and its
known-wrong variants. `tinytrain-grade --explain TASK` prints one entry. How the pieces fit:
[architecture.md](architecture.md).

"""


def in_checkout() -> bool:
    """Whether the source the index is read from is here (a checkout, not an install)."""
    return all((ROOT / part).is_dir() for part in ("reference/tinytrain", "tests/mutants",
                                                  "graders/suites"))


def render() -> str:
    return HEADER + "\n".join(entries().values())


def explain(task_id: str) -> str | None:
    return entries().get(task_id)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m graders.authoring.task_index",
                                     description="write docs/tasks.md, the task index")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if docs/tasks.md is not current (write nothing)")
    parser.add_argument("--out", type=Path, default=INDEX)
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = args.out.read_text() if args.out.exists() else ""
        if current != text:
            print(f"{_rel(args.out) if args.out.is_relative_to(ROOT) else args.out} is stale: "
                  "run python -m graders.authoring.task_index", file=sys.stderr)
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
