"""Views: a Function's output that shares its input's memory (``is_view``) shares its
version counter and root base too, and is registered with that base, so that an in-place
write into the base can rebase the views made of it (``autograd.inplace``)."""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from . import grad_mode


def make_view(view: Any, base: Any) -> None:
    """Let ``view`` share ``base``'s version counter (and root base), as a view does, and
    register it with the root base (an in-place write into the base rebases its views).

    A forward that had to copy (NumPy could not make a view) gives an ordinary tensor.
    """
    if not np.may_share_memory(view.data, base.data):
        return
    root = base._base if base._base is not None else base
    view._version_counter = base._version_counter
    view._base = root
    view._is_inference = base._is_inference
    inherited = base._creation_meta not in (None, "default")  # a view of a no_grad view
    made_in = "default" if grad_mode.is_grad_enabled() else "no_grad_mode"
    view._creation_meta = base._creation_meta if inherited else made_in
    if root._views is None:
        root._views = {}
    root._views[id(view)] = weakref.ref(view, _forget(root._views, id(view)))


def _forget(views: dict[int, weakref.ref], key: int) -> Any:
    """A weakref callback that drops a dead view from its base's registry."""

    def callback(ref: weakref.ref) -> None:
        if views.get(key) is ref:
            del views[key]

    return callback
