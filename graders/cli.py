"""``tinytrain-grade``: grade a submission and write score.json and results.json."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from . import rubric as rubric_module
from .report import Score, build_score, error_score
from .report.classroom import classroom_json
from .report.console import render
from .report.gradescope import results_json
from .runner.run import GradingError, run_suites

EXIT_GRADED = 0
EXIT_USAGE = 2
EXIT_INTERNAL = 3


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="tinytrain-grade",
        description="Grade a tinytrain submission against PyTorch.",
    )
    parser.add_argument("submission", help="folder that contains the tinytrain/ package")
    parser.add_argument("--out", default=".",
                        help="folder for score.json, results.json (Gradescope) and "
                             "classroom.json (GitHub Classroom)")
    parser.add_argument("--tasks", help="only these tasks or assignments, e.g. 1.2,1.3 or 2")
    parser.add_argument("--seed", type=int, default=0, help="Hypothesis seed (default 0)")
    parser.add_argument("--profile", choices=["quick", "default", "thorough"], default="default",
                        help="how many random examples each property test draws: quick (a "
                             "third, for fast feedback), default (used for grades), thorough "
                             "(8x)")
    parser.add_argument("--no-shrink", action="store_true",
                        help="report the first failing example found instead of shrinking it "
                             "to a minimal one: the same scores, faster on failing code")
    parser.add_argument("--no-sandbox", action="store_true",
                        help="run the submission in this process (for debugging with pdb)")
    parser.add_argument("--verbose", action="store_true", help="show every failing test")
    return parser.parse_args(argv)


def write_outputs(out: Path, score: Score) -> None:
    out.mkdir(parents=True, exist_ok=True)
    files = {"score.json": score.to_json(), "results.json": results_json(score),
             "classroom.json": classroom_json(score)}
    for name, payload in files.items():
        tmp = out / f".{name}.tmp"
        tmp.write_text(json.dumps(payload, indent=2, sort_keys=False) + "\n")
        os.replace(tmp, out / name)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = Path(args.out)
    rubric = rubric_module.load()
    try:
        tasks = rubric.select(args.tasks)
    except ValueError as exc:
        print(f"tinytrain-grade: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    submission = Path(args.submission)
    common = dict(seed=args.seed, profile=args.profile, sandbox=not args.no_sandbox)
    problem = _check_folder(submission)
    if problem:
        print(f"tinytrain-grade: error: {problem}", file=sys.stderr)
        write_outputs(out, error_score(str(submission), tasks, problem, **common))
        return EXIT_USAGE
    start = time.perf_counter()
    try:
        results = run_suites(submission.resolve(), rubric, tasks, seed=args.seed,
                             sandbox=not args.no_sandbox, profile=args.profile,
                             shrink=not args.no_shrink)
    except GradingError as exc:
        message = f"internal grader error: {exc}"
        print(f"tinytrain-grade: {message}", file=sys.stderr)
        write_outputs(out, error_score(str(submission), tasks, message, **common))
        return EXIT_INTERNAL
    score = build_score(str(submission), tasks, results, duration=time.perf_counter() - start,
                        **common)
    write_outputs(out, score)
    print(render(score, verbose=args.verbose))
    print(f"\nwrote score.json, results.json and classroom.json to {out}")
    return EXIT_GRADED


def _check_folder(submission: Path) -> str | None:
    """A one-line reason why ``submission`` cannot be graded at all, or None."""
    if not submission.exists():
        return f"submission folder {str(submission)!r} does not exist"
    if not submission.is_dir():
        return f"submission {str(submission)!r} is not a folder"
    if not os.access(submission, os.R_OK | os.X_OK):
        return f"submission folder {str(submission)!r} is not readable"
    return None


if __name__ == "__main__":
    sys.exit(main())
