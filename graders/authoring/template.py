"""Generate ``student_template/`` from ``reference/`` by cutting out solution blocks.

A block is
    # BEGIN SOLUTION 2.4
    ... reference code, with optional "# HINT: ..." lines ...
    # END SOLUTION
and becomes its HINT lines plus ``raise NotImplementedError("task 2.4: <title>")`` at the
block's indentation. Markers must pair up, not nest, name a rubric task, and sit at the
same indentation.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .. import rubric as rubric_module

BEGIN = re.compile(r"^(?P<indent>[ \t]*)# BEGIN SOLUTION (?P<task>\S+)\s*$")
END = re.compile(r"^(?P<indent>[ \t]*)# END SOLUTION\s*$")
HINT = re.compile(r"^[ \t]*# HINT:")
MARKER_TEXT = re.compile(r"(BEGIN|END) SOLUTION")
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")


class MarkerError(ValueError):
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tinytrain-make-template",
        description="Regenerate student_template/tinytrain from reference/tinytrain (and "
                    "copy reference/examples).",
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
    except MarkerError as exc:
        print(f"tinytrain-make-template: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
