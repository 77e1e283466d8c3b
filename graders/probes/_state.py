"""Resetting the submission's global state between probe calls, so one test's leftovers
(a grad mode switched off, a hook left installed) cannot change another test's result.
Uses the framework's own (given, not homework) state holders; missing ones are skipped."""

from __future__ import annotations

from typing import Any

import numpy as np


def reset(tt: Any) -> None:
    autograd = getattr(tt, "autograd", None)
    grad_mode = getattr(autograd, "grad_mode", None)
    state = getattr(grad_mode, "_state", None)
    if state is not None:
        state.grad_enabled = True
        state.inference = False
    autocast = getattr(getattr(autograd, "autocast_state", None), "state", None)
    if autocast is not None:  # tt.amp.autocast left on (or its cache full) by a failed probe
        autocast.enabled = False
        autocast.dtype = np.dtype(np.float16)
        autocast.nesting = 0
        autocast.cache_enabled = True
        autocast.cache.clear()
    graph = getattr(autograd, "graph", None)
    hooks = getattr(graph, "_hooks", None)
    if hooks is not None and isinstance(getattr(hooks, "stack", None), list):
        hooks.stack.clear()
