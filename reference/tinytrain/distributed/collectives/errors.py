"""Errors of the distributed package."""

from __future__ import annotations


class DistributedError(RuntimeError):
    """A collective could not complete: a mismatch between ranks, a deadlock, a timeout,
    or another rank that failed. The message names the ranks and the collectives."""


class RankAborted(DistributedError):
    """Raised in a rank whose world was aborted because of another rank (a deadlock, a
    hang or an exception elsewhere): not the root cause."""
