"""Run the grader suites against one submission."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from ..harness.client import InProcessClient, SandboxClient
from ..harness.sandbox import Limits as SandboxLimits
from ..harness.sandbox import Sandbox
from ..rubric import Limits as RubricLimits
from ..rubric import Rubric, Task
from ..suites._seed import set_grading_seed
from .hypothesis_budget import HypothesisBudget
from .plugin import GradingPlugin
from .results import TestResult

RUNNING: list[GradingPlugin] = []  # the grading under way in this process
SUITES_DIR = Path(__file__).resolve().parents[1] / "suites"
SCRATCH: list[str] = []  # Hypothesis's folders of gradings under way
_NO_AUTOLOAD = "PYTEST_DISABLE_PLUGIN_AUTOLOAD"


def partial_results(why: str) -> list[TestResult] | None:
    """The results of the grading running in this process so far (``GradingPlugin``'s
    ``partial_results``), or None before any began."""
    return RUNNING[0].partial_results(why) if RUNNING else None


class GradingInterrupted(Exception):
    """Grading was stopped by Ctrl-C before it finished (``partial_results`` holds what
    finished)."""


class GradingError(Exception):
    """The grader could not run its suites (a bug or a broken installation)."""


def suite_folders(assignments: set[str]) -> list[str]:
    """The suite folders (``hwN_*``) of these assignments: only they are collected."""
    folders = [
        str(path) for path in sorted(SUITES_DIR.glob("hw*_*"))
        if path.is_dir() and path.name[2:].split("_", 1)[0] in assignments
    ]
    return folders or [str(SUITES_DIR)]


def run_suites(
    submission: Path,
    rubric: Rubric,
    tasks: tuple[Task, ...],
    seed: int = 0,
    sandbox: bool | Sandbox = True,
    profile: str = "default",
    shrink: bool = True,
    deadline: float = float("inf"),
    budget_s: float | None = None,
    progress: Any = None,
    instrument: Any = None,
) -> list[TestResult]:
    """Run every grader test of ``tasks`` against ``submission``; one result per test.
    ``sandbox`` is True (a sandbox made here), a ``Sandbox`` set up by the caller, or
    False (in-process). With ``shrink``, the first failure of each task is shrunk within
    a budget (``hypothesis_budget``); ``shrink=False`` skips Hypothesis's shrinking
    (every failure reports the first failing example found, not a minimal one). Tests
    not begun by ``deadline`` (``time.monotonic()``) are recorded as timeouts without
    running. ``progress`` (a ``report.console.Progress``) is told of each test begun and
    done. ``instrument`` (``InProcessClient``'s hook, for ``scripts/conformance.py``)
    needs ``sandbox=False``: a sandboxed grading of student code is never instrumented."""
    if instrument is not None and sandbox is not False:
        raise ValueError("an instrumented grading runs in-process only (sandbox=False)")
    limits = rubric.limits
    own_sandbox = None
    if sandbox is True:
        own_sandbox = sandbox = Sandbox(submission, limits=sandbox_limits(limits)).open()
    if sandbox:
        client: SandboxClient | InProcessClient = SandboxClient(
            submission,
            sandbox,
            call_timeout=limits.call_timeout_s,
            start_timeout=limits.start_timeout_s,
            cuda=any(t.id.split(".")[0] == "6" for t in tasks),
        )
    else:
        client = InProcessClient(submission, instrument=instrument)
    plugin = GradingPlugin(
        client,
        task_ids={t.id for t in tasks},
        known_tasks={t.id for t in rubric.tasks},
        test_budget=limits.test_budget_s,
        deadline=deadline,
        budget_s=budget_s,
        hypothesis=HypothesisBudget(quick=profile == "quick"),
        progress=progress,
    )
    RUNNING[:] = [plugin]
    try:
        with tempfile.TemporaryDirectory(prefix="tinytrain-grade-") as scratch:
            SCRATCH.append(scratch)  # for a grader stopped by a signal to remove
            os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = scratch
            os.environ["TINYTRAIN_GRADER_PROFILE"] = profile
            os.environ["TINYTRAIN_GRADER_SHRINK"] = "1" if shrink else "0"
            set_grading_seed(seed)
            args = [
                *suite_folders({t.assignment for t in tasks}),
                "-c", str(SUITES_DIR / "pytest.ini"),
                "--rootdir", str(SUITES_DIR),
                "-p", "no:cacheprovider",
                "-p", "no:terminal",
                # the checks' messages are their own: pytest's rewritten asserts would
                # ask the (disabled) terminal for a comparison and lose the message
                "--assert=plain",
                "-p", "no:unraisableexception",  # 5 full garbage collections at the end
                "-p", "_hypothesis_pytestplugin",
                f"--hypothesis-seed={seed}",
            ]
            # no other installed pytest plugin (xdist, pytest-benchmark, ...): importing
            # them, and rewriting their asserts, cost tenths of a second of every grading
            autoload = os.environ.get(_NO_AUTOLOAD)
            os.environ[_NO_AUTOLOAD] = "1"
            try:
                code = pytest.main(args, plugins=[plugin])
            finally:
                client.close()
                if autoload is None:
                    os.environ.pop(_NO_AUTOLOAD, None)
                else:
                    os.environ[_NO_AUTOLOAD] = autoload
    finally:
        if own_sandbox is not None:
            own_sandbox.close()
    if plugin.collection_errors:
        errors = "\n".join(plugin.collection_errors)
        raise GradingError(f"the grader suites failed to load:\n{errors}")
    graded = (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED)
    if code == pytest.ExitCode.INTERRUPTED:
        raise GradingInterrupted("Ctrl-C (SIGINT)")
    if code not in graded:
        raise GradingError(f"pytest stopped with exit code {int(code)}")
    return plugin.results


def sandbox_limits(limits: RubricLimits) -> SandboxLimits:
    """The worker's resource limits from the rubric's ``[limits]``."""
    return SandboxLimits(memory_mb=limits.memory_mb, file_mb=limits.file_mb,
                         nproc=limits.nproc, nofile=limits.nofile)
