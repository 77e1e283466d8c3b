"""Autocast's thread-local state. ``tt.amp.autocast`` sets it; ``Function.apply`` reads
``state.enabled`` on every call, so it lives here, beside the autograd core, and costs
one attribute read while autocast is off."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np


class _AutocastState(threading.local):
    """Per thread: whether autocast is on, its lower-precision dtype, whether casts of
    weights are cached, how many autocast regions are open (enabled or not), and the
    cache of casts (``id(source) -> (source, cast)``) shared by those regions."""

    enabled = False
    dtype = np.dtype(np.float16)
    cache_enabled = True
    nesting = 0

    def __init__(self) -> None:
        self.cache: dict[int, tuple[Any, Any]] = {}


state = _AutocastState()


def call_without_autocast(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` with autocast off: an op called with an explicit ``dtype``
    (``softmax(x, 0, dtype=...)``) runs in that dtype, as PyTorch does."""
    if not state.enabled:
        return fn(*args, **kwargs)
    state.enabled = False
    try:
        return fn(*args, **kwargs)
    finally:
        state.enabled = True
