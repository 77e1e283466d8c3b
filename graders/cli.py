"""``tinytrain-grade``: grade a submission and write score.json and results.json."""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

from . import rubric as rubric_module
from .harness import sandbox as sandbox_module
from .harness.sandbox import ProcessGuard, Sandbox, SandboxError, SubmissionRefused
from .report import Score, build_score, error_score, reproducers
from .report.console import Progress, render
from .report.files import write_outputs
from .report.pytest_json import PYTEST_REPORT
from .runner import run as run_module
from .runner.run import GradingError, run_suites, sandbox_limits

EXIT_GRADED = 0
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130  # Ctrl-C, as a shell reports it
SEED_VARIABLE = "TINYTRAIN_GRADER_SEED"
_PR_SET_DUMPABLE = 4
QUICK_NOTICE = ("\n--profile quick: this is not the grade. Each test ran the first third "
                "of the examples a grade runs (all of them once a test of its task had "
                "failed) and every explicit example, so a task can pass here and still "
                "fail when graded with the default settings.")


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors still leave score files (in ``--out``, or the
    current folder), as every other exit does, once a submission or ``--out`` is given
    (a bare ``tinytrain-grade`` leaves nothing behind)."""

    def __init__(self, argv: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._argv = argv

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        line = f"{self.prog}: error: {message}"
        print(line, file=sys.stderr)
        out = argparse.ArgumentParser(add_help=False, exit_on_error=False)
        out.add_argument("--out", default=".")
        for option in ("--tasks", "--seed", "--seed-file", "--profile", "--budget"):
            out.add_argument(option)  # as plain strings: their values are not a folder
        out.add_argument("submission", nargs="?", default="")
        try:
            known, _ = out.parse_known_args(self._argv)
        except (argparse.ArgumentError, SystemExit):  # --out without a folder
            self.exit(EXIT_USAGE)
        if not known.submission and not any(a == "--out" or a.startswith("--out=")
                                            for a in self._argv):
            self.exit(EXIT_USAGE)
        try:
            _write(Path(os.path.realpath(known.out)),
                   error_score(known.submission or "", rubric_module.load().tasks, message,
                               seed=0, profile="default", sandbox=True))
        except Exception as exc:  # noqa: BLE001 - the usage error is what gets reported
            print(f"{self.prog}: could not write the score files: {exc}", file=sys.stderr)
        self.exit(EXIT_USAGE)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = _Parser(
        sys.argv[1:] if argv is None else list(argv),
        prog="tinytrain-grade",
        description="Grade a tinytrain submission against PyTorch.",
    )
    parser.add_argument("submission", nargs="?", help="folder that contains the tinytrain/ package")
    parser.add_argument("--out", default=".",
                        help="folder for score.json, results.json (Gradescope) and "
                             "classroom.json (GitHub Classroom); default: the current "
                             "folder")
    parser.add_argument("--tasks", help="only these tasks or assignments, e.g. 1.2,1.3 or 2")
    parser.add_argument("--seed", type=int, default=None,
                        help="Hypothesis seed (default 0); visible to every user of the "
                             "machine: give a secret seed with --seed-file or the "
                             f"{SEED_VARIABLE} environment variable")
    parser.add_argument("--seed-file", type=Path, default=None,
                        help="read the Hypothesis seed from this file (a secret seed)")
    parser.add_argument("--profile", choices=["quick", "default", "thorough"], default="default",
                        help="how many random examples each property test draws: quick (the "
                             "first third of the default's, for fast feedback; not the grade), "
                             "default (used for grades), thorough (8x)")
    parser.add_argument("--no-shrink", action="store_true",
                        help="report the first failing example found instead of shrinking it "
                             "to a minimal one: the same scores, faster on failing code")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds for the whole grading (default: the rubric's "
                             "grading_budget_s); tests not begun by then are timeouts")
    parser.add_argument("--no-sandbox", action="store_true",
                        help="run the submission in this process (for debugging with pdb)")
    parser.add_argument("--prepare-sandbox", action="store_true",
                        help="create the worker user (as root) and build the worker "
                             "environment, then exit (for an image's set-up step)")
    parser.add_argument("--verbose", action="store_true", help="show every failing test")
    parser.add_argument("--explain", metavar="TASK",
                        help="print where a task is graded (its tests, probes, oracle "
                             "functions, solution files, mutants: docs/tasks.md), then exit")
    args = parser.parse_args(argv)
    if args.submission is None and not args.prepare_sandbox and args.explain is None:
        parser.error("the following arguments are required: submission")
    return args


def read_seed(args: argparse.Namespace) -> tuple[int, list[Path]]:
    """The seed and the secret files it came from. A seed comes from one place only:
    ``--seed``, ``--seed-file`` or the environment variable (removed from this process's
    environment once read, so nothing started later inherits it)."""
    secret = os.environ.pop(SEED_VARIABLE, None)
    given = [name for name, value in (("--seed", args.seed), ("--seed-file", args.seed_file),
                                      (SEED_VARIABLE, secret)) if value is not None]
    if len(given) > 1:
        raise ValueError(f"give the seed in one way only, not {' and '.join(given)}")
    if args.seed_file is not None:
        try:
            text = args.seed_file.read_text()
        except OSError as exc:
            raise ValueError(f"cannot read the seed file {str(args.seed_file)!r}: "
                             f"{exc.strerror}") from None
        return _parse_seed(text, "the seed file"), [args.seed_file]
    if secret is not None:
        return _parse_seed(secret, SEED_VARIABLE), []
    return (args.seed if args.seed is not None else 0), []


def _parse_seed(text: str, where: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError(f"{where} must hold an integer") from None


def prepare_sandbox() -> int:
    """``--prepare-sandbox``: the worker user and environment, made ahead of grading."""
    start = time.perf_counter()
    try:
        if sandbox_module.is_root():
            user, created = sandbox_module.acquire_user()
            print(f"worker user {user.name} (uid {user.uid}, gid {user.gid}): "
                  f"{'created' if created else 'exists'}")
        env, built = sandbox_module.worker_env(root_mode=sandbox_module.is_root())
        size = sandbox_module.env_size(env.path) / 1e6
        print(f"worker environment {env.path}: {'built' if built else 'already built'} "
              f"({size:.0f} MB of files, interpreter {env.python}) in "
              f"{time.perf_counter() - start:.1f} s")
        if sandbox_module.is_root():
            repaired = sandbox_module.repair_env(env.path)
            if repaired:
                print(f"worker environment: {len(repaired)} files the worker user could no "
                      "longer read were given private copies")
            sandbox_module.check_imports(user, env)
            print(f"worker user {user.name} imported every worker module (the grader's "
                  f"sealed, then {', '.join(sandbox_module.worker_modules(env))})")
            paths = sandbox_module.sensitive_paths()
            locked = sandbox_module.lock_down(user, env, paths)
            print("made unreadable to the worker user: " + (", ".join(locked) or "nothing needed it"))
            print("checked unreadable to the worker user: " + ", ".join(map(str, paths)))
            user.release()
        else:
            print("not root: no worker user (the worker will run as you; see README)")
    except SandboxError as exc:
        print(f"tinytrain-grade: error: {exc}", file=sys.stderr)
        return EXIT_INTERNAL
    return EXIT_GRADED


def explain(task_id: str) -> int:
    """``--explain TASK``: the task's entry of the task index (``docs/tasks.md``), read
    from a checkout (an installed grader has no reference/ or tests/mutants/)."""
    try:
        from graders.authoring import task_index
    except ImportError:  # the Gradescope zip leaves graders/authoring out
        task_index = None
    if task_index is None or not task_index.in_checkout():
        print("tinytrain-grade: error: --explain reads the project's source (reference/, "
              "tests/mutants/): run it from a checkout", file=sys.stderr)
        return EXIT_USAGE
    entry = task_index.explain(task_id)
    if entry is None:
        known = ", ".join(t.id for t in rubric_module.load().tasks)
        print(f"tinytrain-grade: error: unknown task {task_id!r} (known tasks: {known})",
              file=sys.stderr)
        return EXIT_USAGE
    print(entry, end="")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.explain is not None:
        return explain(args.explain)
    if args.prepare_sandbox:
        return prepare_sandbox()
    started = time.monotonic()
    # the grader reaps its orphans (daemons the submission starts end up as our children)
    # and its /proc files (environment, memory) are closed to processes of its own user
    guard = ProcessGuard()
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    out = Path(os.path.realpath(args.out))
    rubric = rubric_module.load()
    submission = Path(args.submission)
    try:
        tasks = rubric.select(args.tasks)
        seed, secrets = read_seed(args)
    except ValueError as exc:
        print(f"tinytrain-grade: error: {exc}", file=sys.stderr)
        _write(out, error_score(str(submission), rubric.tasks, str(exc), seed=0,
                                profile=args.profile, sandbox=not args.no_sandbox))
        return EXIT_USAGE
    common: dict[str, Any] = dict(seed=seed, profile=args.profile, sandbox=not args.no_sandbox)
    budget = args.budget if args.budget is not None else rubric.limits.grading_budget_s
    problem = _check_folder(submission)
    if problem:
        print(f"tinytrain-grade: error: {problem}", file=sys.stderr)
        _write(out, error_score(str(submission), tasks, problem, **common))
        return EXIT_USAGE

    box: Sandbox | None = None
    progress: Progress | None = None
    stderr = os.dup(2)  # pytest captures fd 2 while a test runs

    def stop(signum: int, frame: Any) -> None:
        """SIGTERM/SIGHUP/SIGINT (Ctrl-C): nothing of the submission outlives the grader,
        the tasks that finished keep their scores, and the score files say grading did not
        finish."""
        for other in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(other, signal.SIG_IGN)
        interrupted = signum == signal.SIGINT
        code = EXIT_INTERRUPTED if interrupted else EXIT_INTERNAL
        try:
            if box is not None:
                box.close()
            guard.kill_descendants()
            for folder in run_module.SCRATCH:
                shutil.rmtree(folder, ignore_errors=True)
            how = "interrupted (Ctrl-C)" if interrupted else \
                f"stopped by {signal.Signals(signum).name}"
            message = f"grading was {how} before it finished"
            partial = run_module.partial_results(f"grading was {how}")
            if progress is not None:
                progress.close()
            if partial is None:
                score = error_score(str(submission), tasks, message, **common)
            else:
                score = build_score(str(submission), tasks, partial,
                                    duration=time.monotonic() - started, **common)
                finished = [t for t in score.tasks
                            if t.tests and not any(r.message.startswith("not run: grading was")
                                                   for r in t.tests)]
                message += (f": the {len(finished)} of {len(score.tasks)} tasks that finished "
                            "keep their scores")
                score.error = message
            os.write(stderr, f"tinytrain-grade: {message}\n".encode())
            _write(out, score)
            if box is not None:
                box.restore_out()
        finally:
            os._exit(code)

    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, stop)
    progress = Progress.for_terminal(sys.stdout)
    start = time.perf_counter()
    try:
        if not args.no_sandbox:
            box = Sandbox(submission, out, secrets=secrets,
                          limits=sandbox_limits(rubric.limits), guard=guard)
            box.open()
        else:
            refused = sandbox_module.check_submission(Path(os.path.realpath(submission)))
            if refused:
                raise SubmissionRefused(refused)
        try:
            results = run_suites(Path(os.path.realpath(submission)), rubric, tasks, seed=seed,
                                 sandbox=box if box is not None else False,
                                 profile=args.profile, shrink=not args.no_shrink,
                                 deadline=started + budget, budget_s=budget, progress=progress)
        finally:
            if progress is not None:
                progress.close()
    except SubmissionRefused as exc:
        message = f"submission refused: {exc}"
        print(f"tinytrain-grade: error: {message}", file=sys.stderr)
        _finish(box, guard)
        _write(out, error_score(str(submission), tasks, message, **common), box)
        return EXIT_USAGE
    except (GradingError, SandboxError) as exc:
        message = f"internal grader error: {exc}"
        print(f"tinytrain-grade: {message}", file=sys.stderr)
        _finish(box, guard)
        _write(out, error_score(str(submission), tasks, message, **common), box)
        return EXIT_INTERNAL
    except BaseException:
        _finish(box, guard)
        raise
    # every process of the submission is gone before a score is written
    _finish(box, guard)
    score = build_score(str(submission), tasks, results, duration=time.perf_counter() - start,
                        **common)
    score.environment["sandbox"] = box.describe() if box is not None else "none (in-process)"
    if box is not None and box.given_restored:
        score.environment["given_files_restored"] = ", ".join(box.given_restored)
    try:
        repro_files = reproducers.write(out, score)
    except OSError as exc:  # the score files matter more
        print(f"tinytrain-grade: could not write the reproducers: {exc}", file=sys.stderr)
        repro_files = {}
    failures = _write(out, score, box)
    print(render(score, verbose=args.verbose, reproducer_files=repro_files))
    if args.profile == "quick":
        print(QUICK_NOTICE)
    if failures:
        return EXIT_INTERNAL
    print(f"\nwrote score.json, results.json, classroom.json and {PYTEST_REPORT} to {out}")
    return EXIT_GRADED


def _finish(box: Sandbox | None, guard: ProcessGuard) -> None:
    if box is not None:
        box.close()
    guard.kill_descendants()


def _write(out: Path, score: Score, box: Sandbox | None = None) -> list[str]:
    failures = write_outputs(out, score)
    if box is not None:
        box.restore_out()
    for failure in failures:
        print(f"tinytrain-grade: could not write {failure}", file=sys.stderr)
    return failures


def _check_folder(submission: Path) -> str | None:
    """A one-line reason why ``submission`` cannot be graded at all, or None."""
    if not submission.exists():
        return f"submission folder {str(submission)!r} does not exist"
    if not submission.is_dir():
        return f"submission {str(submission)!r} is not a folder"
    if not os.access(submission, os.R_OK | os.X_OK):
        return f"submission folder {str(submission)!r} is not readable"
    package = submission / "tinytrain"
    if (submission / "__init__.py").is_file() and not package.is_dir():
        parent = os.path.dirname(os.path.abspath(submission))
        if not submission.is_absolute():
            parent = os.path.relpath(parent)
        return (f"{str(submission)!r} is the tinytrain package itself (it holds __init__.py, "
                f"no tinytrain/ folder): pass the folder that contains tinytrain/ "
                f"({parent!r})")
    if not os.path.lexists(package):
        nearest = _nearest_package(submission)
        if nearest is not None:
            where = os.path.join(str(submission), str(nearest.parent.relative_to(submission)))
            return (f"no tinytrain/ folder in {str(submission)!r}; the nearest one is "
                    f"{str(nearest.relative_to(submission))!r}: pass {os.path.normpath(where)!r}")
        return (f"no tinytrain/ folder in {str(submission)!r} (nor in the folders below it): "
                "pass the folder that contains your tinytrain package")
    return None


_SKIPPED_FOLDERS = frozenset({"node_modules", "site-packages", "__pycache__", "__MACOSX"})


def _nearest_package(folder: Path, depth: int = 4, limit: int = 5000) -> Path | None:
    """The shallowest ``tinytrain/`` holding ``__init__.py`` below ``folder`` (breadth
    first, names sorted, hidden folders and environments skipped, links not followed)."""
    queue = [(folder, 0)]
    seen = 0
    while queue:
        current, level = queue.pop(0)
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > limit:
                return None
            if (entry.name.startswith(".") or entry.name in _SKIPPED_FOLDERS
                    or not entry.is_dir(follow_symlinks=False)):
                continue
            path = Path(entry.path)
            if entry.name == "tinytrain" and (path / "__init__.py").is_file():
                return path
            if level + 1 < depth and not (path / "pyvenv.cfg").exists():
                queue.append((path, level + 1))
    return None


if __name__ == "__main__":
    sys.exit(main())
