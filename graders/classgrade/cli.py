"""``tinytrain-grade-class SUBMISSIONS --out REPORT``: grade a class.

A command of its own rather than a subcommand of ``tinytrain-grade``: that command's first
argument is a submission folder, and a subcommand word would be ambiguous with a folder of
that name; ``tinytrain-make-template`` set the pattern of one command per job.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import hashlib
import io
import json
import os
import shutil
import signal
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .. import __version__
from .. import rubric as rubric_module
from ..cli import SEED_VARIABLE as SEED_ENV
from . import collect, exports, handback, history, similarity
from .collect import Entry, SubmissionProblem
from .gradebook import STATUS_LABELS, Row, grades_csv, load_score, make_row
from .grader_refs import grader_references
from .late import LatePolicy, parse_datetime, read_adjustments, read_times

EXIT_DONE, EXIT_USAGE, EXIT_INTERRUPTED = 0, 2, 130
STATE = "grading.json"
DEFAULT_TEMPLATE = Path(__file__).resolve().parents[2] / "student_template" / "tinytrain"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="tinytrain-grade-class",
        description="Grade every submission of a class with tinytrain-grade and write a "
                    "gradebook (grades.csv), per-student feedback, report.html and a "
                    "similarity check.")
    p.add_argument("submissions", help="a folder (or a zip of one) with one folder or zip per "
                   "student, a Gradescope export (submission_metadata.yml), or a GitHub "
                   "Classroom <assignment>-submissions folder")
    p.add_argument("--out", required=True, help="the report folder (reused to resume)")
    p.add_argument("--tasks", help="only these tasks or assignments, e.g. 1.2,1.3 or 2")
    p.add_argument("--seed", type=int, help="Hypothesis seed (default 0). A secret seed is "
                   "better given by --seed-file or $TINYTRAIN_GRADER_SEED: a command line can "
                   "be read by every process on the machine while the class is graded")
    p.add_argument("--seed-file", type=Path, help="read the seed from this file")
    p.add_argument("--profile", choices=["quick", "default", "thorough"], default="default")
    p.add_argument("--no-shrink", action="store_true", help="report first failing examples "
                   "unshrunk (same scores, faster on failing code)")
    p.add_argument("--jobs", "-j", type=int, default=1, help="gradings at once on this machine "
                   "(or Dask workers with --dask local); default 1")
    p.add_argument("--dask", metavar="ADDRESS", help="grade on a Dask cluster: a scheduler "
                   "address (tcp://host:8786) or 'local' for a local cluster of --jobs workers")
    p.add_argument("--timeout", type=float, default=1800, help="wall-clock limit of one "
                   "submission's grading in seconds (default 1800); the grader and everything "
                   "it started are killed after it")
    p.add_argument("--force", action="store_true", help="regrade every submission, even those "
                   "graded before with the same content and options")
    p.add_argument("--retry-failed", action="store_true", help="regrade submissions whose "
                   "grading crashed, errored or timed out before")
    p.add_argument("--deadline", help="the deadline, ISO 8601 (2024-03-01T23:59:00-08:00; no "
                   "offset means UTC)")
    p.add_argument("--late-penalty", type=float, default=10.0, metavar="PERCENT",
                   help="percent of the raw points lost per started day late (default 10)")
    p.add_argument("--late-cap", type=float, default=100.0, metavar="PERCENT",
                   help="the most a late submission loses, in percent (default 100)")
    p.add_argument("--grace-minutes", type=float, default=0.0,
                   help="minutes after the deadline still counted on time (default 0)")
    p.add_argument("--submission-times", type=Path, metavar="CSV", help="submission times: "
                   "columns submission,submitted_at, or GitHub Classroom's grades CSV "
                   "(student_repository_name, submission_timestamp); Gradescope exports carry "
                   "their own")
    p.add_argument("--adjustments", type=Path, metavar="CSV", help="per-student extensions "
                   "and overrides: columns submission and any of extension_days, "
                   "extension_hours (the deadline moves for that student), override_points "
                   "(the final points, penalty or not), note")
    p.add_argument("--roster", type=Path, metavar="CSV", help="who made each submission, for "
                   "the LMS exports (canvas.csv, gradescope.csv): columns submission, name, "
                   "sid, email, canvas_id, login, section; one row per student, a group's "
                   "members each on their own row")
    p.add_argument("--lms-assignment", metavar="NAME", help="the assignment's column in "
                   "canvas.csv (Canvas matches 'Homework 2 (1234)' to its assignment 1234); "
                   "default: the tasks graded")
    p.add_argument("--template", type=Path, default=DEFAULT_TEMPLATE, help="the student "
                   "template's tinytrain/ package: its code is not counted as similarity")
    p.add_argument("--similarity-common", type=int, metavar="N", help="code found in more than "
                   "N submissions is not counted as similarity (default: min(10, a third of the "
                   "class), at least 2; MOSS's -m)")
    p.add_argument("--known-sources", type=Path, action="append", default=[], metavar="DIR",
                   help="also compare every submission with this folder (last year's solutions, "
                   "a solution found online; a tinytrain/ package is compared by its lines that "
                   "differ from the template); repeatable. The grader's own modules that hold "
                   "code of the homework (graders/probes, graders/oracle) are always compared")
    p.add_argument("--title", help="the report's title")
    return p.parse_args(argv)


def resolve_seed(args: argparse.Namespace) -> tuple[int, str]:
    """The seed and where it came from: --seed, --seed-file, $TINYTRAIN_GRADER_SEED, or 0."""
    if args.seed is not None:
        return args.seed, "--seed"
    if args.seed_file is not None:
        text = args.seed_file.read_text().strip()
        return _int_seed(text, str(args.seed_file)), "secret, from a file"
    if os.environ.get(SEED_ENV, "").strip():
        return _int_seed(os.environ[SEED_ENV].strip(), SEED_ENV), f"secret, from ${SEED_ENV}"
    return 0, "the default"


def _int_seed(text: str, where: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"the seed in {where} is not an integer") from None


def _fail(message: str) -> int:
    print(f"tinytrain-grade-class: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def options_key(options: dict[str, Any], task_ids: list[str]) -> str:
    """What a grading depends on besides the submission: a change regrades everything."""
    rubric_text = rubric_module.RUBRIC_PATH.read_bytes()
    blob = json.dumps({"tasks": task_ids, "profile": options["profile"],
                       "no_shrink": options["no_shrink"], "seed": options["seed"],
                       "grader": __version__,
                       "rubric": hashlib.sha256(rubric_text).hexdigest()}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def read_state(folder: Path) -> dict[str, Any] | None:
    try:
        state = json.loads((folder / STATE).read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


HISTORY = "history.jsonl"


def record(folder: Path, entry: Entry, outcome: dict[str, Any], key: str) -> None:
    """Write a submission's files, its feedback page, then its state (last: a grading whose
    state is missing is graded again), and add the grading to the class's history."""
    folder.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        (folder / STATE).unlink()
    for stale in ("score.json", "results.json", "classroom.json", "pytest_report.json",
                  "feedback.txt"):
        with contextlib.suppress(FileNotFoundError):
            (folder / stale).unlink()
    for name, data in outcome.get("files", {}).items():
        tmp = folder / f".{name}.tmp"
        tmp.write_bytes(data)
        tmp.replace(folder / name)
    from . import report

    score = load_score(folder)
    report.write_text(folder / "feedback.html",
                      report.render_feedback(entry.name, entry.display, outcome, score))
    state = {k: outcome.get(k) for k in ("status", "reason", "exit_code", "duration", "host",
                                         "slot")}
    state.update(content_hash=entry.content_hash, options_key=key,
                 graded_at=datetime.now(UTC).isoformat(timespec="seconds"))
    report.write_text(folder / STATE, json.dumps(state, indent=2) + "\n")
    history.append(folder.parent.parent / HISTORY, entry.name, state, score)


class Progress:
    """A bar with the time left on a terminal (tqdm); one line per submission otherwise."""

    def __init__(self, total: int) -> None:
        self.total, self.done = total, 0
        self.bar = None
        if sys.stderr.isatty() and total:
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="submission", desc="grading", dynamic_ncols=True)

    def update(self, outcome: dict[str, Any]) -> None:
        self.done += 1
        status = outcome["status"]
        if self.bar is not None:
            self.bar.set_postfix_str(f"{outcome['name']}: {status}", refresh=False)
            self.bar.update(1)
        else:
            print(f"[{self.done}/{self.total}] {outcome['name']}: {status} "
                  f"({outcome.get('duration', 0):.1f} s)", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _on_sigterm(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _missing_extras() -> str | None:
    """The instructor extra's packages, imported up front for a one-line error."""
    missing = []
    for module in ("matplotlib", "copydetect", "yaml", "tqdm"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        return (f"missing {', '.join(missing)}: install the instructor extra "
                '(pip install -e ".[instructor]")')
    return None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if problem := _missing_extras():
        return _fail(problem)
    started = datetime.now(UTC)
    wall_start = time.monotonic()
    rubric = rubric_module.load()
    try:
        tasks = rubric.select(args.tasks)
        seed, seed_source = resolve_seed(args)
        policy = _policy(args)
    except (ValueError, OSError) as exc:
        return _fail(str(exc))
    if args.jobs < 1 or args.timeout <= 0:
        return _fail("--jobs and --timeout must be positive")
    for folder in args.known_sources:
        if not folder.is_dir():
            return _fail(f"--known-sources {folder}: not a folder")
    out = Path(args.out)
    students = out / "students"
    work = out / "work"
    try:
        students.mkdir(parents=True, exist_ok=True)
        entries, notes = collect.discover(Path(args.submissions), work)
        if args.submission_times:
            _apply_times(entries, read_times(args.submission_times), notes)
        roster = exports.read_roster(args.roster) if args.roster else None
        people, export_notes = exports.members(entries, roster)
        adjustments = _match_adjustments(
            entries, read_adjustments(args.adjustments) if args.adjustments else {}, people,
            notes)
    except (SubmissionProblem, ValueError, OSError) as exc:
        return _fail(str(exc))
    inside = [e for e in entries if e.source.resolve() == out.resolve()]
    if inside:  # --out inside SUBMISSIONS: the report is not a student
        entries = [e for e in entries if e not in inside]
        notes.append(f"skipped {inside[0].source.name}: it is the report folder")
    if not entries:
        return _fail(f"no submissions found in {args.submissions}")
    for entry in entries:
        collect.prepare(entry, work)

    options = {"tasks": ",".join(t.id for t in tasks) if args.tasks else None,
               "profile": args.profile, "no_shrink": args.no_shrink, "seed": seed,
               "timeout": args.timeout}
    key = options_key(options, [t.id for t in tasks])
    todo, reused = [], 0
    for entry in entries:
        state = read_state(students / entry.name)
        keep = (state is not None and not args.force and state.get("options_key") == key
                and state.get("content_hash") == entry.content_hash
                and not (args.retry_failed and state.get("status") != "graded")
                and (state.get("status") != "graded"
                     or (students / entry.name / "score.json").is_file()))
        if keep:
            reused += 1
        else:
            todo.append(entry)
    by_name = {e.name: e for e in entries}
    for entry in todo:
        if entry.problem:
            status, reason = "error", entry.problem
        elif missing := collect.missing_package(entry.root):
            status, reason = "no_package", missing
        else:
            continue
        record(students / entry.name, entry, {"name": entry.name, "status": status,
                                              "reason": reason, "duration": 0.0}, key)
    ungraded = {e.name for e in todo if e.problem or collect.missing_package(e.root)}
    jobs = [{"name": e.name, "archive": collect.pack(e.root), "options": options,
             "key": e.content_hash} for e in todo if e.name not in ungraded]

    from .job import clean_orphans

    orphans = clean_orphans()  # gradings left by a class run that was killed
    if orphans:
        notes.append(f"removed {len(orphans)} temporary folder(s) of gradings whose class run "
                     "had died (and stopped what was left of them)")
        print(notes[-1], file=sys.stderr)
    executor: Any = None
    progress = Progress(len(jobs))
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        if args.dask:
            from .execute import DaskExecutor

            executor = DaskExecutor(args.dask, args.jobs)
        else:
            from .execute import LocalExecutor

            executor = LocalExecutor(args.jobs)
        print(f"grading {len(jobs)} of {len(entries)} submissions ({reused} unchanged since "
              f"an earlier run) {executor.description}", file=sys.stderr, flush=True)
        with contextlib.closing(executor.run(jobs)) as outcomes:
            for outcome in outcomes:
                record(students / outcome["name"], by_name[outcome["name"]], outcome, key)
                progress.update(outcome)
    except KeyboardInterrupt:
        progress.close()
        done = sum(read_state(students / e.name) is not None for e in entries)
        print(f"\ninterrupted: {done} of {len(entries)} submissions have a grade; run the same "
              "command again to grade the rest", file=sys.stderr)
        return EXIT_INTERRUPTED
    except RuntimeError as exc:  # the cluster could not be reached
        return _fail(str(exc))
    finally:
        signal.signal(signal.SIGTERM, previous)
        progress.close()
        if executor is not None and hasattr(executor, "close"):
            executor.close()

    rows = []
    regraded = {e.name for e in todo}
    for entry in entries:
        folder = students / entry.name
        state = read_state(folder) or {"status": "error", "reason": "no grading recorded"}
        state["reused"] = entry.name not in regraded
        rows.append(make_row(entry, state, load_score(folder), tasks, policy,
                             adjustments.get(entry.name)))
    _note_versions(rows, notes)
    if policy is not None:
        unknown = [r.name for r in rows if r.entry.submitted_at is None]
        if unknown:
            notes.append(f"no submission time for {len(unknown)} submission(s), no penalty "
                         f"applied: {', '.join(unknown[:20])}")
    stale = sorted({p.name for p in students.iterdir() if p.is_dir()} - set(by_name))
    if stale:
        notes.append(f"ignored {len(stale)} folder(s) in {students} from earlier runs that are "
                     f"not in the submissions any more")

    from . import report

    pairs, info = _similarity(entries, out, args)
    report.write_text(out / "similarity.csv", _similarity_csv(pairs))
    report.write_text(out / "grades.csv", grades_csv(rows, tasks, policy))
    notes += export_notes
    assignment = args.lms_assignment or f"tinytrain {', '.join(t.id for t in tasks)}"
    report.write_text(out / "canvas.csv", exports.canvas_csv(rows, people, assignment))
    report.write_text(out / "gradescope.csv", exports.gradescope_csv(rows, people))
    for row in rows:
        handback.write(out / handback.HANDBACK / row.name, row, tasks,
                       [p.name for p in people.get(row.name, []) if p.name and roster])
    stale_handback = sorted({p.name for p in (out / handback.HANDBACK).iterdir()}
                            - set(by_name))
    for name in stale_handback:  # a hand-back of a submission no longer in the class
        shutil.rmtree(out / handback.HANDBACK / name)
    changes = history.changes(history.read(out / HISTORY), set(by_name))
    ctx = report.Context(
        title=args.title or f"tinytrain: class report ({len(entries)} submissions)",
        tasks=tasks, options=options, seed_source=seed_source, policy=policy,
        executor=executor.description, started=started,
        wall_time=time.monotonic() - wall_start, pairs=pairs, similarity_info=info,
        notes=notes, graded_now=len(todo), reused=reused, changes=changes)
    report.write_text(out / "report.html", report.render_report(rows, ctx))
    _summary(rows, out, len(todo), reused, pairs)
    return EXIT_DONE


def _policy(args: argparse.Namespace) -> LatePolicy | None:
    if not args.deadline:
        return None
    if args.late_penalty < 0 or not 0 <= args.late_cap <= 100 or args.grace_minutes < 0:
        raise ValueError("--late-penalty, --late-cap (0-100) and --grace-minutes must not be "
                         "negative")
    return LatePolicy(parse_datetime(args.deadline), args.late_penalty, args.late_cap,
                      timedelta(minutes=args.grace_minutes))


def _match_adjustments(entries: list[Entry], found: dict[str, Any],
                       people: dict[str, list[exports.Student]],
                       notes: list[str]) -> dict[str, Any]:
    """{entry name: its adjustment}, matched by submission name, or a student's name, SID,
    email or login (from the export or the roster)."""
    matched, used = {}, set()
    for entry in entries:
        members = [v for p in people.get(entry.name, []) for v in (p.name, p.sid, p.email,
                                                                  p.login) if v]
        for key in (entry.name, entry.source.name, entry.source.stem, *entry.names,
                    *entry.sids, *entry.emails, *members):
            if key in found:
                matched[entry.name] = found[key]
                used.add(key)
                break
    unused = sorted(set(found) - used)
    if unused:
        notes.append(f"adjustments for {len(unused)} name(s) that match no submission: "
                     f"{', '.join(unused[:20])}")
    return matched


def _apply_times(entries: list[Entry], times: dict[str, datetime], notes: list[str]) -> None:
    used = set()
    for entry in entries:
        for key in (entry.name, entry.source.name, entry.source.stem, *entry.names):
            if key in times:
                entry.submitted_at = times[key]
                used.add(key)
                break
    unused = sorted(set(times) - used)
    if unused:
        notes.append(f"submission times for {len(unused)} name(s) that match no submission: "
                     f"{', '.join(unused[:20])}")


def _note_versions(rows: list[Row], notes: list[str]) -> None:
    versions = {(r.score.get("grader_version"), r.score.get("environment", {}).get("torch"))
                for r in rows if r.score and r.status == "graded"}
    if len(versions) > 1:
        notes.append("WARNING: submissions were graded with different grader or torch "
                     f"versions: {sorted(map(str, versions))}; regrade with --force on one "
                     "installation")


def _similarity(entries: list[Entry], out: Path,
                args: argparse.Namespace) -> tuple[list[similarity.Pair], dict[str, Any]]:
    from . import report

    template = args.template if args.template and args.template.is_dir() else None
    documents = {}
    references = {}
    for entry in entries:
        if entry.root is None:
            continue
        found = grader_references(entry.root)
        if found:
            references[entry.name] = found
        path = out / "students" / entry.name / "solution_regions.py"
        report.write_text(path, similarity.solution_regions(entry.root, template))
        documents[entry.name] = path
    common = args.similarity_common or similarity.default_common_max(len(documents))
    reference = similarity.REFERENCE if similarity.REFERENCE.is_dir() else None
    try:
        known = similarity.known_source_documents(args.known_sources, template,
                                                  out / "known_sources")
        pairs, info = similarity.compare(documents, template, common, known=known,
                                         graders=similarity.grader_sources(),
                                         reference=reference)
    except (RuntimeError, OSError, ValueError) as exc:
        return [], {"error": str(exc), "compared": 0, "common_max": common,
                    "grader_references": references}
    info["grader_references"] = references
    if template is None:
        info["error"] = (f"no student template at {args.template}: the template's code counts "
                         "as similarity (give --template)")
    if reference is None:
        info["known_error"] = (f"no reference solution at {similarity.REFERENCE}: the grader's "
                               "modules are compared in full, with the copies of the reference "
                               "they hold")
    return pairs, info


def _similarity_csv(pairs: list[similarity.Pair]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["submission_a", "submission_b", "similarity", "similarity_a",
                     "similarity_b", "shared_tokens"])
    for p in pairs:
        writer.writerow([p.a, p.b, f"{p.similarity:.4f}", f"{p.similarity_a:.4f}",
                         f"{p.similarity_b:.4f}", p.shared_tokens])
    return buffer.getvalue()


def _summary(rows: list[Row], out: Path, graded_now: int, reused: int,
             pairs: list[similarity.Pair]) -> None:
    failed = [r for r in rows if r.status != "graded"]
    counts: dict[str, int] = {}
    for row in failed:
        label = STATUS_LABELS.get(row.status, row.status)
        counts[label] = counts.get(label, 0) + 1
    apart = "".join(f", {n} {label}" for label, n in sorted(counts.items()))
    print(f"graded {graded_now} submission(s), kept {reused} from an earlier run; "
          f"{len(rows) - len(failed)} graded, {len(failed)} not graded{apart}")
    for row in failed:
        print(f"  {row.name}: {row.grading_status}")
    between = [p for p in pairs if not p.known]
    if between and between[0].flagged:
        top = between[0]
        print(f"most similar: {top.a} and {top.b} ({top.similarity:.0%})")
    flagged = [p for p in pairs if p.known and p.flagged]
    if flagged:
        print(f"{len(flagged)} match(es) with known sources, the largest: {flagged[0].a} and "
              f"{flagged[0].b} ({flagged[0].shared_tokens} tokens)")
    print(f"wrote {out / 'grades.csv'}, {out / 'report.html'}, {out / 'similarity.csv'}")


if __name__ == "__main__":
    sys.exit(main())
