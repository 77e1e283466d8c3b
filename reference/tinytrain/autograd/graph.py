"""Hooks on the saved tensors of the graph (``tt.autograd.graph``), and the hook pairs
that offload saved tensors to host memory or to disk."""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import shutil
import tempfile
import threading
import uuid
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

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


# ----- offloading saved tensors ------------------------------------------------------------
class save_on_cpu(saved_tensors_hooks):  # noqa: N801 - PyTorch's name
    """Inside this block, tensors saved for backward are kept in host memory and brought
    back when backward needs them (PyTorch's ``torch.autograd.graph.save_on_cpu``).

    tinytrain computes on the CPU, so "device" and host memory are the same RAM: packing
    copies the tensor's bytes out into a host buffer, so the graph no longer holds the
    activation itself (it can be freed); unpacking rebuilds a tensor of the original dtype
    and shape. ``pin_memory`` and ``device_type`` are accepted for PyTorch compatibility.
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        super().__init__(self._pack, self._unpack)

    @staticmethod
    def _pack(tensor: Any) -> Any:
        # BEGIN SOLUTION 3.3
        # HINT: copy the values out (tensor.data.tobytes() is a host buffer of its own) and
        # HINT: keep what you need to rebuild the tensor; keep no reference to the tensor.
        return tensor.device, tensor.data.dtype, tensor.shape, tensor.data.tobytes()
        # END SOLUTION

    @staticmethod
    def _unpack(packed: Any) -> Any:
        # BEGIN SOLUTION 3.3
        from ..tensor import Tensor

        _device, dtype, shape, buffer = packed
        return Tensor(np.frombuffer(buffer, dtype).reshape(shape).copy())
        # END SOLUTION


class save_on_disk(saved_tensors_hooks):  # noqa: N801 - follows save_on_cpu
    """Inside this block, tensors saved for backward are written to files in ``folder`` (a
    new temporary folder when None) and read back when backward needs them.

    Each file is deleted as soon as nothing refers to it any more: when the graph is freed
    (after backward without retain_graph, or when the graph is dropped). A temporary
    folder is removed once its files are gone and this object is no longer used.
    """

    def __init__(self, folder: str | os.PathLike[str] | None = None) -> None:
        self._folder = _Folder(folder)
        # a partial, not a bound method: self -> hook -> self would be a reference cycle
        super().__init__(functools.partial(self._pack, self._folder), self._unpack)

    @property
    def folder(self) -> str:
        """The folder the saved tensors are written to."""
        return self._folder.path

    @staticmethod
    def _pack(folder: _Folder, tensor: Any) -> SavedFile:
        # BEGIN SOLUTION 3.3
        # HINT: np.save(path, array, allow_pickle=False); weakref.finalize(obj, fn, *args)
        # HINT: calls fn(*args) once obj is garbage (it must not refer to obj itself).
        saved = SavedFile(folder)
        np.save(saved.path, tensor.data, allow_pickle=False)
        weakref.finalize(saved, _remove_file, saved.path)
        return saved
        # END SOLUTION

    @staticmethod
    def _unpack(saved: SavedFile) -> Any:
        # BEGIN SOLUTION 3.3
        from ..tensor import Tensor

        return Tensor(np.load(saved.path, allow_pickle=False))
        # END SOLUTION


class SavedFile:
    """A saved tensor's place on disk: what ``save_on_disk``'s pack hook returns. It keeps
    its folder alive, so a temporary folder outlives the files in it."""

    __slots__ = ("__weakref__", "folder", "path")

    def __init__(self, folder: _Folder) -> None:
        self.folder = folder
        self.path = folder.new_path()


class _Folder:
    """The folder of ``save_on_disk``: the given one, or a temporary one that is removed
    when no SavedFile and no save_on_disk uses it any more."""

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        if path is None:
            self.path = tempfile.mkdtemp(prefix="tinytrain-saved-")
            weakref.finalize(self, shutil.rmtree, self.path, ignore_errors=True)
        else:
            self.path = os.fspath(path)
            os.makedirs(self.path, exist_ok=True)
        self._count = itertools.count()

    def new_path(self) -> str:
        return os.path.join(self.path, f"saved-{next(self._count)}-{uuid.uuid4().hex[:8]}.npy")


def _remove_file(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)
