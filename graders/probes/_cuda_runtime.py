"""Worker-side support for the assignment-6 probes: Triton's interpreter, guarded buffers,
a bounds check on every load and store, and launch counting.

The interpreter must be on before triton is imported (``@triton.jit`` decides at
decoration time, triton's own helpers included), so importing this module sets
``TRITON_INTERPRET=1`` itself: the worker may start with a minimal environment, and
grading runs every kernel under the interpreter, the same way on every machine.

Out-of-bounds accesses never reach memory: the interpreter's loads, stores and atomics
(``triton.runtime.interpreter._interpreter``, pinned triton 3.9.0) go through a checker
that knows the buffers of the launch and raises before the access, naming the kernel,
the buffer and the offset. Guard regions around (and gaps inside) every buffer catch what
a checker cannot see: they are compared byte for byte after the launch.

Launches the grader did not set up (a wrapper's, the device's) are pinned (each tensor
argument read once, as the grader's own view of its memory) and bounds-checked; a
wrapper's are recorded and replayed (``replay``) with the grader's builds of the kernels
on fresh memory; the device's run the grader's builds (``substituted``). The worker
prepares all of this before it imports the submission and seals it (``prepare``, ``Seal``).
"""

from __future__ import annotations

import ctypes
import importlib
import os
import sys
from contextlib import contextmanager
from typing import Any

import numpy as np

from . import _REGISTRY, _cuda_ast, _cuda_fill, _cuda_source

TRITON_MISSING = (
    "triton is not installed: assignment 6 needs Linux with triton 3.9.0 (pip install "
    "triton==3.9.0) or the course container"
)
TRITON_VERSION = "3.9.0"

if "triton" not in sys.modules:
    os.environ["TRITON_INTERPRET"] = "1"

GUARD = 64  # elements of guard region before and after every buffer


class OutOfBounds(Exception):
    """A kernel touched memory outside the buffers it was given."""


def triton_module() -> Any:
    """triton, imported with the interpreter on; RuntimeError when it is missing or was
    imported (by the submission) before the interpreter could be switched on."""
    try:
        import triton
    except ImportError:
        raise RuntimeError(TRITON_MISSING) from None
    if not triton.knobs.runtime.interpret:
        raise RuntimeError(
            "triton was imported before the grader switched on its interpreter (does "
            "tinytrain import triton at `import tinytrain`?): kernels are graded under "
            "TRITON_INTERPRET=1; import triton inside tinytrain.cuda only")
    _install()
    return triton


# ----- buffers ------------------------------------------------------------------------
def _sentinel(dtype: np.dtype) -> np.ndarray:
    """One element of the guard pattern: a signalling NaN for floats (a load of it shows
    as NaN), 0xA5 bytes otherwise (``_cuda_fill.undefined``)."""
    return _cuda_fill.undefined(dtype)


class GuardedBuffer:
    """A buffer the grader owns: a view with a given layout inside one allocation, with
    ``GUARD`` sentinel elements before and after it (and in any gap of a strided layout).

    layouts: "contiguous"; "transposed" (the last two dims swapped in memory);
    "strided" (every other element of the last dim); "padded" (rows longer than the
    shape: a row stride larger than the row); "heads" (a (Z, H, T, D) tensor stored as
    (Z, T, H, D), as heads split from a (batch, time, features) projection are)."""

    def __init__(self, name: str, values: np.ndarray, layout: str = "contiguous",
                 fill_nan: bool = False) -> None:
        self.name = name
        shape, dtype = values.shape, values.dtype
        if layout == "transposed" and len(shape) >= 2:
            physical = (*shape[:-2], shape[-1], shape[-2])
        elif layout == "strided" and shape:
            physical = (*shape[:-1], shape[-1] * 2)
        elif layout == "padded" and shape:
            physical = (*shape[:-1], shape[-1] + 3)
        elif layout == "heads" and len(shape) == 4:
            physical = (shape[0], shape[2], shape[1], shape[3])
        else:
            layout, physical = "contiguous", shape
        count = int(np.prod(physical, dtype=np.int64))
        self.raw = np.empty(GUARD * 2 + count, dtype)
        self.raw[...] = _sentinel(dtype)[0]
        self._pristine = self.raw.copy()
        owned = np.zeros(self.raw.shape, bool)
        self.view = self._layout(self.raw, physical, layout, count)
        self._owned = self._layout(owned, physical, layout, count)
        self._owned[...] = True
        self.owned = owned
        if fill_nan and _cuda_fill.is_float(dtype):
            self.view[...] = _cuda_fill.unwritten(dtype)[0]  # a NaN no kernel computes
        else:
            self.view[...] = values
        self.layout = layout
        self.initial = np.array(self.view, copy=True)

    @staticmethod
    def _layout(raw: np.ndarray, physical: tuple[int, ...], layout: str, count: int) -> np.ndarray:
        body = raw[GUARD:GUARD + count].reshape(physical)
        if layout == "transposed":
            return body.swapaxes(-1, -2)
        if layout == "strided":
            return body[..., ::2]
        if layout == "padded":
            return body[..., :physical[-1] - 3]
        if layout == "heads":
            return body.swapaxes(1, 2)
        return body

    # what Triton's interpreter needs of a tensor argument (see tinytrain's HostBuffer)
    @property
    def dtype(self) -> str:
        return self.view.dtype.name

    def data_ptr(self) -> int:
        return self.view.ctypes.data

    def untyped_storage(self) -> _Storage:
        return _Storage(self.view)

    def storage_offset(self) -> int:
        return 0

    def size(self) -> tuple[int, ...]:
        return self.view.shape

    def stride(self, dim: int | None = None) -> Any:
        strides = tuple(s // self.view.itemsize for s in self.view.strides)
        return strides if dim is None else strides[dim]

    def new_empty(self, *args: Any, **kwargs: Any) -> _Launchable:
        return _Launchable(self.view)

    # grader-side bookkeeping
    def span(self) -> tuple[int, int]:
        """[lo, hi) addresses of the bytes holding the view's elements."""
        lo = self.view.ctypes.data
        hi = lo + self.view.itemsize
        for n, s in zip(self.view.shape, self.view.strides):
            if n > 0:
                hi += (n - 1) * s
        return lo, hi

    def numel(self) -> int:
        return int(self.view.size)

    def corrupted(self) -> dict[str, Any] | None:
        """The first guard element (outside the view's elements) that changed, as an
        element offset from the view's first element, or None."""
        changed = (self.raw.view(np.uint8).reshape(self.raw.size, -1)
                   != self._pristine.view(np.uint8).reshape(self.raw.size, -1)).any(axis=1)
        changed &= ~self.owned
        if not changed.any():
            return None
        where = np.flatnonzero(changed)
        first = int(where[0])
        offset = first - GUARD
        region = "before it" if first < GUARD else (
            "after it" if first >= self.raw.size - GUARD else "in a gap between its elements")
        return {"buffer": self.name, "offset": offset, "region": region,
                "count": int(where.size)}


class _Storage:
    __slots__ = ("array",)

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def data_ptr(self) -> int:
        return self.array.ctypes.data

    def cpu(self) -> _Storage:
        return self

    def copy_(self, other: _Storage) -> _Storage:
        return self  # the interpreter worked in this very memory


class _Launchable:
    """What the interpreter rebuilds from a storage (``new_empty`` then ``set_``)."""

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

    def set_(self, storage: _Storage, offset: int, size: Any, stride: Any) -> _Launchable:
        self.array = storage.array
        return self


# ----- the bounds check ------------------------------------------------------------------
class _Checker:
    """Checks every address the interpreter is about to touch against the launch's buffers."""

    # no instance dict: a method cannot be shadowed on the instance
    __slots__ = ("buffers", "kernel", "violation", "stores", "loads", "stored", "_count", "_lo",
                 "_hi", "_trace", "_spans", "on_store")

    def __init__(self) -> None:
        self.buffers: list[GuardedBuffer] = []
        self.kernel = ""
        self.violation: dict[str, Any] | None = None
        self.stores: dict[str, list[int]] | None = None  # buffer -> first store per program
        self.loads: dict[str, int] = {}  # elements loaded from each buffer (grader launches)
        self.stored: dict[str, int] = {}  # elements stored (and atomics) into each buffer
        self.on_store: Any = None  # called with the addresses of every store (a replay)
        self._count = False
        self._lo = np.zeros(0, np.uint64)
        self._hi = np.zeros(0, np.uint64)
        self._trace: str | None = None
        self._spans: list[tuple[str, int, int]] = []

    def arm(self, kernel: str, buffers: list[Any], trace: str | None,
            count: bool = False) -> None:
        self.kernel, self.buffers, self.violation = kernel, buffers, None
        merged: list[list[int]] = []  # the union of the buffers' spans (views may overlap)
        for lo, hi in sorted(b.span() for b in buffers):
            if merged and lo <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        self._lo = np.array([m[0] for m in merged], np.uint64)
        self._hi = np.array([m[1] for m in merged], np.uint64)
        self._trace = trace
        self.stores = {} if trace else None
        self._count = count
        self.loads = {b.name: 0 for b in buffers} if count else {}
        self.stored = {b.name: 0 for b in buffers} if count else {}
        self._spans = [(b.name, *b.span()) for b in buffers] if count else []

    def disarm(self) -> None:
        self.buffers, self._lo, self._hi = [], np.zeros(0, np.uint64), np.zeros(0, np.uint64)
        self.on_store = None

    @property
    def armed(self) -> bool:
        return bool(self.buffers)

    def check(self, access: str, ptrs: np.ndarray, mask: np.ndarray | None, itemsize: int) -> None:
        addresses = np.asarray(ptrs, np.uint64).reshape(-1)
        if mask is not None:
            addresses = addresses[np.asarray(mask, bool).reshape(-1)]
        if addresses.size == 0:
            return
        slot = np.searchsorted(self._lo, addresses, side="right").astype(np.int64) - 1
        inside = slot >= 0
        safe = np.where(inside, slot, 0)
        ok = inside & (addresses + np.uint64(itemsize) <= self._hi[safe])
        if access == "store" and self._trace is not None:
            self._record_store(addresses, ok, safe)
        if self._count:
            counts = (self.loads, self.stored) if access == "atomic" else \
                ((self.loads,) if access == "load" else (self.stored,))
            for name, lo, hi in self._spans:
                n = int(((addresses >= np.uint64(lo)) & (addresses < np.uint64(hi))).sum())
                for table in counts:
                    table[name] += n
        if ok.all():
            if access != "load" and self.on_store is not None:
                self.on_store(addresses, itemsize)
            return
        bad = int(addresses[np.flatnonzero(~ok)[0]])
        self.violation = self._describe(access, bad, itemsize)
        raise OutOfBounds(self._message(self.violation))

    def _record_store(self, addresses: np.ndarray, ok: np.ndarray, slot: np.ndarray) -> None:
        buffer = next((b for b in self.buffers if b.name == self._trace), None)
        if buffer is None:
            return
        lo, hi = buffer.span()
        mine = ok & (addresses >= np.uint64(lo)) & (addresses < np.uint64(hi))
        if mine.any():
            first = int(addresses[mine].min() - np.uint64(buffer.data_ptr())) // buffer.view.itemsize
            from triton.runtime.interpreter import interpreter_builder

            program = tuple(int(i) for i in interpreter_builder.grid_idx)
            self.stores.setdefault(str(program), []).append(first)

    def _describe(self, access: str, address: int, itemsize: int) -> dict[str, Any]:
        from triton.runtime.interpreter import interpreter_builder

        def distance(b: GuardedBuffer) -> int:
            lo, hi = b.span()
            return 0 if lo <= address < hi else min(abs(address - lo), abs(address - hi))

        nearest = min(self.buffers, key=distance)
        offset = (address - nearest.data_ptr()) // nearest.view.itemsize
        return {"kernel": self.kernel, "access": access, "buffer": nearest.name,
                "offset": int(offset), "numel": nearest.numel(),
                "shape": list(nearest.view.shape), "dtype": nearest.dtype,
                "program": [int(i) for i in interpreter_builder.grid_idx]}

    @staticmethod
    def _message(v: dict[str, Any]) -> str:
        return (f"{v['kernel']} {v['access']}s out of bounds: {v['buffer']} + {v['offset']} "
                f"(buffer {v['buffer']} of shape {tuple(v['shape'])} holds {v['numel']} "
                f"elements) in program {tuple(v['program'])}")


class _ArgSpan:
    """A tensor argument of a launch the grader did not set up (a wrapper's, the device's):
    the bytes it spans are what the kernel may touch."""

    def __init__(self, name: str, arg: Any) -> None:
        self.name = name
        self._ptr = int(arg.data_ptr())
        self._shape = tuple(int(n) for n in arg.size())
        self._strides = tuple(int(s) for s in arg.stride())
        self.dtype = str(arg.dtype).rsplit(".", 1)[-1]
        self._itemsize = _itemsize(self.dtype)

    def data_ptr(self) -> int:
        return self._ptr

    def span(self) -> tuple[int, int]:
        lo = hi = self._ptr
        for n, s in zip(self._shape, self._strides):
            if n > 0:
                step = (n - 1) * s * self._itemsize
                lo, hi = (lo + step, hi) if step < 0 else (lo, hi + step)
        return lo, hi + self._itemsize

    def numel(self) -> int:
        return int(np.prod(self._shape, dtype=np.int64))

    @property
    def view(self) -> Any:
        return _Shape(self._shape, self._itemsize)


class _Shape:
    __slots__ = ("shape", "itemsize")

    def __init__(self, shape: tuple[int, ...], itemsize: int) -> None:
        self.shape, self.itemsize = shape, itemsize


def _itemsize(name: str) -> int:
    if name == "bfloat16":
        return 2
    try:
        return np.dtype(name).itemsize
    except TypeError:
        return 1


CHECKER = _Checker()
LAUNCHES: list[str] = []  # "module.kernel" of every interpreted launch, in order


class _CheckedInterpreter:
    """Stands in for the interpreter's C++ memory module: checks, then forwards."""

    __slots__ = ("_real",)

    def __init__(self, real: Any) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def load(self, ptrs: np.ndarray, mask: np.ndarray, other: np.ndarray, dtype: Any) -> Any:
        if CHECKER.armed:
            CHECKER.check("load", ptrs, mask, np.dtype(dtype).itemsize)
        return self._real.load(ptrs, mask, other, dtype)

    def store(self, ptrs: np.ndarray, value: np.ndarray, mask: np.ndarray) -> Any:
        if CHECKER.armed:
            CHECKER.check("store", ptrs, mask, np.asarray(value).dtype.itemsize)
        return self._real.store(ptrs, value, mask)

    def atomic_rmw(self, op: Any, ptrs: np.ndarray, value: np.ndarray, mask: np.ndarray,
                   sem: Any) -> Any:
        if CHECKER.armed:
            CHECKER.check("atomic", ptrs, mask, np.asarray(value).dtype.itemsize)
        return self._real.atomic_rmw(op, ptrs, value, mask, sem)

    def atomic_cas(self, ptrs: np.ndarray, cmp: np.ndarray, value: np.ndarray, sem: Any) -> Any:
        if CHECKER.armed:
            CHECKER.check("atomic", ptrs, None, np.asarray(value).dtype.itemsize)
        return self._real.atomic_cas(ptrs, cmp, value, sem)


# ----- recorded launches, and their replay on fresh buffers -------------------------------
RECORDING: list[list[dict[str, Any]]] = []  # while a wrapper runs: its launches
# while the device runs: the grader's checked sources of the kernels, by "module.kernel",
# and what was built of them; a launch runs the grader's build instead of the module's
SUBSTITUTES: list[dict[str, Any]] = []


def _substitute(name: str) -> Any:
    module, _, kernel = name.rpartition(".")
    key = f"{module.rpartition('.')[2]}.{kernel}"
    table = SUBSTITUTES[0]
    built = table["built"].get(key)
    if built is None:
        source = table["sources"].get(key)
        if source is None:
            raise RuntimeError(f"{name} is not a @triton.jit function of tinytrain/cuda the "
                               "grader can build from its source")
        if "error" in source:
            raise RuntimeError(str(source["error"]))
        built = table["built"][key] = source_kernel(source)
    return built


@contextmanager
def substituted(sources: dict[str, Any] | None) -> Any:
    """While the block runs (the device's probes), every launch runs the grader's build of
    the kernel from its checked source (``sources``; nothing changes without them)."""
    if sources is None:
        yield
        return
    SUBSTITUTES[:] = [{"sources": sources, "built": {}}]
    try:
        yield
    finally:
        SUBSTITUTES.clear()


def _np_dtype(name: str) -> np.dtype:
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))


class _ViewArg:
    """A tensor argument over a NumPy view the grader made (no object of the submission
    between the interpreter and the memory)."""

    __slots__ = ("view",)

    def __init__(self, view: np.ndarray) -> None:
        self.view = view

    @property
    def dtype(self) -> str:
        return self.view.dtype.name

    def data_ptr(self) -> int:
        return self.view.ctypes.data

    def untyped_storage(self) -> _Storage:
        return _Storage(self.view)

    def storage_offset(self) -> int:
        return 0

    def size(self) -> tuple[int, ...]:
        return self.view.shape

    def stride(self, dim: int | None = None) -> Any:
        strides = tuple(s // self.view.itemsize for s in self.view.strides)
        return strides if dim is None else strides[dim]

    def new_empty(self, *args: Any, **kwargs: Any) -> _Launchable:
        return _Launchable(self.view)


def _memory_view(ptr: int, shape: tuple[int, ...], strides: tuple[int, ...],
                 dtype: np.dtype) -> np.ndarray:
    """A view of the memory at ``ptr`` with this layout (strides in elements)."""
    byte_strides = tuple(s * dtype.itemsize for s in strides)
    lo = sum((n - 1) * s for n, s in zip(shape, byte_strides) if s < 0 and n > 0)
    hi = sum((n - 1) * s for n, s in zip(shape, byte_strides) if s > 0 and n > 0)
    size = hi - lo + dtype.itemsize
    if any(n == 0 for n in shape):
        return np.empty(shape, dtype)
    raw = np.frombuffer((ctypes.c_char * size).from_address(ptr + lo), np.uint8)
    return np.ndarray(shape, dtype, buffer=raw, offset=-lo, strides=byte_strides)


def _pin(arg: Any) -> _ViewArg:
    """A tensor argument of the submission's, read once: its address, shape, strides and
    dtype, as a view the interpreter will use (and the record describes)."""
    if isinstance(arg, _ViewArg):
        return arg
    ptr = int(arg.data_ptr())
    shape = tuple(int(n) for n in arg.size())
    strides = tuple(int(st) for st in arg.stride())
    dtype = _np_dtype(str(arg.dtype).rsplit(".", 1)[-1])
    return _ViewArg(_memory_view(ptr, shape, strides, dtype))


def _record(name: str, arg_names: list[str], pinned: dict[str, Any], grid: Any) -> dict[str, Any]:
    if callable(grid):
        grid = grid({n: (a.view if isinstance(a, _ViewArg) else a) for n, a in pinned.items()})
    grid = tuple(int(g) for g in grid)
    args: dict[str, Any] = {}
    for n, a in pinned.items():
        if isinstance(a, _ViewArg):
            v = a.view
            args[n] = {"ptr": int(v.ctypes.data), "shape": v.shape, "dtype": v.dtype,
                       "strides": tuple(st // v.itemsize for st in v.strides),
                       "before": np.array(v, copy=True)}
        else:
            args[n] = {"value": a}
    return {"kernel": name, "grid": grid, "args": args, "order": list(arg_names)}


def _span_of(ptr: int, shape: tuple[int, ...], strides: tuple[int, ...],
             itemsize: int) -> tuple[int, int]:
    lo = hi = ptr
    for n, st in zip(shape, strides):
        if n > 0:
            step = (n - 1) * st * itemsize
            lo, hi = (lo + step, hi) if step < 0 else (lo, hi + step)
    return lo, hi + itemsize


class _Shadow:
    """Fresh memory standing for the wrapper's: disjoint byte regions at the wrapper's
    addresses, each with what was stored into it by replayed launches."""

    def __init__(self, arguments: list[tuple[int, int, np.ndarray]]) -> None:
        self.regions: list[list[Any]] = []  # [lo, hi, bytes, written]
        self.arguments = arguments  # (lo, hi, raw bytes at call time): argument_images
        self.private: list[np.ndarray] = []  # the inputs' own memory
        self.stored: list[tuple[int, tuple[int, ...], tuple[int, ...], np.dtype]] = []

    def input(self, ptr: int, shape: tuple[int, ...], strides: tuple[int, ...],
              dtype: np.dtype, values: np.ndarray) -> np.ndarray:
        """Fresh memory holding ``values`` in this layout (an input of one launch)."""
        lo, hi = _span_of(ptr, shape, strides, dtype.itemsize)
        raw = np.full(hi - lo, 0xA5, np.uint8)
        self.private.append(raw)
        view = _memory_view(raw.ctypes.data + (ptr - lo), shape, strides, dtype)
        view[...] = values
        return view

    def in_arguments(self, lo: int, hi: int) -> bool:
        return any(a <= lo and hi <= b for a, b, _ in self.arguments)

    def region(self, lo: int, hi: int) -> list[Any]:
        """The region covering [lo, hi), made (or merged) as needed: new bytes are the
        wrapper arguments' at call time where they lie, NaN-pattern bytes elsewhere."""
        touching = [r for r in self.regions if r[0] < hi and lo < r[1]]
        if len(touching) == 1 and touching[0][0] <= lo and hi <= touching[0][1]:
            return touching[0]
        new_lo = min([lo, *[r[0] for r in touching]])
        new_hi = max([hi, *[r[1] for r in touching]])
        data = np.full(new_hi - new_lo, 0xA5, np.uint8)
        written = np.zeros(new_hi - new_lo, bool)
        for a, b, raw in self.arguments:
            x, y = max(a, new_lo), min(b, new_hi)
            if x < y:
                data[x - new_lo:y - new_lo] = raw[x - a:y - a]
        for r in touching:
            data[r[0] - new_lo:r[1] - new_lo] = r[2]
            written[r[0] - new_lo:r[1] - new_lo] = r[3]
            self.regions.remove(r)
        region = [new_lo, new_hi, data, written]
        self.regions.append(region)
        return region

    def view(self, ptr: int, shape: tuple[int, ...], strides: tuple[int, ...],
             dtype: np.dtype) -> tuple[np.ndarray, list[Any]]:
        lo, hi = _span_of(ptr, shape, strides, dtype.itemsize)
        region = self.region(lo, hi)
        base = region[2].ctypes.data + (ptr - region[0])
        return _memory_view(base, shape, strides, dtype), region

    def mark(self, addresses: np.ndarray, itemsize: int) -> None:
        """Stores of a replayed launch (addresses in the fresh memory)."""
        for region in self.regions:
            base = region[2].ctypes.data
            inside = (addresses >= np.uint64(base)) & \
                (addresses < np.uint64(base + region[2].size))
            for k in range(itemsize):
                region[3][(addresses[inside] - np.uint64(base)).astype(np.int64) + k] = True

    def _lookup(self, ptr: int, shape: tuple[int, ...], strides: tuple[int, ...],
                dtype: np.dtype) -> tuple[np.ndarray, int] | None:
        """The replay's values in this layout and how many elements no replayed store
        wrote, or None where no region holds it."""
        lo, hi = _span_of(ptr, shape, strides, dtype.itemsize)
        region = next((r for r in self.regions if r[0] <= lo and hi <= r[1]), None)
        if region is None:
            return None
        values = np.array(_memory_view(region[2].ctypes.data + (ptr - region[0]), shape,
                                       strides, dtype), copy=True)
        flags = _memory_view(region[3].ctypes.data + (ptr - region[0]), shape,
                             tuple(st * dtype.itemsize for st in strides), np.dtype(bool))
        return values, int((~flags).sum())  # the first byte of each element

    def read(self, array: np.ndarray) -> tuple[np.ndarray | None, int]:
        """What the replay left where ``array`` lies, and how many of its elements no
        replayed store wrote (None: no replayed launch touched that memory). A result that
        is a copy of what a launch stored (``out.copy()``, a reshaped copy) is found in
        that launch's output: the same bytes, every element stored."""
        if array.size == 0:
            return np.array(array, copy=True), 0
        strides = tuple(st // array.itemsize for st in array.strides)
        found = self._lookup(array.ctypes.data, array.shape, strides, array.dtype)
        if found is not None and found[1] == 0:
            return found
        mine = np.ascontiguousarray(array).view(np.uint8).reshape(-1)
        for ptr, shape, st, dtype in self.stored:
            if dtype != array.dtype or int(np.prod(shape, dtype=np.int64)) != array.size:
                continue
            other = self._lookup(ptr, shape, st, dtype)
            if other is not None and other[1] == 0 and np.array_equal(
                    np.ascontiguousarray(other[0]).view(np.uint8).reshape(-1), mine):
                return np.array(array, copy=True), 0
        return found if found is not None else (None, int(array.size))


def argument_images(arrays: list[np.ndarray]) -> list[tuple[int, int, np.ndarray]]:
    """The bytes of each array's memory (taken before the wrapper runs)."""
    images = []
    for a in arrays:
        if a.size:
            lo, hi = _span_of(a.ctypes.data, a.shape,
                              tuple(st // a.itemsize for st in a.strides), a.itemsize)
            images.append((lo, hi, np.frombuffer(ctypes.string_at(lo, hi - lo),
                                                 np.uint8).copy()))
    return images


def replay(log: list[dict[str, Any]], sources: dict[str, Any], outputs: dict[str, list[str]],
           arguments: list[tuple[int, int, np.ndarray]]) -> _Shadow:
    """The recorded launches again, in order, with the grader's kernels (built from
    ``sources``, by "module.kernel") and the recorded arguments, on fresh memory: inputs
    hold what they held at their launch, outputs (``outputs``: by kernel, the parameters
    the grader knows as outputs; else those stored and never loaded) start as NaN
    patterns, and buffers updated in place hold what the replay left there (the wrapper's
    arguments as they were called). Raises where a launch cannot be replayed."""
    with alone():
        return _replay(log, sources, outputs, _Shadow(arguments))


def _replay(log: list[dict[str, Any]], sources: dict[str, Any], outputs: dict[str, list[str]],
            shadow: _Shadow) -> _Shadow:
    for number, rec in enumerate(log):
        module, _, kernel = rec["kernel"].rpartition(".")
        key = f"{module.rpartition('.')[2]}.{kernel}"
        if key not in sources:
            raise KeyError(f"launch {number + 1} ran {kernel}, which the grader does not "
                           "replay (not a kernel of the task's modules)")
        if "error" in sources[key]:
            raise RuntimeError(f"launch {number + 1} ran {kernel}: {sources[key]['error']}")
        runner = source_kernel(sources[key])
        loaded, stored = set(rec.get("loaded", ())), set(rec.get("stored", ()))
        known = set(outputs.get(key, ()))
        tensors = {n: a for n, a in rec["args"].items() if "value" not in a}
        roles = {n: "output" if n in known or (n in stored and n not in loaded) else
                 ("inout" if n in stored else "input") for n in tensors}
        for name, a in tensors.items():  # the regions first: making one may merge others
            if roles[name] != "input":
                shadow.region(*_span_of(a["ptr"], a["shape"], a["strides"],
                                        np.dtype(a["dtype"]).itemsize))
        values: dict[str, Any] = {n: a["value"] for n, a in rec["args"].items() if "value" in a}
        spans = []
        for name, a in tensors.items():
            dtype = np.dtype(a["dtype"])
            kind = roles[name]
            if kind == "input":  # what it held at its launch, in its layout
                view = shadow.input(a["ptr"], a["shape"], a["strides"], dtype, a["before"])
            else:
                view, _ = shadow.view(a["ptr"], a["shape"], a["strides"], dtype)
                lo, hi = _span_of(a["ptr"], a["shape"], a["strides"], dtype.itemsize)
                if kind == "output":
                    with np.errstate(all="ignore"):
                        view[...] = (_cuda_fill.unwritten(dtype) if _cuda_fill.is_float(dtype)
                                     else _sentinel(dtype))[0]
                elif not shadow.in_arguments(lo, hi):  # in place, in the wrapper's memory
                    view[...] = a["before"]
                shadow.stored.append((a["ptr"], tuple(a["shape"]), tuple(a["strides"]), dtype))
            arg = _ViewArg(view)
            values[name] = arg
            spans.append(_ArgSpan(name, arg))
        CHECKER.arm(kernel, spans, None)
        CHECKER.on_store = shadow.mark
        try:
            with np.errstate(all="ignore"):
                runner[tuple(rec["grid"])](**values)
        finally:
            CHECKER.disarm()
    return shadow


_installed: list[bool] = []


def _undefined_lanes(interpreter: Any) -> None:
    """Masked-out lanes of a load without ``other`` read as the guard pattern (NaN for
    floats), not the interpreter's zeros: Triton leaves them undefined ("If other is None,
    the masked-out value is undefined"), so a kernel whose results depend on them is
    wrong on a GPU, and must not pass here because the interpreter happens to give 0."""
    builder = interpreter.InterpreterBuilder

    def create_masked_load(self: Any, ptrs: Any, mask: Any, other: Any, cache_policy: Any,
                           is_volatile: Any) -> Any:
        if other is None:
            dtype_tt = ptrs.get_element_ty()
            dtype_np = np.dtype(interpreter._get_np_dtype(dtype_tt))
            filled = np.full(np.shape(ptrs.data), _sentinel(dtype_np)[0], dtype_np)
            other = interpreter.TensorHandle(filled, dtype_tt)
        return original(self, ptrs, mask, other, cache_policy, is_volatile)

    original = builder.create_masked_load
    builder.create_masked_load = create_masked_load


def _install() -> None:
    """Put the checker in front of the interpreter's memory accesses and count launches."""
    if _installed:
        return
    interpreter = importlib.import_module("triton.runtime.interpreter")
    if not isinstance(interpreter._interpreter, _CheckedInterpreter):
        interpreter._interpreter = _CheckedInterpreter(interpreter._interpreter)
    _undefined_lanes(interpreter)
    cls = interpreter.InterpretedFunction
    run = cls.run

    def counted_run(self: Any, *args: Any, grid: Any, warmup: Any, **kwargs: Any) -> Any:
        if warmup:
            return run(self, *args, grid=grid, warmup=warmup, **kwargs)
        fn = self.fn
        name = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__name__', '?')}"
        LAUNCHES.append(name)
        if CHECKER.armed:  # a grader's launch: its guarded buffers are armed already
            return run(self, *args, grid=grid, warmup=warmup, **kwargs)
        # any other launch (a wrapper's, the device's) may touch the tensors it was given;
        # they are pinned (address, shape, strides, dtype read once) and recorded
        named = [*zip(self.arg_names, args), *kwargs.items()]
        pinned = {n: _pin(a) if hasattr(a, "data_ptr") else a for n, a in named}
        record = None
        if RECORDING:
            record = _record(name, self.arg_names, pinned, grid)
            RECORDING[0].append(record)
            grid = tuple(record["grid"])
        positional = [pinned[n] for n, _ in zip(self.arg_names, args)]
        keywords = {n: pinned[n] for n in kwargs}
        target = _substitute(name) if SUBSTITUTES else self
        spans = [_ArgSpan(n, a) for n, a in pinned.items() if isinstance(a, _ViewArg)]
        CHECKER.arm(getattr(fn, "__name__", "?"), spans, None, count=record is not None)
        try:
            return run(target, *positional, grid=grid, warmup=warmup, **keywords)
        finally:
            if record is not None:
                record["loaded"] = sorted(n for n, c in CHECKER.loads.items() if c)
                record["stored"] = sorted(n for n, c in CHECKER.stored.items() if c)
            CHECKER.disarm()

    cls.run = counted_run
    _installed.append(True)


ALONE: list[bool] = []  # set by the worker: its threads are the submission's


@contextmanager
def alone() -> Any:
    """While the grader's own launches run: no thread of the submission alive beside them,
    and no garbage collection (whose finalizers could run the submission's code)."""
    import gc

    if ALONE and len(sys._current_frames()) > 1:
        raise RuntimeError("a thread of the submission is still running: the grader launches "
                           "kernels only with no other thread alive")
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextmanager
def checked(kernel: str, buffers: list[GuardedBuffer], trace: str | None = None) -> Any:
    """Bounds-check every access while the block runs (one launch of ``kernel``)."""
    CHECKER.arm(kernel, buffers, trace, count=True)
    try:
        with alone():
            yield CHECKER
    finally:
        CHECKER.disarm()


# ----- the student's kernels ---------------------------------------------------------
def source_kernel(source: dict[str, Any]) -> Any:
    """The kernel the grader's checked source describes (``graders.probes._cuda_ast``),
    built from that text alone under the interpreter (``graders.probes._cuda_source``):
    the submission's module-level code has no part in it. Built afresh for every launch
    (a few milliseconds): no cache the submission could fill."""
    return _cuda_source.build(triton_module(), source)


def submission_source(tt: Any, module: str, kernel: str) -> dict[str, Any]:
    """The checked source of a kernel read from the submission ``tt`` was imported from
    (a probe run by hand, without the grader, reads it there)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(tt.__file__)))
    return _cuda_ast.KernelSource(root, module, kernel).wire()


def root_cause(exc: BaseException) -> BaseException:
    """The exception a kernel raised, through the interpreter's InterpreterError wrappers."""
    from triton.runtime.errors import InterpreterError

    seen = 0
    while isinstance(exc, InterpreterError) and exc.__cause__ is not None and seen < 50:
        exc, seen = exc.__cause__, seen + 1
    return exc


# ----- the seal: what the submission must not change ------------------------------------
# The worker prepares this machinery before it imports the submission (``prepare``) and
# records every module, class and function the checks run on; before and after each
# assignment-6 probe it verifies that nothing recorded was replaced (``Seal.checker``), so
# a submission whose import-time code swaps the bounds checker, the guard comparison, a
# probe or the interpreter's memory accesses gets an error, not a grade.
SEALED_MODULES = (
    "builtins", "ast", "inspect", "linecache", "json", "hashlib", "numpy",
    "graders.probes", "graders.probes.cuda", "graders.probes._cuda_runtime",
    "graders.probes._cuda_source", "graders.probes._cuda_ast", "graders.probes._observe",
    "graders.harness.protocol", "graders.harness.worker",
    "triton", "triton.language", "triton.language.core", "triton.language.semantic",
    "triton.language.math", "triton.language.standard", "triton.runtime.interpreter",
    "triton.runtime.jit", "triton._C.libtriton.interpreter", "triton.compiler",
    "triton.compiler.compiler", "triton.compiler.code_generator",
)
_OWN = ("graders.",)


class Seal:
    """References taken before the submission ran, and the check that they still hold."""

    def __init__(self) -> None:
        # (label, container, key, value, owner): with an owner (triton.language's modules
        # and classes) a changed entry is put back, not reported: the interpreter leaves
        # them patched after a jit function calls another (InterpretedFunction.__call__)
        self._entries: list[tuple[str, Any, Any, Any, Any]] = []
        self._attrs: list[tuple[str, Any, str, Any]] = []  # (label, object, attribute, value)
        self._instances: list[tuple[str, Any, frozenset[str]]] = []
        self._seen: set[int] = set()
        self._keep: list[Any] = []

    def _dict(self, label: str, container: Any, owner: Any = None) -> None:
        for key in list(container.keys()):
            value = container.get(key)
            self._entries.append((f"{label}.{key}", container, key, value, owner))
            self._object(f"{label}.{key}", value)

    def _function(self, label: str, fn: Any) -> None:
        if id(fn) in self._seen:
            return
        self._seen.add(id(fn))
        self._keep.append(fn)
        for attr in ("__code__", "__defaults__", "__kwdefaults__", "__closure__"):
            self._attrs.append((label, fn, attr, getattr(fn, attr)))
        for i, cell in enumerate(fn.__closure__ or ()):
            try:
                self._attrs.append((f"{label} (closure {i})", cell, "cell_contents",
                                    cell.cell_contents))
            except ValueError:  # an empty cell
                pass

    def _object(self, label: str, value: Any) -> None:
        import types

        if isinstance(value, types.FunctionType):
            self._function(label, value)
        elif isinstance(value, (staticmethod, classmethod)):
            self._object(label, value.__func__)
        elif isinstance(value, property):
            for part in (value.fget, value.fset, value.fdel):
                if part is not None:
                    self._object(label, part)
        elif isinstance(value, type) and id(value) not in self._seen and \
                str(getattr(value, "__module__", "")).startswith(("triton", "graders")):
            self._seen.add(id(value))
            self._keep.append(value)
            language = str(value.__module__).startswith("triton.language")
            self._dict(label, value.__dict__, value if language else None)

    def instance(self, label: str, obj: Any) -> None:
        """``obj`` (an instance the checks use) may gain no attribute that shadows its
        class's."""
        self._instances.append((label, obj, frozenset(getattr(obj, "__dict__", {}))))

    def module(self, name: str) -> None:
        module = sys.modules.get(name)
        if module is None:
            return
        self._entries.append((f"sys.modules[{name!r}]", sys.modules, name, module, None))
        self._dict(name, module.__dict__, module if name.startswith("triton.language") else None)

    def checker(self) -> Any:
        """A function that lists what was replaced since the seal ([] when nothing), over
        frozen copies of the records (the worker keeps it, its code and its cells)."""
        import builtins

        entries, attrs = tuple(self._entries), tuple(self._attrs)
        instances, modules = tuple(self._instances), tuple(sys.modules.get(name) for name in
                                                           SEALED_MODULES if name.startswith(_OWN))
        names = frozenset(k for k in builtins.__dict__ if not k.startswith("__"))
        gone, get, put = _GONE, getattr, setattr

        def broken() -> list[str]:
            bad = []
            for label, container, key, value, owner in entries:
                if container.get(key, gone) is not value:
                    if owner is None:
                        bad.append(label)
                    else:
                        put(owner, key, value)
            bad += [label for label, obj, attr, value in attrs
                    if get(obj, attr, gone) is not value]
            for label, obj, keys in instances:
                added = set(get(obj, "__dict__", {})) - keys
                bad += [f"{label}.{name}" for name in added if hasattr(type(obj), name)]
            for module in modules:
                if module is not None:
                    bad += [f"{module.__name__}.{key}" for key in module.__dict__
                            if key in names]
            return bad

        return broken


_GONE = object()
SEAL: list[Any] = []  # the check of the seal, once taken


def prepare(threads: bool = False) -> Any:
    """Before the submission is imported (the worker calls this): triton under the
    interpreter with the checker installed, every probe module of assignment 6 loaded,
    and the seal taken. Returns the seal's check (``Seal.checker``), or None where triton
    is not installed (nothing to protect). ``threads``: every other thread of this process
    is the submission's (the worker), so the grader's launches refuse to run beside one."""
    if threads and not ALONE:
        ALONE.append(True)
    if SEAL:
        return SEAL[0]
    import importlib.util

    try:
        if importlib.util.find_spec("triton") is None:
            return None
    except (ImportError, ValueError):
        return None
    try:
        triton_module()
    except RuntimeError:
        return None
    for name in ("triton.runtime.interpreter", "triton.compiler", "graders.probes.cuda",
                 "graders.probes._cuda_source", "graders.probes._cuda_ast",
                 "graders.harness.protocol"):
        importlib.import_module(name)
    seal = Seal()
    for name in SEALED_MODULES:
        seal.module(name)
    interpreter = sys.modules["triton.runtime.interpreter"]
    seal.instance("triton.runtime.interpreter.interpreter_builder",
                  interpreter.interpreter_builder)
    seal.instance("triton.runtime.interpreter.interpreter_semantic",
                  interpreter.interpreter_semantic)
    real = interpreter._interpreter._real
    seal._attrs.append(("triton.runtime.interpreter._interpreter._real",
                        interpreter._interpreter, "_real", real))
    seal._dict("triton._C.libtriton.interpreter", real.__dict__)
    seal._dict("graders.probes._REGISTRY", _REGISTRY)
    check = seal.checker()
    SEAL.append(check)
    return check


def tampered(broken: list[str]) -> str:
    """The error for a seal found broken."""
    shown = ", ".join(broken[:5]) + (f" and {len(broken) - 5} more" if len(broken) > 5 else "")
    return ("the submission changed the grader's kernel machinery (" + shown + "): the "
            "bounds checks, guard regions and launches of assignment 6 belong to the grader, "
            "and a submission that replaces them is not graded")
