"""The Python side of Gradescope's ``run_autograder``: find the submission's ``tinytrain/``
in the upload, then hand over to ``tinytrain-grade`` (``os.execv``: nothing of this
process, or of the bash script that started it, runs after the grader starts).

    python -m graders.deploy.gradescope --root /autograder --grader BIN/tinytrain-grade

Uploads come in several shapes: ``tinytrain/`` at the top (a repository), one or more
folders down (``hw1/tinytrain/``, a zip of a folder), or the package's own files at the
top (the folder's contents uploaded). The shallowest folder named ``tinytrain`` that holds
an ``__init__.py`` wins, and the folder that contains it is graded; failing that, an upload
with ``__init__.py`` at its top is the package itself and is graded from a copy named
``tinytrain``. Symbolic links are never followed here (the grader refuses them). With no
package at all, the score files say so, with a short listing of the upload.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections import deque
from pathlib import Path

PACKAGE = "tinytrain"
MAX_DEPTH = 6  # folders below the upload searched for tinytrain/
MAX_ENTRIES = 20_000  # entries looked at, at most (an upload may be huge)
LISTING_LINES = 30
SEED_FILE = "grader_seed"  # in the autograder zip: a secret seed for final grading
TASKS_FILE = "grader_tasks"  # in the autograder zip (--tasks): the tasks it grades
TASKS_ENV = "TINYTRAIN_GRADESCOPE_TASKS"  # for the project's tests only: grade fewer tasks


def _skip(entry: os.DirEntry) -> bool:
    return entry.name.startswith(".") or entry.name == "__MACOSX"


def _package_file(folder: Path) -> bool:
    init = folder / "__init__.py"
    return init.is_file() and not init.is_symlink()


def find_package(upload: Path) -> Path | None:
    """The shallowest real folder named ``tinytrain`` with an ``__init__.py`` in
    ``upload`` (breadth first, names sorted), or None."""
    queue: deque[tuple[Path, int]] = deque([(upload, 0)])
    seen = 0
    while queue:
        folder, depth = queue.popleft()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > MAX_ENTRIES:
                return None
            if _skip(entry) or not entry.is_dir(follow_symlinks=False):
                continue
            path = Path(entry.path)
            if entry.name == PACKAGE and _package_file(path):
                return path
            if depth + 1 < MAX_DEPTH:
                queue.append((path, depth + 1))
    return None


def listing(upload: Path, lines: int = LISTING_LINES) -> list[str]:
    """A short listing of ``upload`` (three levels), folders ending in ``/``."""
    out: list[str] = []
    more = 0

    def walk(folder: Path, prefix: str, depth: int) -> None:
        nonlocal more
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            is_dir = entry.is_dir(follow_symlinks=False)
            if len(out) >= lines:
                more += 1
                continue
            link = " (symbolic link)" if entry.is_symlink() else ""
            out.append(f"{prefix}{entry.name}{'/' if is_dir else ''}{link}")
            if is_dir and depth < 3:
                walk(Path(entry.path), f"{prefix}{entry.name}/", depth + 1)

    walk(upload, "", 1)
    if more:
        out.append(f"... and {more} more")
    return out or ["(the upload is empty)"]


def prepare(root: Path) -> tuple[Path | None, str]:
    """(the folder to grade, what was found), or (None, why nothing can be graded)."""
    upload = root / "submission"
    found = find_package(upload)
    if found is not None:
        where = found.relative_to(upload)
        return found.parent, f"grading {where}/ from your upload"
    if _package_file(upload):
        wrapped = root / "wrapped"
        shutil.rmtree(wrapped, ignore_errors=True)
        shutil.copytree(upload, wrapped / PACKAGE, symlinks=True)
        return wrapped, "your upload is the tinytrain package itself: grading it as tinytrain/"
    shown = "\n".join("  " + line for line in listing(upload))
    return None, (
        "no tinytrain package was found in your upload. The autograder looked for a folder "
        f"named tinytrain that holds __init__.py, up to {MAX_DEPTH} folders deep (and for "
        "__init__.py at the top of the upload). Upload the folder that contains tinytrain/, "
        f"or tinytrain/ itself. Your upload holds:\n{shown}"
    )


def zip_tasks(root: Path) -> str | None:
    """The task ids the autograder zip was built for (``--tasks``), or None: all."""
    path = root / "source" / TASKS_FILE
    if not path.is_file():
        return None
    return path.read_text().strip() or None


def _write_no_package(root: Path, reason: str, tasks_spec: str | None) -> None:
    from ..cli import write_outputs
    from ..report import error_score
    from ..rubric import load

    tasks = load().select(tasks_spec)
    score = error_score(str(root / "submission"), tasks, reason, seed=0, profile="default",
                        sandbox=True)
    write_outputs(root / "results", score)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m graders.deploy.gradescope",
                                     description="Gradescope's run_autograder, after bash.")
    parser.add_argument("--root", type=Path, default=Path("/autograder"))
    parser.add_argument("--grader", required=True, help="the tinytrain-grade to run")
    args = parser.parse_args(argv)
    root = args.root
    (root / "results").mkdir(parents=True, exist_ok=True)
    # the worker's user has no business in /autograder: the grader copies the submission
    # into the worker's own scratch folder
    os.chmod(root, 0o700)
    tasks_spec = os.environ.get(TASKS_ENV) or zip_tasks(root) or None
    target, note = prepare(root)
    print(note, flush=True)
    if target is None:
        _write_no_package(root, note, tasks_spec)
        return 0
    command = [args.grader, str(target), "--out", str(root / "results")]
    if tasks_spec:
        command += ["--tasks", tasks_spec]
    seed = root / "source" / SEED_FILE
    if seed.is_file():
        command += ["--seed-file", str(seed)]  # setup.sh checked that the grader takes it
    sys.stdout.flush()
    os.execv(args.grader, command)


if __name__ == "__main__":
    sys.exit(main())
