"""The table printed for people, and the progress line shown while grading on a terminal."""

from __future__ import annotations

import os
import re
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from ..runner.results import TestResult
from . import reproducers
from .score import Score

_SYMBOL = {"passed": "ok", "failed": "FAIL", "error": "ERROR", "timeout": "TIMEOUT",
           "not_implemented": "todo"}
WIDTH = 100
MESSAGE_LINES = 40  # of one test's message
OUTPUT_LINES = 10  # of what one test printed (OUTPUT_LINES_VERBOSE with --verbose)
OUTPUT_LINES_VERBOSE = 40
FRAMES = 3  # innermost traceback frames shown (and the outermost); score.json has them all
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)')


def render(score: Score, verbose: bool = False,
           reproducer_files: dict[tuple[str, str], Path] | None = None) -> str:
    """The score table, then the problems: the first failing test of each task (every one
    with ``verbose``) with its message, its reproducer whole (and the file it was written
    to, from ``reproducer_files``), and what it printed, one line per task for tests that
    stop at an unfinished stub."""
    files = reproducer_files or {}
    lines = []
    if score.error:
        lines.append(f"grading failed: {score.error}")
    width = max([len(t.task.title) for t in score.tasks] + [10])
    lines.append(f"{'task':<6} {'title':<{width}} {'passed':>8} {'score':>13}")
    for t in score.tasks:
        lines.append(f"{t.task.id:<6} {t.task.title:<{width}} {t.passed:>3}/{len(t.tests):<4} "
                     f"{t.score:>6.2f} / {t.task.points:<5g}")
    lines.append(f"{'':<6} {'total':<{width}} {'':>8} {score.score:>6.2f} / {score.max_score:<5g}")
    body: list[str] = []
    hidden = 0
    shown_messages: dict[str, str] = {}
    for t in score.tasks:
        todo = [r for r in t.tests if r.status == "not_implemented"]
        problems = [r for r in t.tests if r.status not in ("passed", "not_implemented")]
        shown = problems if verbose else problems[:1]
        hidden += len(problems) - len(shown)
        for r in shown:
            body.extend(_problem(t.task.id, r, verbose, shown_messages,
                                 files.get((t.task.id, r.name))))
        if verbose:  # what passing tests printed too
            for r in t.tests:
                if r.status == "passed" and r.output:
                    body.append(f"[ok] {t.task.id} {r.name}")
                    body.extend(_printed(r.output, OUTPUT_LINES_VERBOSE))
        if todo and verbose:
            body.extend(f"[todo] {t.task.id} {r.name}: {_stub(r.message)}" for r in todo)
        elif todo:
            body.append(_todo_line(t.task.id, todo, len(t.tests)))
    if body:
        lines.append("")
        lines.extend(body)
        if hidden:
            lines.append(f"({hidden} more failing test{'s' * (hidden > 1)}; see score.json or "
                         "run with --verbose)")
    return "\n".join(lines)


def _problem(task: str, r: TestResult, verbose: bool, seen: dict[str, str],
             repro_file: Path | None = None) -> list[str]:
    """A failing test: its name and description, its message (the traceback cut to its
    innermost frames; a reproducer never cut), what it printed. A message already shown is
    not repeated."""
    head = f"[{_SYMBOL[r.status]}] {task} {r.name}" + (f": {r.description}" if r.description
                                                       else "")
    lines = textwrap.wrap(head, WIDTH, subsequent_indent="  ", break_long_words=False,
                          break_on_hyphens=False) or [head]
    if r.message and r.message in seen:
        lines.append(f"    the same as {seen[r.message]} above")
    elif r.message:
        seen[r.message] = f"{task} {r.name}"
        script = reproducers.extract(r.message)
        text = r.message
        if script is not None:
            text = "\n".join(line for line in r.message.splitlines()
                             [:_marker_line(r.message)])
        message = _innermost_frames(text.splitlines())
        if len(message) > MESSAGE_LINES:
            left = len(message) - MESSAGE_LINES
            message = [*message[:MESSAGE_LINES], f"[... {left} more lines in score.json]"]
        lines.extend("    " + line for line in message)
        if script is not None:
            where = f" (python {_shown_path(repro_file)})" if repro_file is not None else ""
            lines.append(f"      {reproducers.MARKER}{where}")
            lines.extend("        " + line for line in script.splitlines())
    if r.output:
        lines.extend(_printed(r.output, OUTPUT_LINES_VERBOSE if verbose else OUTPUT_LINES))
    return lines


def _marker_line(message: str) -> int:
    lines = message.splitlines()
    return next(i for i, line in enumerate(lines) if line.strip() == reproducers.MARKER)


def _shown_path(path: Path) -> str:
    """``path`` from the current folder when it is below it, else in full."""
    relative = os.path.relpath(path)
    return str(path) if relative.startswith("..") else relative


def _printed(output: str, limit: int) -> list[str]:
    """What a test's submission code printed, its first ``limit`` lines."""
    printed = output.splitlines()
    lines = ["    your code printed:", *("      " + line for line in printed[:limit])]
    if len(printed) > limit:
        lines.append(f"      [... {len(printed) - limit} more lines in score.json]")
    return lines


def _innermost_frames(lines: list[str], keep: int = FRAMES) -> list[str]:
    """``lines`` with each traceback in them cut to its outermost frame and its ``keep``
    innermost ones (the frame where the submission raised is the one to read)."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        if not _FRAME.match(lines[i]):
            out.append(lines[i])
            i += 1
            continue
        frames: list[list[str]] = []
        indent = len(lines[i]) - len(lines[i].lstrip())
        while i < len(lines) and _FRAME.match(lines[i]):
            frame = [lines[i]]
            i += 1
            while (i < len(lines) and not _FRAME.match(lines[i])
                   and (len(lines[i]) - len(lines[i].lstrip()) > indent
                        or lines[i].lstrip().startswith("[Previous line repeated"))):
                frame.append(lines[i])
                i += 1
            frames.append(frame)
        hang = bool(out) and "innermost first" in out[-1]  # faulthandler's order, 8 at most
        if len(frames) > keep + 1 and not hang:
            # where the submission was entered, then the innermost frames
            left = len(frames) - keep - 1
            note = " " * indent + f"[... {left} more frame{'s' * (left > 1)} in score.json]"
            frames = [frames[0], [note], *frames[-keep:]]
        out.extend(line for frame in frames for line in frame)
    return out


def _stub(message: str) -> str:
    """One line for a test that reached a stub: its message and where it was raised."""
    lines = message.splitlines()
    first = lines[0] if lines else ""
    text = first.removeprefix("NotImplementedError: ").strip() or first or "NotImplementedError"
    sites = [m for m in map(_FRAME.match, lines) if m]
    if not sites:
        return text
    return f"{text} ({sites[-1]['file']}, line {sites[-1]['line']})"


def _todo_line(task: str, todo: list[TestResult], total: int) -> str:
    """One line for a task's tests that stop at unfinished stubs."""
    stubs = list(dict.fromkeys(_stub(r.message) for r in todo))
    more = f", and {len(stubs) - 1} other stubs" if len(stubs) > 1 else ""
    return f"[todo] {task}: {len(todo)} of {total} tests stop at a stub: {stubs[0]}{more}"


class Progress:
    """One line, rewritten in place: the task being graded, how many of its tests are
    done, the test running and the time so far (refreshed every ``tick`` seconds, so a
    long test still shows the grader at work). Only for a terminal: ``for_terminal``
    gives None elsewhere (a log, CI output), so nothing is written there."""

    def __init__(self, fd: int, tick: float | None = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.fd = fd
        self.clock = clock
        self.started = clock()
        self._state = "starting: loading the grader's tests"
        self._test = ""
        self._shown = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._draw()
        if tick is not None:
            threading.Thread(target=self._refresh, args=(tick,), daemon=True).start()

    @classmethod
    def for_terminal(cls, stream: IO[str]) -> Progress | None:
        """A progress line on ``stream`` if it is a terminal, else None. It writes to a
        duplicate of the stream's file descriptor, made now: pytest captures fd 1 while a
        test runs."""
        try:
            fd = stream.fileno()
            return cls(os.dup(fd)) if os.isatty(fd) else None
        except (OSError, ValueError, AttributeError):  # no file descriptor: not a terminal
            return None

    def update(self, task: str, done: int, total: int, task_number: int, tasks: int,
               test: str = "") -> None:
        """Task ``task`` (the ``task_number``-th of ``tasks``) has ``done`` of its
        ``total`` tests done; ``test`` is running."""
        self._state = (f"grading task {task} ({task_number} of {tasks}): {done}/{total} "
                       "tests done")
        self._test = test
        self._draw()

    def close(self) -> None:
        """Remove the line (before the table is printed) and close the descriptor."""
        self._stop.set()
        locked = self._lock.acquire(timeout=1.0)
        try:
            if self._shown:
                self._write("\r\x1b[K")
                self._shown = False
            if self.fd >= 0:
                os.close(self.fd)
                self.fd = -1
        finally:
            if locked:
                self._lock.release()

    def _refresh(self, tick: float) -> None:
        while not self._stop.wait(tick):
            self._draw()

    def _draw(self) -> None:
        with self._lock:
            if self._stop.is_set() or self.fd < 0:
                return
            try:
                columns = os.get_terminal_size(self.fd).columns or 80  # 0: size unknown
            except OSError:
                columns = 80
            text = f"{self._state}, {self.clock() - self.started:.0f} s"
            if self._test:
                text += f": {self._test}"
            # one row only: a line that wraps cannot be rewritten in place
            self._write("\r" + text[:max(columns - 1, 10)] + "\x1b[K")
            self._shown = True

    def _write(self, text: str) -> None:
        try:
            os.write(self.fd, text.encode())
        except OSError:  # a terminal gone away costs the grading nothing
            pass
