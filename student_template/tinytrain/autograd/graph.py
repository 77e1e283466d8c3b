"""Hooks on the saved tensors of the graph (``tt.autograd.graph``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

PackHook = Callable[[Any], Any]
UnpackHook = Callable[[Any], Any]


class _HookStack(threading.local):
    def __init__(self) -> None:
        self.stack: list[tuple[PackHook, UnpackHook]] = []


_hooks = _HookStack()


def current_saved_tensors_hooks() -> tuple[PackHook, UnpackHook] | None:
    """The innermost active (pack_hook, unpack_hook) pair, or None."""
    stack = _hooks.stack
    return stack[-1] if stack else None


class saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    """Inside this block, every tensor saved for backward goes through ``pack_hook`` once
    at save time; ``unpack_hook`` turns the packed value back into a tensor each time
    backward needs it. The innermost pair wins; the hooks are thread-local."""

    def __init__(self, pack_hook: PackHook, unpack_hook: UnpackHook) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> saved_tensors_hooks:
        _hooks.stack.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc: object) -> None:
        _hooks.stack.pop()
