"""Which process group and backend the calling rank uses (thread-local: with the threads
backend every rank is a thread of one process, as in the course's framework)."""

from __future__ import annotations

import threading
from typing import Any


class _RankState(threading.local):
    def __init__(self) -> None:
        self.backend: Any = None  # the rank's backend (a ThreadRank or an MPIBackend)
        self.world: Any = None  # the default ProcessGroup
        self.groups_made = 0  # new_group calls so far (every rank makes them in one order)
        self.trace: Any = None  # this rank's Trace


state = _RankState()
