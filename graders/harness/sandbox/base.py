"""What every part of the sandbox shares: its error, the state folder, the log line."""

from __future__ import annotations

import os
import sys
from pathlib import Path

GRADERS_DIR = Path(__file__).resolve().parents[2]  # the grader's own package folder
STATE_ROOT = Path("/var/lib/tinytrain-grader")


class SandboxError(Exception):
    """The sandbox cannot be set up (no worker user, an untrusted cache folder, ...)."""


def is_root() -> bool:
    return os.geteuid() == 0


def log(message: str) -> None:
    print(f"tinytrain-grade: {message}", file=sys.stderr, flush=True)
