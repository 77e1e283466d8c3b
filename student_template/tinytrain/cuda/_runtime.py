"""Loading Triton and launching kernels on NumPy arrays.

Triton is imported on first use, never by ``import tinytrain``: the other assignments run
where no triton wheel exists (macOS, Windows). Where no GPU drives the kernels, Triton's
interpreter runs them on the CPU; it must be switched on *before* triton is imported
(``TRITON_INTERPRET=1``), since ``@triton.jit`` decides at decoration time, triton's own
helpers (``tl.sigmoid`` ...) included.

Under the interpreter a kernel reads and writes host memory, so a NumPy array wrapped in
``HostBuffer`` is what it launches on. On a GPU, ``launch`` stages the arrays in device
memory (torch CUDA tensors used only as buffers), runs the kernel natively and copies the
arrays back: correct everywhere, and slow on a GPU (see the README's benchmark notes).
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Any

import numpy as np

TRITON_MISSING = (
    "triton is not installed: assignment 6 (the cuda device, Triton kernels) needs Linux "
    "with `pip install triton==3.9.0`, or the course container"
)

_loaded: dict[str, Any] = {}


def _gpu_present() -> bool:
    """A CUDA driver with at least one device, asked without importing triton or torch."""
    if os.environ.get("TRITON_INTERPRET", "0") == "1":
        return False
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        count = ctypes.c_int(0)
        return lib.cuInit(0) == 0 and lib.cuDeviceGetCount(ctypes.byref(count)) == 0 \
            and count.value > 0
    except (OSError, AttributeError):
        return False


def load_triton() -> Any:
    """The ``triton`` module, imported once, with its interpreter switched on where no GPU
    runs kernels. Raises RuntimeError (``TRITON_MISSING``) where triton is not installed."""
    if "triton" in _loaded:
        return _loaded["triton"]
    if "triton" not in sys.modules and not _gpu_present():
        os.environ["TRITON_INTERPRET"] = "1"
    try:
        import triton
    except ImportError:
        raise RuntimeError(TRITON_MISSING) from None
    _loaded["triton"] = triton
    return triton


def triton_available() -> bool:
    """Whether triton can be imported here."""
    try:
        load_triton()
    except RuntimeError:
        return False
    return True


def interpreted() -> bool:
    """True where kernels run under Triton's interpreter (no GPU)."""
    return bool(load_triton().knobs.runtime.interpret)


def is_available() -> bool:
    """``tt.cuda.is_available()``: whether kernels run on a GPU here. The ``cuda`` device
    works without one too (its kernels then run under the interpreter)."""
    return triton_available() and not interpreted()


def cdiv(a: int, b: int) -> int:
    """Ceiling division: the number of tiles of size ``b`` that cover ``a``."""
    return -(-a // b)


class _Storage:
    """The interpreter's view of a buffer's storage: the array itself (host memory)."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def data_ptr(self) -> int:
        return self.array.ctypes.data

    def cpu(self) -> _Storage:
        return self

    def copy_(self, other: _Storage) -> _Storage:
        if other.array is not self.array:
            self.array[...] = other.array
        return self


class HostBuffer:
    """A NumPy array as Triton's interpreter expects a tensor argument: ``data_ptr()``,
    ``dtype`` (its name), ``untyped_storage()``, ``size()``, ``stride()`` (in elements) ..."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    @property
    def dtype(self) -> str:
        return self.array.dtype.name

    def data_ptr(self) -> int:
        return self.array.ctypes.data

    def untyped_storage(self) -> _Storage:
        return _Storage(self.array)

    def storage_offset(self) -> int:
        return 0

    def size(self) -> tuple[int, ...]:
        return self.array.shape

    def stride(self) -> tuple[int, ...]:
        return tuple(s // self.array.itemsize for s in self.array.strides)

    def new_empty(self, *args: Any, **kwargs: Any) -> HostBuffer:
        return HostBuffer(self.array)

    def set_(self, storage: _Storage, offset: int, size: Any, stride: Any) -> HostBuffer:
        self.array = storage.array
        return self


class _DevicePointer:
    """What a native launch needs of a tensor argument: its address and dtype."""

    __slots__ = ("address", "dtype", "owner")

    def __init__(self, address: int, dtype: str, owner: Any) -> None:
        self.address, self.dtype, self.owner = address, dtype, owner

    def data_ptr(self) -> int:
        return self.address


def _span(array: np.ndarray) -> tuple[int, int]:
    """The byte range [lo, hi) around the array's first element that holds its elements."""
    lo = sum((n - 1) * s for n, s in zip(array.shape, array.strides) if s < 0 and n > 0)
    hi = sum((n - 1) * s for n, s in zip(array.shape, array.strides) if s > 0 and n > 0)
    return lo, hi + array.itemsize


def _to_device(array: np.ndarray) -> _DevicePointer:
    """A device copy of the bytes that hold ``array`` (its strides kept)."""
    import torch  # only on a GPU: device memory comes from torch CUDA tensors (buffers only)

    lo, hi = _span(array)
    host = np.frombuffer((ctypes.c_char * (hi - lo)).from_address(array.ctypes.data + lo),
                         np.uint8)
    device = torch.from_numpy(host.copy()).cuda()
    return _DevicePointer(device.data_ptr() - lo, array.dtype.name, device)


def _from_device(staged: _DevicePointer, array: np.ndarray) -> None:
    """Copy ``array``'s elements (only those) back from their device copy."""
    lo, _ = _span(array)
    raw = staged.owner.cpu().numpy()
    array[...] = np.ndarray(array.shape, array.dtype, buffer=raw, offset=-lo,
                            strides=array.strides)


def launch(kernel: Any, grid: tuple[int, ...], *args: Any, **constexprs: Any) -> None:
    """``kernel[grid](*args, **constexprs)`` with NumPy arrays as tensor arguments. The
    arrays are the kernel's memory: what it stores lands in them. Launches nothing for an
    empty grid."""
    if any(g <= 0 for g in grid):
        return
    if interpreted():
        # masked-off lanes compute on fill values (0 / 0 ...): NumPy's warnings about them
        # mean nothing (a GPU computes them silently)
        with np.errstate(all="ignore"):
            kernel[grid](*[HostBuffer(a) if isinstance(a, np.ndarray) else a for a in args],
                         **constexprs)
        return
    staged = [_to_device(a) if isinstance(a, np.ndarray) else a for a in args]
    kernel[grid](*staged, **constexprs)
    for array, tensor in zip(args, staged):
        if isinstance(array, np.ndarray) and array.flags.writeable:
            _from_device(tensor, array)
