"""Throughput of ``tinytrain-grade-class`` on a generated class: --jobs 1, --jobs 2 and a
local Dask cluster of 2 workers, on this machine.

    python benchmarks/bench_class.py                      # 30 students, task 1.1
    python benchmarks/bench_class.py --tasks all --configs jobs2 --verify   # the full check

The class (``tests/classgrade/class_builder.py``): the reference, the template, a submission that
hangs, one that crashes its worker, one that fills its memory, two near-copies, one
without a package, a corrupt zip, and known-wrong variants (``tests/mutants``), one per
task. Every configuration must give the same gradebook; ``--verify`` also grades every
submission alone with ``tinytrain-grade`` and compares each row, and checks that the two
near-copies top the similarity list. Gradings are single-threaded, so on a machine that
other jobs share the speed-up is bounded by the idle cores: the load average is printed
with each figure.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.classgrade.class_builder import build, full_class  # noqa: E402

CONFIGS = {"jobs1": ["--jobs", "1"], "jobs2": ["--jobs", "2"],
           "dask2": ["--dask", "local", "--jobs", "2"]}


def run_config(name: str, submissions: Path, out: Path, common: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_before = os.getloadavg()[0]
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "graders.classgrade.cli", str(submissions),
                           "--out", str(out), *common, *CONFIGS[name]],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{name} failed:\n{proc.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"config": name, "wall": wall, "cpu": cpu, "load_before": load_before,
            "load_after": os.getloadavg()[0], "stdout": proc.stdout}


def gradebook(out: Path) -> list[dict[str, str]]:
    with open(out / "grades.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def verify(submissions: Path, out: Path, tasks: list[str], scratch: Path, jobs: int) -> list[str]:
    """Grade every entry alone (the extracted copy for zips) and compare with the class."""
    rows = {r["file"]: r for r in gradebook(out)}
    problems = []
    names = [n for n in rows if n != "points-per-question"]

    def alone(name: str) -> tuple[str, dict | None]:
        state = json.loads((out / "students" / name / "grading.json").read_text())
        if state["status"] != "graded":
            return name, None
        folder = submissions / name
        if not folder.is_dir():
            unzipped = out / "work" / "unzipped" / name
            folder = next((p.parent for p in unzipped.rglob("tinytrain") if p.is_dir()), unzipped)
        target = scratch / "alone" / name
        subprocess.run([sys.executable, "-m", "graders.cli", str(folder), "--out", str(target),
                        *(["--tasks", ",".join(tasks)] if tasks else []), "--no-shrink"],
                       cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                       capture_output=True, text=True)
        return name, json.loads((target / "score.json").read_text())

    with ThreadPoolExecutor(jobs) as pool:
        for name, score in pool.map(alone, names):
            row = rows[name]
            if score is None:
                print(f"  {name}: not graded in the class ({row['grading_status']}), skipped")
                continue
            for task in score["tasks"]:
                if abs(float(row[task["id"]]) - task["score"]) > 1e-4:
                    problems.append(f"{name} task {task['id']}: class {row[task['id']]}, "
                                    f"alone {task['score']}")
            print(f"  {name}: class {row['total_points_earned']}, alone {score['score']:g}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--tasks", default="1.1", help="tasks to grade, or 'all' (default: 1.1)")
    parser.add_argument("--configs", default="jobs1,jobs2,dask2")
    parser.add_argument("--timeout", type=float, default=600,
                        help="tinytrain-grade-class --timeout (per submission)")
    parser.add_argument("--verify", action="store_true",
                        help="grade each submission alone too and compare the rows")
    parser.add_argument("--keep", type=Path, help="keep the class and reports in this folder")
    args = parser.parse_args()

    scratch = args.keep or Path(tempfile.mkdtemp(prefix="bench-class-"))
    scratch.mkdir(parents=True, exist_ok=True)
    submissions = scratch / "class"
    if not submissions.exists():
        build(submissions, full_class(args.students))
    count = len(list(submissions.iterdir()))
    tasks = [] if args.tasks == "all" else args.tasks.split(",")
    common = ["--no-shrink", "--timeout", str(args.timeout)]
    if tasks:
        common += ["--tasks", ",".join(tasks)]
    print(f"{count} submissions, tasks {args.tasks}, {os.cpu_count()} cores; "
          f"load average at start {os.getloadavg()[0]:.1f}")

    results = []
    for name in args.configs.split(","):
        out = scratch / f"report-{name}"
        result = run_config(name, submissions, out, [*common, "--force"])
        results.append(result)
        print(f"  {name}: {result['wall']:.0f} s, {count / result['wall'] * 60:.1f} "
              f"submissions/min (load {result['load_before']:.1f} -> {result['load_after']:.1f})",
              flush=True)

    base = next((r["wall"] for r in results if r["config"] == "jobs1"), None)
    print("\n| run | wall time | throughput | speed-up vs --jobs 1 | CPU time | load avg (1 min) |")
    print("|---|---|---|---|---|---|")
    for r in results:
        speedup = f"{base / r['wall']:.2f}x" if base else "-"
        print(f"| {r['config']} | {r['wall']:.0f} s | {count / r['wall'] * 60:.1f} /min | "
              f"{speedup} | {r['cpu']:.0f} s | {r['load_before']:.1f} -> {r['load_after']:.1f} |")

    books = {r["config"]: gradebook(scratch / f"report-{r['config']}") for r in results}
    first = next(iter(books.values()))
    strip = [{k: v for k, v in row.items()} for row in first]
    same = all(book == strip for book in books.values())
    print(f"\nsame gradebook from every configuration: {same}")
    report = scratch / f"report-{results[0]['config']}"
    print(results[0]["stdout"])
    with open(report / "similarity.csv", newline="") as handle:
        top = next(csv.DictReader(handle))
    print(f"top similarity pair: {top['submission_a']} / {top['submission_b']} "
          f"({float(top['similarity']):.0%}, {top['shared_tokens']} tokens)")
    ok = same and {top["submission_a"], top["submission_b"]} == {"copy-a", "copy-b"}
    if args.verify:
        problems = verify(submissions, report, tasks, scratch, jobs=2)
        print("every graded row equals grading it alone" if not problems else
              "MISMATCHES:\n" + "\n".join(problems))
        ok = ok and not problems
    print(f"\nclass and reports in {scratch}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
