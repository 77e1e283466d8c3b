"""Loading Triton, the cuda device's memory (an allocator), and launching kernels.

Triton is imported on first use, never by ``import tinytrain``: the other assignments run
where no triton wheel exists (macOS, Windows). Where no GPU drives the kernels, Triton's
interpreter runs them on the CPU; it must be switched on *before* triton is imported
(``TRITON_INTERPRET=1``), since ``@triton.jit`` decides at decoration time, triton's own
helpers (``tl.sigmoid`` ...) included.

Memory comes from a ``DeviceAllocator`` (``allocator()``): ``HostAllocator`` where kernels
run under the interpreter (host memory: NumPy arrays marked as device memory, what every
test without a GPU uses), ``CupyAllocator`` where a GPU and CuPy are present and
``TRITON_INTERPRET`` is not set (device memory from CuPy's pool). A ``DeviceBuffer`` from
either is launched on directly: its device pointer goes to the kernel, nothing is staged.
A plain NumPy array given to ``launch`` on a GPU (what the kernel wrappers allocate) is
staged in device memory for that launch and copied back: correct, and slow.
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
        # the interpreter copies every argument back after a launch, inputs too: a
        # read-only input (a broadcast view) was not written, so there is nothing to copy
        if other.array is not self.array and self.array.flags.writeable:
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


# ----- the device's memory: an allocator and the buffers it hands out -------------------
class Copies:
    """How many bytes crossed between host and device, and how often (a spy for tests and
    the benchmark): ``to_device`` / ``to_host`` count copies, ``staged`` counts arrays a
    launch had to stage (a plain NumPy array on a GPU)."""

    __slots__ = ("to_device", "to_host", "staged", "bytes")

    def __init__(self) -> None:
        self.to_device = self.to_host = self.staged = self.bytes = 0

    def as_dict(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in self.__slots__}


class DeviceBuffer:
    """A tensor's storage from a ``DeviceAllocator``: ``shape``, ``dtype`` (a NumPy dtype;
    bfloat16 is ml_dtypes'), element ``strides``, ``data_ptr()``, and views (``view``,
    ``reshape``, ``transpose``, basic indexing) that share its storage. Copies between
    host and device happen only in ``copy_from_host``, ``copy_to_host`` and ``item``,
    each counted by the allocator's ``copies``.

    ``array`` is what holds the elements: a NumPy array (``HostAllocator``) or a CuPy
    array (``CupyAllocator``, bfloat16 stored as uint16 since CuPy has no bfloat16)."""

    __slots__ = ("array", "np_dtype", "allocator", "base")

    def __init__(self, array: Any, np_dtype: np.dtype, allocator: DeviceAllocator,
                 base: DeviceBuffer | None = None) -> None:
        self.array, self.np_dtype, self.allocator = array, np.dtype(np_dtype), allocator
        self.base = base  # the buffer whose storage this one views (None: owns it)

    # what Triton needs of a tensor argument
    @property
    def dtype(self) -> str:
        return self.np_dtype.name

    def data_ptr(self) -> int:
        return self.allocator._ptr(self.array)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)

    def size(self) -> tuple[int, ...]:
        return self.shape

    def stride(self) -> tuple[int, ...]:
        return tuple(s // self.np_dtype.itemsize for s in self.array.strides)

    strides = property(stride)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.np_dtype.itemsize

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def storage(self) -> DeviceBuffer:
        """The buffer that owns this one's storage."""
        return self if self.base is None else self.base.storage()

    # views: same storage, no copy
    def _view_of(self, array: Any) -> DeviceBuffer:
        return DeviceBuffer(array, self.np_dtype, self.allocator, self.storage())

    def view(self, *shape: Any) -> DeviceBuffer:
        """The same elements under ``shape`` without a copy (as ``torch.Tensor.view``):
        a RuntimeError where the strides cannot express it."""
        shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) \
            else shape
        out = self.array.reshape(shape)  # a view where strides allow it, else a copy
        if out.size and self.allocator._ptr(out) != self.allocator._ptr(self.array):
            raise RuntimeError(f"view size is not compatible with input tensor's size and "
                               f"stride {self.stride()}: use reshape")
        return self._view_of(out)

    def reshape(self, *shape: Any) -> DeviceBuffer:
        """A view where the strides allow it, else a contiguous copy made on the device."""
        try:
            return self.view(*shape)
        except RuntimeError:
            shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) \
                else shape
            return self.contiguous().view(*shape)

    def transpose(self, *axes: int) -> DeviceBuffer:
        return self._view_of(self.array.transpose(*axes))

    def __getitem__(self, index: Any) -> DeviceBuffer:
        if not isinstance(index, tuple):
            index = (index,)
        if any(not isinstance(i, (int, slice, type(None), type(Ellipsis))) for i in index):
            raise TypeError("DeviceBuffer indexing takes ints and slices (views) only")
        return self._view_of(self.array[index])

    def is_contiguous(self) -> bool:
        return bool(self.array.flags.c_contiguous)

    def contiguous(self) -> DeviceBuffer:
        """This buffer where it is contiguous, else a contiguous copy (device to device)."""
        if self.is_contiguous():
            return self
        out = self.allocator.empty(self.shape, self.np_dtype)
        out.array[...] = self.array  # device to device
        return out

    # the only copies between host and device
    def copy_from_host(self, host: np.ndarray) -> DeviceBuffer:
        """Overwrite the elements with ``host``'s (same shape; cast to this dtype)."""
        host = np.asarray(host)
        if host.shape != self.shape:
            raise ValueError(f"copy_from_host: shape {host.shape} into {self.shape}")
        self.allocator._h2d(self.array, np.ascontiguousarray(host, self.np_dtype))
        self.allocator._count("to_device", self.nbytes)
        return self

    def copy_to_host(self) -> np.ndarray:
        """A new host array (plain NumPy, C-contiguous) with the elements."""
        out = self.allocator._d2h(self.array, self.np_dtype)
        self.allocator._count("to_host", self.nbytes)
        return out

    def item(self) -> Any:
        """The single element as a Python number (a scalar the host needs: one copy)."""
        if int(np.prod(self.shape, dtype=np.int64)) != 1:
            raise RuntimeError("a Tensor with more than one element cannot be converted to "
                               "a Scalar")
        return self.copy_to_host().reshape(()).item()

    def free(self) -> None:
        """Give the storage back to the allocator (views of it must not be used after)."""
        if self.base is None:
            self.allocator._free(self)
        self.array = None

    def __repr__(self) -> str:
        return (f"DeviceBuffer({self.allocator.name}, shape={self.shape}, dtype={self.dtype}, "
                f"stride={self.stride()})")


class DeviceAllocator:
    """Where a cuda tensor's storage comes from. ``allocate(nbytes, dtype, shape)`` returns
    a ``DeviceBuffer`` of ``shape`` (``nbytes`` must match it: a check against
    miscomputed sizes); ``from_host`` allocates and copies in; ``copies`` counts every
    transfer. ``device`` says whether the memory is device memory (kernels get its
    pointers natively) or host memory (the interpreter's)."""

    name = "abstract"
    device = False

    def __init__(self) -> None:
        self.copies = Copies()
        self.live_bytes = 0

    def allocate(self, nbytes: int, dtype: Any, shape: tuple[int, ...]) -> DeviceBuffer:
        dtype = np.dtype(dtype)
        shape = tuple(int(n) for n in shape)
        expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if nbytes != expected:
            raise ValueError(f"allocate: {nbytes} bytes for shape {shape} of {dtype} "
                             f"({expected} bytes)")
        buffer = DeviceBuffer(self._empty(shape, dtype), dtype, self)
        self.live_bytes += expected
        return buffer

    def empty(self, shape: tuple[int, ...], dtype: Any) -> DeviceBuffer:
        dtype = np.dtype(dtype)
        return self.allocate(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize, dtype,
                             tuple(shape))

    def from_host(self, host: np.ndarray) -> DeviceBuffer:
        host = np.asarray(host)
        return self.empty(host.shape, host.dtype).copy_from_host(host)

    def _count(self, direction: str, nbytes: int) -> None:
        setattr(self.copies, direction, getattr(self.copies, direction) + 1)
        self.copies.bytes += nbytes

    def _free(self, buffer: DeviceBuffer) -> None:
        self.live_bytes -= buffer.nbytes

    # the memory itself, per implementation
    def _empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        raise NotImplementedError

    def _ptr(self, array: Any) -> int:
        raise NotImplementedError

    def _h2d(self, array: Any, host: np.ndarray) -> None:
        raise NotImplementedError

    def _d2h(self, array: Any, dtype: np.dtype) -> np.ndarray:
        raise NotImplementedError


class HostAllocator(DeviceAllocator):
    """Device memory as host memory: the storage is a NumPy array marked as device memory
    (``CudaArray``), as it has always been under Triton's interpreter; what every test
    without a GPU uses. ``copy_from_host``/``copy_to_host`` are memcpys (still counted)."""

    name = "host"
    device = False

    def _empty(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        from ..device_state import CudaArray

        return np.empty(shape, dtype).view(CudaArray)

    def _ptr(self, array: np.ndarray) -> int:
        return array.ctypes.data

    def _h2d(self, array: np.ndarray, host: np.ndarray) -> None:
        array[...] = host

    def _d2h(self, array: np.ndarray, dtype: np.dtype) -> np.ndarray:
        return np.array(array, dtype, copy=True, order="C").view(np.ndarray)


class CupyAllocator(DeviceAllocator):
    """Device memory from CuPy's memory pool (``cupy.get_default_memory_pool()``).

    Why CuPy: its pool caches freed blocks (a training step allocates and frees the same
    sizes every iteration; ``cudaMalloc`` per tensor would synchronise and dominate), its
    arrays are strided views over shared storage (views, reshape, transpose and slicing
    come for free and stay on the device), and it is a light dependency that never
    imports torch: the grading worker must stay torch-free, so torch CUDA tensors used as
    buffers are not an option there. cuda-python would give raw ``cuMemAlloc`` and
    ``cuMemcpy`` only: a pool, strides and views would have to be written here. CuPy has
    no bfloat16 dtype, so bfloat16 storage is kept as uint16 (same bytes) and the buffer
    carries the logical dtype (ml_dtypes.bfloat16) for Triton and for the host copies.
    Kernels run on the device's default stream, as CuPy's copies do (Triton's torch-free
    launches use that stream), so a copy after a launch sees its results."""

    name = "cupy"
    device = True

    def __init__(self) -> None:
        super().__init__()
        import cupy

        self._cp = cupy
        self.pool = cupy.get_default_memory_pool()

    @staticmethod
    def _storage_dtype(dtype: np.dtype) -> np.dtype:
        return np.dtype(np.uint16) if dtype.name == "bfloat16" else dtype

    def _empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return self._cp.empty(shape, self._storage_dtype(dtype))

    def _ptr(self, array: Any) -> int:
        return int(array.data.ptr)

    def _h2d(self, array: Any, host: np.ndarray) -> None:
        host = host.view(self._storage_dtype(host.dtype))
        if array.flags.c_contiguous:
            array.set(host)
        else:  # CuPy sets contiguous arrays only: upload, then scatter on the device
            array[...] = self._cp.asarray(host)

    def _d2h(self, array: Any, dtype: np.dtype) -> np.ndarray:
        return np.ascontiguousarray(array.get()).view(dtype)

    def _free(self, buffer: DeviceBuffer) -> None:
        super()._free(buffer)
        buffer.array = None  # the last reference: CuPy returns the block to its pool


def _cupy_importable() -> bool:
    try:
        import cupy  # noqa: F401
    except ImportError:
        return False
    return True


def select_allocator() -> DeviceAllocator:
    """``CupyAllocator`` where a GPU and CuPy are present and ``TRITON_INTERPRET`` is not
    set, else ``HostAllocator``. ``TINYTRAIN_ALLOCATOR=host`` forces host memory."""
    forced = os.environ.get("TINYTRAIN_ALLOCATOR", "")
    if forced == "host" or os.environ.get("TRITON_INTERPRET", "0") == "1":
        return HostAllocator()
    if forced == "cupy" or (_gpu_present() and _cupy_importable()):
        return CupyAllocator()
    return HostAllocator()


def allocator() -> DeviceAllocator:
    """The allocator of this process (chosen once, on first use)."""
    if "allocator" not in _loaded:
        _loaded["allocator"] = select_allocator()
    return _loaded["allocator"]


def set_allocator(new: DeviceAllocator | None) -> DeviceAllocator | None:
    """Replace the process's allocator (``None``: choose again on next use); returns the
    previous one (tests)."""
    old = _loaded.pop("allocator", None)
    if new is not None:
        _loaded["allocator"] = new
    return old


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
    """A device copy of the bytes that hold ``array`` (its strides kept), for one launch:
    from the allocator's device memory (CuPy), or, where CuPy is missing on a GPU (outside
    grading only), torch CUDA tensors used as buffers."""
    lo, hi = _span(array)
    host = np.frombuffer((ctypes.c_char * (hi - lo)).from_address(array.ctypes.data + lo),
                         np.uint8)
    memory = allocator()
    memory.copies.staged += 1
    if memory.device:
        device = memory.from_host(host)
        return _DevicePointer(device.data_ptr() - lo, array.dtype.name, device)
    import torch  # a GPU without CuPy: device memory from torch CUDA tensors (buffers only)

    device = torch.from_numpy(host.copy()).cuda()
    return _DevicePointer(device.data_ptr() - lo, array.dtype.name, device)


def _from_device(staged: _DevicePointer, array: np.ndarray) -> None:
    """Copy ``array``'s elements (only those) back from their device copy."""
    lo, _ = _span(array)
    owner = staged.owner
    raw = owner.copy_to_host() if isinstance(owner, DeviceBuffer) else owner.cpu().numpy()
    array[...] = np.ndarray(array.shape, array.dtype, buffer=raw, offset=-lo,
                            strides=array.strides)


def _interpreter_arg(arg: Any) -> Any:
    if isinstance(arg, np.ndarray):
        return HostBuffer(arg)
    if isinstance(arg, DeviceBuffer):
        if arg.allocator.device:
            raise RuntimeError("a device-memory buffer cannot be launched on under Triton's "
                               "interpreter (TRITON_INTERPRET=1)")
        return HostBuffer(arg.array)
    return arg


def _native_arg(arg: Any) -> Any:
    if isinstance(arg, DeviceBuffer):
        # device memory: its pointer goes to the kernel as it is (no staging)
        return arg if arg.allocator.device else _to_device(arg.array)
    return _to_device(arg) if isinstance(arg, np.ndarray) else arg


def launch(kernel: Any, grid: tuple[int, ...], *args: Any, **constexprs: Any) -> None:
    """``kernel[grid](*args, **constexprs)`` with NumPy arrays or ``DeviceBuffer``s as
    tensor arguments. They are the kernel's memory: what it stores lands in them. A
    device-memory ``DeviceBuffer`` is launched on directly; a NumPy array on a GPU is
    staged for the launch and copied back. Launches nothing for an empty grid."""
    if any(g <= 0 for g in grid):
        return
    if interpreted():
        # masked-off lanes compute on fill values (0 / 0 ...): NumPy's warnings about them
        # mean nothing (a GPU computes them silently)
        with np.errstate(all="ignore"):
            kernel[grid](*[_interpreter_arg(a) for a in args], **constexprs)
        return
    staged = [_native_arg(a) for a in args]
    kernel[grid](*staged, **constexprs)
    for arg, tensor in zip(args, staged):
        if isinstance(tensor, _DevicePointer):
            array = arg.array if isinstance(arg, DeviceBuffer) else arg
            if array.flags.writeable:
                _from_device(tensor, array)
