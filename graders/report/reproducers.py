"""Reproducers as files: each failing test whose message ends with ``reproduce:`` and a
script gets that script, whole, in ``<out>/repro/<task>-<test>.py``, runnable as
``python <out>/repro/<file>`` from the folder that holds ``tinytrain/``. The console
prints the path and the script uncut (a reproducer cut short can hide the line that
shows the bug).

A reproducer names the other tasks it needs (a backward pass needs the engine of 1.1
and 1.2): until they are done it stops at their ``NotImplementedError``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .score import Score

MARKER = "reproduce:"
FOLDER = "repro"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
# what a script uses -> the tasks that make it work (other than the one it reproduces)
_NEEDS = (
    (re.compile(r"\.backward\(|autograd\.grad\(|\.grad\b"), ("1.1", "1.2")),
    (re.compile(r"requires_grad"), ("1.1",)),
    (re.compile(r"no_grad|enable_grad|set_grad_enabled|inference_mode"), ("1.3",)),
    (re.compile(r"retain_grad|register_hook|\.detach\("), ("1.4",)),
)
PRELUDE = (
    "import os as _os, sys as _sys\n"
    "_sys.path.insert(0, _os.getcwd())  # the tinytrain/ of the folder you run this from\n"
)


def extract(message: str) -> str | None:
    """The script after a ``reproduce:`` line of a message (its indentation removed), or
    None."""
    lines = message.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == MARKER:
            base = len(line) - len(line.lstrip())
            body = []
            for text in lines[i + 1:]:
                if text.strip() and len(text) - len(text.lstrip()) <= base:
                    break
                body.append(text)
            while body and not body[-1].strip():
                body.pop()
            if not body:
                return None
            cut = min(len(t) - len(t.lstrip()) for t in body if t.strip())
            return "\n".join(t[cut:] for t in body) + "\n"
    return None


def needed_tasks(script: str, task: str) -> list[str]:
    """The tasks besides ``task`` whose code the script runs."""
    found: set[str] = set()
    for pattern, tasks in _NEEDS:
        if pattern.search(script):
            found.update(tasks)
    found.discard(task)
    return sorted(found, key=lambda t: tuple(int(p) for p in t.split(".")))


def file_name(task: str, test: str) -> str:
    return f"{task}-{_UNSAFE.sub('_', test)[:120]}.py"


# assignment 6: the kernels run as when graded (the interpreter, the bounds checker, and
# masked-out lanes of a load without ``other`` read as NaN, not the interpreter's 0), so a
# reproducer fails here as it failed in the grader
KERNELS_AS_GRADED = (
    "_os.environ.setdefault('TRITON_INTERPRET', '1')\n"
    "from graders.probes import _cuda_runtime as _graded\n"
    "_graded.triton_module()  # kernels run as when graded (masked-out lanes read as NaN)\n"
)


def render_file(task: str, test: str, script: str) -> str:
    needs = needed_tasks(script, task)
    head = [f"# reproduces {task} {test}: run it from the folder that holds tinytrain/,",
            "#   python <the path of this file>"]
    if needs:
        head.append(f"# needs tasks {', '.join(needs)} (besides {task}): until they are done it "
                    "stops at their NotImplementedError")
    kernels = KERNELS_AS_GRADED if task.startswith("6.") else ""
    return "\n".join(head) + "\n" + PRELUDE + kernels + script


def write(out: Path, score: Score) -> dict[tuple[str, str], Path]:
    """Write every failing test's reproducer into ``out/repro/`` (an older one there is
    removed first); returns {(task, test): path}."""
    folder = out / FOLDER
    if folder.is_dir() and not folder.is_symlink():
        for old in folder.glob("*.py"):
            old.unlink()
    elif os.path.lexists(folder):
        os.unlink(folder)
    written: dict[tuple[str, str], Path] = {}
    for task in score.tasks:
        for result in task.tests:
            if result.status in ("passed", "not_implemented") or MARKER not in result.message:
                continue
            script = extract(result.message)
            if script is None:
                continue
            folder.mkdir(exist_ok=True)
            path = folder / file_name(task.task.id, result.name)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "w") as f:
                f.write(render_file(task.task.id, result.name, script))
            written[(task.task.id, result.name)] = path
    return written
