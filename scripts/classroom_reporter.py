"""Run GitHub Classroom's real reporter (autograding-grading-reporter, tag v1) on a grading's
classroom.json, as the Classroom workflow does, and print what it prints.

    python scripts/classroom_reporter.py GRADING_DIR [--reporter PATH] [--single]

PATH (or $CLASSROOM_REPORTER) is a clone of the reporter's repository at tag v1, or any git
repository of it (a bare one too), from which tag v1 is cloned into a temporary folder.
Its bundled ``dist/main.js`` runs under node; nothing of it is copied into this project.
By default classroom.json is split into one runner per task, as the workflow does
(``python -m graders.report.classroom``); ``--single`` passes the whole file as one runner
``tinytrain``. Exits with the reporter's exit code (1 when a test failed, as in Actions).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graders.report.classroom import encode, split_runners  # noqa: E402

TAG = "v1"


def reporter_main(path: Path, scratch: Path) -> Path:
    """``dist/main.js`` of the reporter at tag v1: in ``path`` if it is a checkout of v1,
    else cloned from the repository at ``path`` into ``scratch``."""
    main = path / "dist" / "main.js"
    if main.is_file():
        head = subprocess.run(["git", "-C", str(path), "describe", "--tags", "--exact-match"],
                              capture_output=True, text=True)
        if head.returncode == 0 and head.stdout.strip() != TAG:
            raise SystemExit(f"{path} is checked out at {head.stdout.strip()}, not {TAG}")
        return main
    clone = scratch / "reporter"
    subprocess.run(["git", "-c", "advice.detachedHead=false", "clone", "--quiet", "--depth", "1",
                    "--branch", TAG, f"file://{path.resolve()}", str(clone)], check=True)
    return clone / "dist" / "main.js"


def reporter_env(document: dict, single: bool) -> dict[str, str]:
    """The environment the report step gets: ``INPUT_RUNNERS`` and ``<RUNNER>_RESULTS``."""
    runners = [("tinytrain", document)] if single else split_runners(document)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "INPUT_RUNNERS": ",".join(name for name, _ in runners)}
    for name, results in runners:
        env[f"{name.upper()}_RESULTS"] = encode(results)
    return env


def run_reporter(classroom_json: Path, reporter: Path, single: bool = False
                 ) -> subprocess.CompletedProcess:
    """Run the reporter under node on ``classroom_json``; its output and exit code."""
    import json

    document = json.loads(classroom_json.read_text())
    with tempfile.TemporaryDirectory(prefix="classroom-reporter-") as scratch:
        main = reporter_main(reporter, Path(scratch))
        return subprocess.run(["node", str(main)], env=reporter_env(document, single),
                              capture_output=True, text=True, timeout=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("grading", type=Path,
                        help="a grading's --out folder, or its classroom.json")
    parser.add_argument("--reporter", type=Path, default=os.environ.get("CLASSROOM_REPORTER"),
                        help="the reporter's repository (default: $CLASSROOM_REPORTER)")
    parser.add_argument("--single", action="store_true",
                        help="pass classroom.json as one runner instead of one per task")
    args = parser.parse_args(argv)
    if args.reporter is None:
        parser.error("give --reporter PATH or set CLASSROOM_REPORTER")
    path = args.grading / "classroom.json" if args.grading.is_dir() else args.grading
    proc = run_reporter(path, args.reporter, single=args.single)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
