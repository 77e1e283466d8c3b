"""``tinytrain-gradescope-zip``: the autograder zip Gradescope builds its image from.

    tinytrain-gradescope-zip --out autograder.zip [--tasks 2] [--seed-file FILE]

At the zip's top: ``setup.sh`` and ``run_autograder`` (from ``deploy/gradescope/``), and
what ``pip install`` needs to install the grader: ``pyproject.toml``, the ``graders``
package, and a short ``README.md`` that pyproject names as the package's readme (the
repository's README explains solution markers, so it stays out). Nothing else of the repository goes in: no
``reference/`` (the solutions), no ``student_template/``, no project tests or mutants, no
template generator (``graders/authoring``). The build refuses to write a zip that holds a
solution marker. ``--seed-file`` adds a secret seed for final grading (``grader_seed``,
which only root can read in the image). ``--tasks`` (task ids or assignments, as
``tinytrain-grade --tasks`` takes them: ``2``, ``1.2,1.3``) makes one autograder per
assignment: the zip holds ``grader_tasks``, the task ids it grades, and ``run_autograder``
grades and shows those only (the summary's total is those tasks' points). The zip is
reproducible: same files, same bytes. Run it from a checkout of the repository.
"""

from __future__ import annotations

import argparse
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ("setup.sh", "run_autograder")
TOP_FILES = ("pyproject.toml",)
README = (b"# tinytrain-grader\n\nThe autograder of the tinytrain course kit, as shipped to "
          b"Gradescope (built by tinytrain-gradescope-zip).\n")
EXCLUDED = ("graders/authoring",)  # the template generator: not needed to grade
# spelt in two parts so that this file does not hold the markers it looks for
SOLUTION_MARKERS = ("BEGIN " + "SOLUTION", "END " + "SOLUTION")
SEED_NAME = "grader_seed"
TASKS_NAME = "grader_tasks"  # read by graders.deploy.gradescope
_EPOCH = (1980, 1, 1, 0, 0, 0)


def members(root: Path = ROOT) -> list[tuple[str, Path]]:
    """(name in the zip, file) for everything the zip holds, sorted."""
    missing = [n for n in TOP_FILES if not (root / n).is_file()]
    if missing or not (root / "deploy" / "gradescope").is_dir():
        raise FileNotFoundError(f"{root} is not a checkout of the tinytrain repository "
                                f"(missing: {', '.join(missing) or 'deploy/gradescope'})")
    found = [(name, root / "deploy" / "gradescope" / name) for name in SCRIPTS]
    found += [(name, root / name) for name in TOP_FILES]
    for path in sorted((root / "graders").rglob("*")):
        name = path.relative_to(root).as_posix()
        if (path.is_dir() or "__pycache__" in path.parts or path.suffix in (".pyc", ".pyo")
                or any(name == e or name.startswith(e + "/") for e in EXCLUDED)):
            continue
        if path.is_symlink():
            raise ValueError(f"{name} is a symbolic link: refusing to ship it")
        found.append((name, path))
    return sorted(found)


def select_tasks(spec: str, root: Path = ROOT) -> list[str]:
    """The task ids ``spec`` names in the checkout's rubric (ValueError when unknown)."""
    from ..rubric import load

    tasks = load(root / "graders" / "rubric.toml").select(spec)
    if not tasks:
        raise ValueError(f"--tasks {spec!r} names no task")
    return [t.id for t in tasks]


def build(out: Path, root: Path = ROOT, seed_file: Path | None = None,
          tasks: str | None = None) -> list[str]:
    """Write the zip to ``out``; the names it holds. ``tasks``: grade only these."""
    entries = members(root)
    task_ids = select_tasks(tasks, root) if tasks else None
    leaks = [name for name, path in entries
             if any(m.encode() in path.read_bytes() for m in SOLUTION_MARKERS)]
    if leaks:
        raise ValueError(f"solution markers in {', '.join(leaks)}: refusing to build")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, path in entries:
            _add(archive, name, path.read_bytes(), 0o755 if name in SCRIPTS else 0o644)
        _add(archive, "README.md", README, 0o644)
        if seed_file is not None:
            seed = seed_file.read_text().strip()
            if not seed.lstrip("-").isdigit():
                raise ValueError(f"{seed_file}: a seed is an integer, got {seed[:20]!r}")
            _add(archive, SEED_NAME, (seed + "\n").encode(), 0o600)
        if task_ids:
            _add(archive, TASKS_NAME, (",".join(task_ids) + "\n").encode(), 0o644)
    tmp.replace(out)
    return sorted([name for name, _ in entries] + ["README.md"]
                  + ([SEED_NAME] if seed_file else []) + ([TASKS_NAME] if task_ids else []))


def _add(archive: zipfile.ZipFile, name: str, data: bytes, mode: int) -> None:
    info = zipfile.ZipInfo(name, date_time=_EPOCH)
    info.external_attr = (0o100000 | mode) << 16  # a regular file with these permissions
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tinytrain-gradescope-zip",
                                     description="Build the Gradescope autograder zip.")
    parser.add_argument("--out", type=Path, default=Path("autograder.zip"))
    parser.add_argument("--seed-file", type=Path,
                        help="a file holding a secret seed for final grading")
    parser.add_argument("--tasks", help="grade only these tasks or assignments (one "
                        "autograder per assignment): 2, or 1.2,1.3; default all")
    args = parser.parse_args(argv)
    try:
        names = build(args.out, seed_file=args.seed_file, tasks=args.tasks)
    except (OSError, ValueError) as exc:
        print(f"tinytrain-gradescope-zip: error: {exc}", file=sys.stderr)
        return 2
    size = args.out.stat().st_size
    print(f"wrote {args.out}: {len(names)} files, {size / 1024:.0f} KiB")
    from ..rubric import load

    rubric = load(ROOT / "graders" / "rubric.toml")
    chosen = rubric.select(args.tasks)
    print(f"grades {len(chosen)} task(s) ({', '.join(t.id for t in chosen)}), "
          f"{sum(t.points for t in chosen):g} points")
    return 0


if __name__ == "__main__":
    sys.exit(main())
