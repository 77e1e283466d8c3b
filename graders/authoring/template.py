"""Generate ``student_template/`` from ``reference/`` by cutting out solution blocks.

A block is
    # BEGIN SOLUTION 2.4
    ... reference code, with optional "# HINT: ..." lines ...
    # END SOLUTION
and becomes its HINT lines plus ``raise NotImplementedError("task 2.4: <title>")`` at the
block's indentation. Markers must pair up, not nest, name a rubric task, and sit at the
same indentation.

It also writes ``student_template/README.md``, the students' guide, from
``student_readme.md`` beside this file, with its placeholders filled in: ``{{ tasks }}``
the task list (the rubric's tasks and points, and the files each task edits, found from
the solution markers); ``{{ torch }}``, ``{{ triton }}`` and ``{{ mpi }}`` the pins of
``pyproject.toml``; ``{{ call_timeout_s }}`` and ``{{ test_budget_s }}`` the rubric's
limits. Beside it goes a ``.gitignore`` for what grading and Python leave in a student's
repository.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tomllib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .. import rubric as rubric_module

BEGIN = re.compile(r"^(?P<indent>[ \t]*)# BEGIN SOLUTION (?P<task>\S+)\s*$")
END = re.compile(r"^(?P<indent>[ \t]*)# END SOLUTION\s*$")
HINT = re.compile(r"^[ \t]*# HINT:")
MARKER_TEXT = re.compile(r"(BEGIN|END) SOLUTION")
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")


class TemplateError(ValueError):
    """The template cannot be generated."""


class MarkerError(TemplateError):
    """A malformed solution marker."""


@dataclass(frozen=True)
class Block:
    path: str
    task: str
    start: int  # line index of BEGIN
    end: int  # line index of END
    lines: tuple[str, ...]  # the solution lines between the markers


def find_blocks(text: str, path: str, titles: dict[str, str]) -> list[Block]:
    """Every solution block of a file, validated."""
    blocks = []
    lines = text.splitlines(keepends=True)
    open_at = None
    for i, line in enumerate(lines):
        begin, end = BEGIN.match(line), END.match(line)
        where = f"{path}:{i + 1}"
        if begin:
            if open_at is not None:
                raise MarkerError(f"{where}: BEGIN SOLUTION inside another block")
            if begin["task"] not in titles:
                raise MarkerError(f"{where}: task {begin['task']!r} is not in the rubric")
            open_at = (i, begin)
        elif end:
            if open_at is None:
                raise MarkerError(f"{where}: END SOLUTION without BEGIN")
            start, begin_match = open_at
            if end["indent"] != begin_match["indent"]:
                raise MarkerError(f"{where}: END SOLUTION indented differently from its BEGIN")
            body = tuple(lines[start + 1 : i])
            if not any(line.strip() and not HINT.match(line) for line in body):
                raise MarkerError(f"{where}: empty solution block")
            blocks.append(Block(path, begin_match["task"], start, i, body))
            open_at = None
        elif MARKER_TEXT.search(line):
            raise MarkerError(f"{where}: malformed solution marker: {line.strip()}")
    if open_at is not None:
        raise MarkerError(f"{path}:{open_at[0] + 1}: BEGIN SOLUTION without END")
    return blocks


def strip(text: str, path: str, titles: dict[str, str],
          only: Callable[[str], bool] | None = None) -> str:
    """The file with each solution block replaced by its hints and a raise (only the
    blocks of tasks ``only`` accepts, when given: a partly finished submission)."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    cursor = 0
    for block in find_blocks(text, path, titles):
        if only is not None and not only(block.task):
            continue
        out.extend(lines[cursor : block.start])
        indent = BEGIN.match(lines[block.start])["indent"]
        out.extend(indent + line.strip() + "\n" for line in block.lines if HINT.match(line))
        title = titles[block.task].replace('"', "'")
        out.append(f'{indent}raise NotImplementedError("task {block.task}: {title}")\n')
        cursor = block.end + 1
    out.extend(lines[cursor:])
    return "".join(out)


def generate(reference: Path, target: Path, titles: dict[str, str],
             only: Callable[[str], bool] | None = None) -> None:
    """Write the template of package ``reference`` into ``target`` (replaced whole),
    cutting out every solution block, or only those of the tasks ``only`` accepts."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(reference, target, ignore=IGNORED)
    for path in sorted(target.rglob("*.py")):
        rel = str(path.relative_to(target.parent))
        path.write_text(strip(path.read_text(), rel, titles, only))


def copy_examples(reference_examples: Path, target: Path) -> None:
    """Copy the example scripts (training a GPT, the opt-level table) as they are: they
    import the tinytrain beside them, so in the template they run the student's code.
    They must hold no solution block."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(reference_examples, target, ignore=IGNORED)
    for path in sorted(target.rglob("*.py")):
        if any(BEGIN.match(line) for line in path.read_text().splitlines()):
            raise MarkerError(f"{path.name}: examples must not contain solution blocks")


def rubric_titles() -> dict[str, str]:
    return {t.id: t.title for t in rubric_module.load().tasks}


README_SOURCE = Path(__file__).with_name("student_readme.md")
# what grading (tinytrain-grade --out grading, or no --out) and Python leave behind
GITIGNORE = ("__pycache__/\n*.pyc\n/grading/\n/score.json\n/results.json\n/classroom.json\n"
             "/repro*.py\n.venv/\n")
_PLACEHOLDER = re.compile(r"\{\{ *(\w+) *\}\}")


def task_files(reference: Path, titles: dict[str, str]) -> dict[str, Counter[str]]:
    """For each task, the files of package ``reference`` that hold its solution blocks
    (``tinytrain/...`` paths) and how many blocks each holds."""
    found: dict[str, Counter[str]] = {task: Counter() for task in titles}
    for path in sorted(reference.rglob("*.py")):
        rel = path.relative_to(reference.parent).as_posix()
        for block in find_blocks(path.read_text(), rel, titles):
            found[block.task][rel] += 1
    return found


def task_table(reference: Path, rubric: rubric_module.Rubric) -> str:
    """The guide's task list: per assignment, each task's points, title and files."""
    files = task_files(reference, {t.id: t.title for t in rubric.tasks})
    out: list[str] = []
    for number, title in rubric.assignments.items():
        out += [f"### {number}. {title}", "",
                "| task | points | what | files (stubs in each) |", "|---|---|---|---|"]
        for task in (t for t in rubric.tasks if t.assignment == number):
            what = task.title.replace("|", "\\|")
            if task.integration:
                what += " (runs the whole stack: a bug in another task can cost points here)"
            where = ", ".join(f"`{f}` ({n})" for f, n in sorted(files[task.id].items()))
            out.append(f"| {task.id} | {task.points:g} | {what} | {where} |")
        out.append("")
    return "\n".join(out).rstrip("\n")


def pinned(requirement: str, pyproject: Path) -> str:
    """The version ``pyproject``'s dependencies pin ``requirement`` to (``name==X``)."""
    for dep in tomllib.loads(pyproject.read_text())["project"]["dependencies"]:
        match = re.match(rf"^{re.escape(requirement)}==([^;\s]+)", dep)
        if match:
            return match[1]
    raise TemplateError(f"{pyproject}: no {requirement}==VERSION among the dependencies")


def extra(name: str, pyproject: Path) -> str:
    """The requirements of ``pyproject``'s optional dependency group ``name``, as pip
    arguments."""
    group = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"].get(name)
    if not group:
        raise TemplateError(f"{pyproject}: no optional dependencies {name!r}")
    return " ".join(group)


def render_readme(reference: Path, rubric: rubric_module.Rubric, pyproject: Path,
                  source: Path = README_SOURCE) -> str:
    """The students' guide: ``source`` with its placeholders filled in."""
    values = {"tasks": task_table(reference, rubric), "torch": pinned("torch", pyproject),
              "triton": pinned("triton", pyproject), "mpi": extra("mpi", pyproject),
              "call_timeout_s": f"{rubric.limits.call_timeout_s:g}",
              "test_budget_s": f"{rubric.limits.test_budget_s:g}"}

    def fill(match: re.Match[str]) -> str:
        if match[1] not in values:
            raise TemplateError(f"{source.name}: unknown placeholder {match[0]}")
        return values[match[1]]

    text = source.read_text()
    if text.startswith("<!--"):  # the source's note to its editors
        text = text[text.index("-->") + 3:].lstrip("\n")
    return _PLACEHOLDER.sub(fill, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tinytrain-make-template",
        description="Regenerate student_template/tinytrain from reference/tinytrain, copy "
                    "reference/examples, and write student_template/README.md (the students' "
                    "guide, from graders/authoring/student_readme.md).",
    )
    root = Path(__file__).resolve().parents[2]
    parser.add_argument("--reference", type=Path, default=root / "reference" / "tinytrain")
    parser.add_argument("--out", type=Path, default=root / "student_template" / "tinytrain")
    args = parser.parse_args(argv)
    try:
        generate(args.reference, args.out, rubric_titles())
        examples = args.reference.parent / "examples"
        if examples.is_dir():
            copy_examples(examples, args.out.parent / "examples")
        readme = args.out.parent / "README.md"
        readme.write_text(render_readme(args.reference, rubric_module.load(),
                                        root / "pyproject.toml"))
        (args.out.parent / ".gitignore").write_text(GITIGNORE)
        if args.reference.resolve() == (root / "reference" / "tinytrain").resolve():
            from . import given  # the grader's copy of the given files, kept in step

            given.MANIFEST.write_text(given.render(args.reference))
    except TemplateError as exc:
        print(f"tinytrain-make-template: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}, {args.out.parent / 'examples'} and {readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
