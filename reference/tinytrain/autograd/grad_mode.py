"""Grad modes: whether operations are recorded for backward (thread-local, like PyTorch)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class _ThreadState(threading.local):
    def __init__(self) -> None:
        self.grad_enabled = True
        self.inference = False


_state = _ThreadState()


def is_grad_enabled() -> bool:
    """True when operations on tensors that require grad are recorded."""
    return _state.grad_enabled


def is_inference_mode_enabled() -> bool:
    """True inside ``inference_mode()``."""
    return _state.inference


class _DecoratorContextManager:
    """A context manager that also works as a decorator (``@no_grad()``)."""

    def __call__(self, func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    def clone(self) -> _DecoratorContextManager:
        return type(self)()

    def __enter__(self) -> None:
        raise NotImplementedError

    def __exit__(self, *exc: object) -> None:
        raise NotImplementedError


class no_grad(_DecoratorContextManager):  # noqa: N801 - PyTorch's name
    """Disable recording inside the block; restores the previous mode on exit."""

    def __enter__(self) -> None:
        # BEGIN SOLUTION 1.3
        self._prev = _state.grad_enabled
        _state.grad_enabled = False
        # END SOLUTION

    def __exit__(self, *exc: object) -> None:
        # BEGIN SOLUTION 1.3
        _state.grad_enabled = self._prev
        # END SOLUTION


class enable_grad(_DecoratorContextManager):  # noqa: N801 - PyTorch's name
    """Enable recording inside the block (for example inside ``no_grad``)."""

    def __enter__(self) -> None:
        # BEGIN SOLUTION 1.3
        self._prev = _state.grad_enabled
        _state.grad_enabled = True
        # END SOLUTION

    def __exit__(self, *exc: object) -> None:
        # BEGIN SOLUTION 1.3
        _state.grad_enabled = self._prev
        # END SOLUTION


class set_grad_enabled(_DecoratorContextManager):  # noqa: N801 - PyTorch's name
    """Set grad mode to ``mode``: at once when called, for a block when used with
    ``with`` (the previous mode comes back on exit), or for a decorated function."""

    def __init__(self, mode: bool) -> None:
        # BEGIN SOLUTION 1.3
        self.prev = _state.grad_enabled
        self.mode = bool(mode)
        _state.grad_enabled = self.mode
        # END SOLUTION

    def clone(self) -> set_grad_enabled:
        return set_grad_enabled(self.mode)

    def __call__(self, func: F) -> F:
        # BEGIN SOLUTION 1.3
        _state.grad_enabled = self.prev  # as a decorator, creating it must not change the mode
        return super().__call__(func)
        # END SOLUTION

    def __enter__(self) -> None:
        # BEGIN SOLUTION 1.3
        _state.grad_enabled = self.mode
        # END SOLUTION

    def __exit__(self, *exc: object) -> None:
        # BEGIN SOLUTION 1.3
        _state.grad_enabled = self.prev
        # END SOLUTION


class inference_mode(_DecoratorContextManager):  # noqa: N801 - PyTorch's name
    """Like ``no_grad``, and tensors created inside become inference tensors, which may
    not re-enter autograd later. ``inference_mode(False)`` turns inference mode off and
    grad mode on for its region (inside ``inference_mode`` or ``no_grad`` too), as in
    PyTorch; on exit both modes are restored."""

    def __init__(self, mode: bool = True) -> None:
        self.mode = bool(mode)

    def clone(self) -> inference_mode:
        return inference_mode(self.mode)

    def __enter__(self) -> None:
        # BEGIN SOLUTION 1.3
        self._prev = (_state.grad_enabled, _state.inference)
        if self.mode:
            _state.grad_enabled = False
            _state.inference = True
        else:
            _state.inference = False
            _state.grad_enabled = True
        # END SOLUTION

    def __exit__(self, *exc: object) -> None:
        # BEGIN SOLUTION 1.3
        _state.grad_enabled, _state.inference = self._prev
        # END SOLUTION


_INFERENCE_ERRORS = {
    "inplace": (
        "Inplace update to inference tensor outside InferenceMode is not allowed."
        "You can make a clone to get a normal tensor before doing inplace update."
    ),
    "save": (
        "Inference tensors cannot be saved for backward. Please do not use Tensors created "
        "in inference mode in computation tracked by autograd. To work around this, you can "
        "make a clone to get a normal tensor and use it in autograd, or use "
        "`tinytrain.no_grad()` instead of `tinytrain.inference_mode()`."
    ),
    "set_requires_grad": (
        "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed."
    ),
}


def check_inference_tensor(tensor: Any, action: str) -> None:
    """Raise PyTorch's RuntimeError when an inference tensor is used for ``action``
    ("inplace", "save" or "set_requires_grad") outside inference mode.
    Called only for tensors whose ``is_inference()`` is True."""
    # BEGIN SOLUTION 1.3
    if not _state.inference:
        raise RuntimeError(_INFERENCE_ERRORS[action])
    # END SOLUTION

