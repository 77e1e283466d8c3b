"""Scaffold a new task: ``tinytrain-make-task 8.1 --title "..." --area topic``.

Creates, in one step, every place a task lives (docs/adding.md, "A task"): its rubric
entry, a suite test file, a probe, an oracle function, a solution block in the
reference, a strategy module and a known-wrong variant file. Each stub carries a
``SCAFFOLD <task>`` marker; ``tinytrain-make-task --check`` (and the project's tests)
fail while any marker is left, so a half-written task cannot land.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = "SCAFFOLD"
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
_SCANNED = ("graders", "reference", "tests/mutants")


def _ident(task_id: str) -> str:
    return "t" + task_id.replace(".", "_")


def _rubric_entry(task_id: str, title: str, points: int, visibility: str) -> str:
    return (f'\n[[tasks]]\nid = "{task_id}"\ntitle = "{title}"  # {MARKER} {task_id}: the '
            f'title students see\npoints = {points}\nvisibility = "{visibility}"\n')


def _add_to_rubric(path: Path, task_id: str, title: str, points: int, visibility: str,
                   assignment_title: str | None) -> None:
    """Insert the task after its assignment's last task (a new assignment at the end)."""
    text = path.read_text()
    data = tomllib.loads(text)
    if any(t["id"] == task_id for t in data.get("tasks", [])):
        raise SystemExit(f"task {task_id} is already in {path}")
    assignment = task_id.split(".")[0]
    entry = _rubric_entry(task_id, title, points, visibility)
    if not any(a["id"] == assignment for a in data.get("assignments", [])):
        heading = assignment_title or f"{MARKER} {assignment}: the assignment's title"
        path.write_text(text.rstrip("\n") + f'\n\n[[assignments]]\nid = "{assignment}"\n'
                        f'title = "{heading}"\n' + entry)
        return
    # the end of the block of the assignment's last task, or of its [[assignments]] entry
    blocks = list(re.finditer(r"^\[\[(tasks|assignments)\]\]\nid = \"([^\"]+)\"", text, re.M))
    anchor = None
    for i, block in enumerate(blocks):
        owner = block.group(2).split(".")[0]
        if owner == assignment:
            anchor = blocks[i + 1].start() if i + 1 < len(blocks) else len(text)
    assert anchor is not None
    before = text[:anchor].rstrip("\n") + "\n"
    path.write_text(before + entry + ("\n" + text[anchor:] if anchor < len(text) else ""))


def _suite(task_id: str, area: str) -> str:
    fn = _ident(task_id)
    return f'''"""Task {task_id}: {MARKER} {task_id}: what the tests check, against which torch API."""

from __future__ import annotations

from hypothesis import given, settings

from graders.checks import assert_close
from graders.checks.structure import Shaped, conform
from graders.oracle import {area} as oracle
from graders.strategies import {area} as strategies
from graders.suites._support import examples, task


@task("{task_id}")
@settings(max_examples=examples(10))
@given(x=strategies.inputs())
def test_{fn}(submission, x):
    """{MARKER} {task_id}: one sentence on the property checked."""
    got = submission.call("{area}.{fn}", x)
    expected = oracle.{fn}(x)
    conform(got, Shaped(x.shape), what="{area}.{fn}")  # the structure before any value
    case = f"{MARKER} {task_id}: the call, as the student would write it (x shape {{x.shape}})"
    assert_close(got, expected, what="{fn}", case=case,
                 reproducer="{MARKER} {task_id}: a complete script printing both values")
'''


def _probe(task_id: str, area: str, new: bool) -> str:
    fn = _ident(task_id)
    head = (f'"""Probes for task {task_id}: they drive the submission\'s tinytrain and return '
            'plain observations."""\n\nfrom __future__ import annotations\n\nfrom typing import '
            'Any\n\nimport numpy as np\n\nfrom . import probe\nfrom ._observe import array\n'
            if new else "")
    return head + f'''

@probe
def {fn}(tt: Any, x: np.ndarray) -> Any:
    """{MARKER} {task_id}: the scenario, with tinytrain (never torch, never the grader)."""
    return array(tt.tensor(x))
'''


def _oracle(task_id: str, area: str, new: bool) -> str:
    fn = _ident(task_id)
    head = (f'"""torch versions of the {area} probes."""\n\nfrom __future__ import '
            'annotations\n\nimport numpy as np\nimport torch\n' if new else "")
    return head + f'''

def {fn}(x: np.ndarray) -> np.ndarray:
    """{MARKER} {task_id}: the same scenario with torch (or an independent rule)."""
    return torch.as_tensor(x).numpy().copy()
'''


def _strategy(task_id: str, area: str) -> str:
    return f'''"""Inputs for task {task_id}, drawn with Hypothesis."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp


def inputs() -> st.SearchStrategy[np.ndarray]:
    """{MARKER} {task_id}: draw along every axis the task has (values incl. special ones,
    dtypes, layouts, options)."""
    return hnp.arrays(np.float32, hnp.array_shapes(max_dims=2, max_side=4),
                      elements=st.floats(-2, 2, width=32))
'''


def _solution(task_id: str) -> str:
    fn = _ident(task_id)
    return f'''

def {fn}_helper(x):
    """{MARKER} {task_id}: the public API the task asks for (given code: signature, docstring)."""
    # BEGIN SOLUTION {task_id}
    # HINT: {MARKER} {task_id}: what the student is told
    return x
    # END SOLUTION
'''


def _mutants(task_id: str, assignment: str, new: bool) -> str:
    head = (f'"""Wrong variants for assignment {assignment}."""\n\nfrom . import Mutant\n\n'
            'MUTANTS: list[Mutant] = []\nALTERNATIVES: list[Mutant] = []\n' if new else "")
    return head + (f"\n# {MARKER} {task_id}: add to MUTANTS a Mutant(id=, task=\"{task_id}\", "
                   "file=, find=,\n#   replace=, why=) that this task catches and no other\n")


def _append(path: Path, text: str, created: list[Path]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.write_text(path.read_text().rstrip("\n") + "\n" + text)
    else:
        path.write_text(text)
    created.append(path)


def scaffold(task_id: str, title: str, area: str, *, points: int = 10,
             visibility: str = "visible", assignment_title: str | None = None,
             solution_file: str | None = None, root: Path = ROOT) -> list[Path]:
    """Create every stub of a new task under ``root``; returns the files written."""
    if not re.fullmatch(r"\d+\.\d+", task_id):
        raise SystemExit(f"a task id is N.M, not {task_id!r}")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", area):
        raise SystemExit(f"an area is a module name (lower case), not {area!r}")
    if visibility not in VISIBILITIES:
        raise SystemExit(f"visibility is one of {', '.join(VISIBILITIES)}")
    assignment = task_id.split(".")[0]
    written: list[Path] = []
    _add_to_rubric(root / "graders" / "rubric.toml", task_id, title, points, visibility,
                   assignment_title)
    written.append(root / "graders" / "rubric.toml")
    suites = root / "graders" / "suites"
    folders = sorted(suites.glob(f"hw{assignment}_*"))
    folder = folders[0] if folders else suites / f"hw{assignment}_{area}"
    test_file = folder / f"test_{area}_{task_id.replace('.', '_')}.py"
    if test_file.exists():
        raise SystemExit(f"{test_file} exists")
    _append(test_file, _suite(task_id, area), written)
    for kind, make in (("probes", _probe), ("oracle", _oracle)):
        path = root / "graders" / kind / f"{area}.py"
        _append(path, make(task_id, area, not path.exists()), written)
    strategy = root / "graders" / "strategies" / f"{area}.py"
    if not strategy.exists():
        _append(strategy, _strategy(task_id, area), written)
    solution = root / "reference" / "tinytrain" / (solution_file or f"{area}.py")
    _append(solution, (f'"""{MARKER} {task_id}: the module\'s docstring."""\n'
                       if not solution.exists() else "") + _solution(task_id), written)
    mutants = root / "tests" / "mutants" / f"hw{assignment}.py"
    _append(mutants, _mutants(task_id, assignment, not mutants.exists()), written)
    return written


def unfilled(root: Path = ROOT) -> list[str]:
    """``path:line: text`` of every scaffold marker left under ``root``."""
    found = []
    pattern = re.compile(rf"\b{MARKER} \d+\.\d+")
    for top in _SCANNED:
        for path in sorted((root / top).rglob("*")):
            if path.suffix not in (".py", ".toml") or path == Path(__file__).resolve():
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if pattern.search(line):
                    found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tinytrain-make-task", description=__doc__.split("\n\n")[0])
    parser.add_argument("task", nargs="?", help='the new task\'s id, "N.M"')
    parser.add_argument("--title", help="the task's title (rubric)")
    parser.add_argument("--area", help="module name for its probe, oracle, strategy, suite")
    parser.add_argument("--points", type=int, default=10)
    parser.add_argument("--visibility", default="visible", choices=VISIBILITIES)
    parser.add_argument("--assignment-title", help="title of a new assignment")
    parser.add_argument("--solution-file", help="file under reference/tinytrain for the "
                        "solution block (default: <area>.py)")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    parser.add_argument("--check", action="store_true",
                        help="list the scaffold markers still to fill in (exit 1 if any)")
    args = parser.parse_args(argv)
    if args.check:
        left = unfilled(args.root)
        for line in left:
            print(line)
        print(f"{len(left)} scaffold marker(s) left" if left else "no scaffold markers left")
        return 1 if left else 0
    if not (args.task and args.title and args.area):
        parser.error("give a task id, --title and --area (or --check)")
    written = scaffold(args.task, args.title, args.area, points=args.points,
                       visibility=args.visibility, assignment_title=args.assignment_title,
                       solution_file=args.solution_file, root=args.root)
    for path in written:
        print(f"wrote {path.relative_to(args.root)}")
    print(f"fill in every '{MARKER} {args.task}' marker (tinytrain-make-task --check lists "
          "them), then follow docs/adding.md, \"A task\"")
    return 0


if __name__ == "__main__":
    sys.exit(main())
