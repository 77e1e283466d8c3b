"""How long a student waits for feedback on one task with a bug: a known-wrong variant
(``tests/mutants/``) per assignment, graded with ``tinytrain-grade --tasks TASK`` (the
variant's own task), as a student grades the task they work on.

    python benchmarks/bench_feedback.py                            # default settings
    python benchmarks/bench_feedback.py --modes default,no-shrink,quick
    python benchmarks/bench_feedback.py --baseline /work/main      # compare with another grader
    python benchmarks/bench_feedback.py --mutants sum-to-shape-ignores-size-one-dims

The goal (issue 11): with the default settings (the ones grades use) at most 30 s of wall
time on the course's 2-core machine, and the first failure of the task shown with a
minimal example. For each grading it prints the wall time, the CPU time of the grader and
its worker (which other jobs on the machine affect less) and the load average before and
after. It also checks that scores cannot have changed:

- every mode gives the same status to every test as the default settings; ``quick``
  runs the first of the default's examples, so it may miss failures (and says it is not
  the grade), but every failure it reports the default reports too;
- with ``--baseline CHECKOUT`` the same variants are graded with that checkout's grader
  (``python -m graders.cli`` run there: an older version, say) with its default settings;
  every test must get the same status, and the first failure of the task the same
  message (minimised as far as the baseline's shrinking went).

Exit code 1 if a check fails or a default grading is over ``--goal`` seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.mutants import all_mutants  # noqa: E402

# one variant per assignment, each a one-line mistake that fails many of its task's
# tests (a broken helper, a wrong rule everywhere)
DEFAULT_MUTANTS = [
    "shared-parameter-one-path",            # 1.2
    "sum-to-shape-ignores-size-one-dims",   # 2.1: issue 11's 37/54
    "view-write-no-version-bump",           # 3.1
    "opmath-not-widened",                   # 4.1
    "layernorm-unbiased-variance",          # 5.9
    "cuda-add-unmasked-tail",               # 6.1
    "ddp-sums-gradients",                   # 7.1
]
MODES = {"default": [], "no-shrink": ["--no-shrink"], "quick": ["--profile", "quick"]}


def grade(root: Path, submission: Path, out: Path, task: str, flags: list[str]) -> dict:
    """Grade with the grader of checkout ``root``; score.json plus timings."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()[0]
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "graders.cli", str(submission), "--out",
                           str(out), "--tasks", task, *flags],
                          cwd=root, env=env, capture_output=True, text=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"grading {submission} failed ({proc.returncode}):\n"
                         f"{proc.stderr[-3000:]}")
    score = json.loads((out / "score.json").read_text())
    score["_wall"] = wall
    score["_cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    score["_load"] = (load, os.getloadavg()[0])
    score["_stdout"] = proc.stdout
    return score


def statuses(score: dict) -> dict[str, str]:
    return {f"{t['id']} {r['name']}": r["status"] for t in score["tasks"] for r in t["tests"]}


def first_failure(score: dict) -> dict | None:
    return next((r for t in score["tasks"] for r in t["tests"] if r["status"] != "passed"),
                None)


def passed(score: dict) -> str:
    tests = [r for t in score["tasks"] for r in t["tests"]]
    return f"{sum(r['status'] == 'passed' for r in tests)}/{len(tests)}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mutants", default=",".join(DEFAULT_MUTANTS),
                        help="variant ids from tests/mutants (default: one per assignment)")
    parser.add_argument("--modes", default="default",
                        help=f"comma-separated, of {', '.join(MODES)} (default: default)")
    parser.add_argument("--baseline", type=Path,
                        help="a checkout whose grader's default grading to compare with")
    parser.add_argument("--goal", type=float, default=30.0,
                        help="seconds of wall time a default grading may take (default 30)")
    parser.add_argument("--keep", type=Path, help="keep submissions and score files here")
    args = parser.parse_args()

    known = {m.id: m for m in all_mutants()}
    chosen = [known[name] for name in args.mutants.split(",")]
    modes = args.modes.split(",")
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="bench-feedback-"))
    print(f"{os.cpu_count()} cores; load average at start {os.getloadavg()[0]:.1f}; "
          f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}",
          flush=True)
    rows, problems = [], []
    for mutant in chosen:
        submission = scratch / mutant.id / "submission"
        if not submission.exists():
            mutant.apply(submission)
        graded = {}
        for mode in modes:
            graded[mode] = grade(ROOT, submission, scratch / mutant.id / mode, mutant.task,
                                 MODES[mode])
        if args.baseline:
            graded["baseline"] = grade(args.baseline.resolve(), submission,
                                       scratch / mutant.id / "baseline", mutant.task, [])
        for mode, score in graded.items():
            rows.append((mutant, mode, score))
            print(f"  {mutant.id} ({mutant.task}) {mode}: {score['_wall']:.1f} s wall, "
                  f"{score['_cpu']:.1f} s CPU, {passed(score)} passed, load "
                  f"{score['_load'][0]:.1f} -> {score['_load'][1]:.1f}", flush=True)
        reference = graded.get("default")
        for mode, score in graded.items():
            if reference is None or mode == "default":
                continue
            score["_same"] = statuses(score) == statuses(reference)
            if mode == "quick":  # may miss failures, never adds one
                failing = {k for k, v in statuses(score).items() if v != "passed"}
                score["_same"] = all(statuses(reference)[k] == v for k, v in
                                     statuses(score).items() if k in failing)
            if not score["_same"]:
                differ = [k for k, v in statuses(score).items()
                          if statuses(reference).get(k) != v]
                problems.append(f"{mutant.id}: {mode} and default give different statuses "
                                f"to {differ}")
        if reference is not None and "baseline" in graded:
            ours, theirs = first_failure(reference), first_failure(graded["baseline"])
            graded["baseline"]["_first"] = ((ours or {}).get("message")
                                            == (theirs or {}).get("message"))
            if not graded["baseline"]["_first"]:
                problems.append(f"{mutant.id}: the first failure's message differs from the "
                                "baseline's")
        if reference is not None and reference["_wall"] > args.goal:
            problems.append(f"{mutant.id}: default grading took {reference['_wall']:.1f} s, "
                            f"over the {args.goal:g} s goal")

    print("\n| assignment | variant (task) | settings | wall | CPU | tests passed | "
          "statuses as default | load avg (1 min) |")
    print("|---|---|---|---|---|---|---|---|")
    for mutant, mode, score in rows:
        same = {True: "same", False: "DIFFERENT", None: "-"}[score.get("_same")]
        if "_first" in score:
            same += ", first failure's message too" if score["_first"] else ", FIRST DIFFERS"
        print(f"| {mutant.assignment} | {mutant.id} ({mutant.task}) | {mode} | "
              f"{score['_wall']:.0f} s | {score['_cpu']:.1f} s | {passed(score)} | {same} | "
              f"{score['_load'][0]:.1f} -> {score['_load'][1]:.1f} |")
    print(f"\nuptime at the end: "
          f"{subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    print("all checks passed" if not problems else "PROBLEMS:\n" + "\n".join(problems))
    print(f"submissions and score files in {scratch}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
