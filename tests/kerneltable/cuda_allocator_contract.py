"""The DeviceAllocator contract, run as a script in a fresh process (so that Triton's
interpreter is switched on, or not, before triton is imported):

    python tests/kerneltable/cuda_allocator_contract.py <host|cupy> <reference folder>

prints one JSON object {check name: "ok" or the failure's traceback}. The checks count
every host/device copy with the allocator's spy (``copies``) and a spy on the staging
path, so "copies happen only at copy_from_host / copy_to_host / item" is asserted, not
assumed. tests/kerneltable/test_cuda_allocator.py runs it and reports each check as a test."""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable

import numpy as np

KIND, FOLDER = sys.argv[1], sys.argv[2]
sys.path.insert(0, FOLDER)

from tinytrain.cuda import _runtime as rt  # noqa: E402
from tinytrain.device_state import CudaArray  # noqa: E402

memory = rt.HostAllocator() if KIND == "host" else rt.CupyAllocator()
rt.set_allocator(memory)
CHECKS: dict[str, Callable[[], None]] = {}


def check(fn: Callable[[], None]) -> Callable[[], None]:
    CHECKS[fn.__name__] = fn
    return fn


def copies() -> tuple[int, int, int]:
    c = memory.copies
    return c.to_device, c.to_host, c.staged


def host_of(buffer: rt.DeviceBuffer) -> np.ndarray:
    return buffer.copy_to_host()


@check
def allocate_shape_dtype_strides() -> None:
    for dtype, shape in ((np.float32, (3, 5)), (np.float16, (2, 3, 4)), (np.int64, (7,)),
                         (np.float32, ()), (np.float32, (0, 4))):
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        b = memory.allocate(nbytes, dtype, shape)
        assert b.shape == shape and b.np_dtype == np.dtype(dtype), b
        assert b.dtype == np.dtype(dtype).name and b.nbytes == nbytes
        assert b.stride() == tuple(np.empty(shape, dtype).strides[i] // np.dtype(dtype).itemsize
                                   for i in range(len(shape)))
        assert b.is_contiguous() and b.base is None and b.storage() is b
        if nbytes:
            assert b.data_ptr() % 16 == 0, "unaligned storage"
    try:
        memory.allocate(10, np.float32, (3,))
    except ValueError:
        pass
    else:
        raise AssertionError("a wrong byte count was accepted")


@check
def round_trip_dtypes() -> None:
    import ml_dtypes

    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int64, np.int32,
                  np.int8, np.uint8, np.bool_):
        host = (rng.standard_normal((4, 6)) * 5).astype(dtype)
        before = copies()
        b = memory.from_host(host)
        back = b.copy_to_host()
        assert copies() == (before[0] + 1, before[1] + 1, before[2]), (dtype, copies(), before)
        assert back.dtype == np.dtype(dtype) and back.shape == host.shape
        assert back.tobytes() == host.tobytes(), f"{np.dtype(dtype)} bytes changed"
        assert type(back) is np.ndarray and back.flags.c_contiguous
        assert not np.shares_memory(back, host)


@check
def bfloat16_is_ml_dtypes() -> None:
    import ml_dtypes

    host = np.array([1.0, -2.5, 3.140625, 65280.0], ml_dtypes.bfloat16)
    b = memory.from_host(host)
    assert b.dtype == "bfloat16" and b.np_dtype == np.dtype(ml_dtypes.bfloat16)
    assert b.stride() == (1,) and b.nbytes == 8
    back = b.copy_to_host()
    assert back.dtype == np.dtype(ml_dtypes.bfloat16)
    assert back.astype(np.float32).tolist() == [1.0, -2.5, 3.140625, 65280.0]


@check
def copy_from_host_casts_and_checks_shape() -> None:
    b = memory.empty((2, 3), np.float32)
    b.copy_from_host(np.arange(6, dtype=np.int64).reshape(2, 3))
    assert b.copy_to_host().tolist() == [[0, 1, 2], [3, 4, 5]]
    try:
        b.copy_from_host(np.zeros((3, 2)))
    except ValueError:
        pass
    else:
        raise AssertionError("a shape mismatch was accepted")


@check
def views_share_storage_without_copies() -> None:
    host = np.arange(24, dtype=np.float32).reshape(4, 6)
    b = memory.from_host(host)
    before = copies()
    v = b.view(2, 12)
    r = b.reshape((8, 3))
    t = b.transpose(1, 0)
    s = b[1:3]
    e = b[:, ::2]
    assert copies() == before, "a view copied"
    for view in (v, r, t, s, e):
        assert view.storage() is b and view.base is b
    assert v.data_ptr() == r.data_ptr() == t.data_ptr() == b.data_ptr()
    assert s.data_ptr() == b.data_ptr() + 6 * 4
    assert t.shape == (6, 4) and t.stride() == (1, 6) and not t.is_contiguous()
    assert e.shape == (4, 3) and e.stride() == (6, 2)
    assert v[1].storage() is b, "a view of a view does not reach the storage"
    # a write through a view lands in the base (and in the other views)
    s.copy_from_host(np.full((2, 6), -1, np.float32))
    expected = host.copy()
    expected[1:3] = -1
    assert host_of(b).tolist() == expected.tolist()
    assert host_of(t).tolist() == expected.T.tolist()
    e.copy_from_host(np.zeros((4, 3), np.float32))
    expected[:, ::2] = 0
    assert host_of(b).tolist() == expected.tolist(), "a strided write missed"
    assert host_of(v).tolist() == expected.reshape(2, 12).tolist()


@check
def view_refuses_what_needs_a_copy_reshape_copies_on_device() -> None:
    b = memory.from_host(np.arange(12, dtype=np.float32).reshape(3, 4))
    t = b.transpose(1, 0)
    try:
        t.view(12)
    except RuntimeError:
        pass
    else:
        raise AssertionError("view of a transpose as 1-D did not refuse")
    before = copies()
    flat = t.reshape(12)
    assert copies() == before, "reshape crossed to the host"
    assert flat.storage() is not b and flat.is_contiguous() and flat.data_ptr() != b.data_ptr()
    assert host_of(flat).tolist() == np.arange(12).reshape(3, 4).T.reshape(12).tolist()
    c = t.contiguous()
    assert c.base is None and c.is_contiguous() and c.stride() == (3, 1) and b.contiguous() is b


@check
def item_is_one_host_copy() -> None:
    b = memory.from_host(np.array([[2.5]], np.float32))
    before = copies()
    assert b.item() == 2.5
    assert copies() == (before[0], before[1] + 1, before[2])
    try:
        memory.from_host(np.zeros(2, np.float32)).item()
    except RuntimeError:
        pass
    else:
        raise AssertionError("item() of two elements")


@check
def free_returns_the_bytes() -> None:
    live = memory.live_bytes
    b = memory.empty((256, 256), np.float32)
    assert memory.live_bytes == live + 256 * 256 * 4
    v = b[1:]
    v.free()  # a view frees nothing
    assert memory.live_bytes == live + 256 * 256 * 4
    b.free()
    assert memory.live_bytes == live and b.array is None


@check
def launch_on_buffers_stages_nothing() -> None:
    from tinytrain.cuda import _common

    a = memory.from_host(np.arange(8, dtype=np.float32).reshape(2, 4))
    bias = memory.from_host(np.full((1, 4), 0.5, np.float32))
    out = memory.empty((2, 4), np.float32)
    sa = [0, 0, 4, 1]
    sb = [0, 0, 0, 1]  # broadcast over rows
    before = copies()
    rt.launch(_common.binary_kernel, (1,), a, bias, out, 8, 1, 2, 4, *sa, *sb, OP=0,
              BLOCK_SIZE=64)
    rt.launch(_common.binary_kernel, (1,), out.view(8), out.view(8), out.view(8), 8, 1, 1, 8,
              0, 0, 0, 1, 0, 0, 0, 1, OP=2, BLOCK_SIZE=64)  # in place, through views
    assert copies() == before, f"a launch on buffers copied: {copies()} vs {before}"
    expected = ((np.arange(8).reshape(2, 4) + 0.5) ** 2).tolist()
    assert host_of(out).tolist() == expected


@check
def launch_bfloat16_buffers() -> None:
    import ml_dtypes
    from tinytrain.cuda import _common

    x = memory.from_host(np.array([1.0, 2.0, -3.0, 0.5], ml_dtypes.bfloat16))
    out = memory.empty((4,), ml_dtypes.bfloat16)
    rt.launch(_common.binary_kernel, (1,), x, x, out, 4, 1, 1, 4, 0, 0, 0, 1, 0, 0, 0, 1,
              OP=0, BLOCK_SIZE=16)
    got = host_of(out)
    assert got.dtype == np.dtype(ml_dtypes.bfloat16)
    assert got.astype(np.float32).tolist() == [2.0, 4.0, -6.0, 1.0]


@check
def numpy_arguments_behave_as_before() -> None:
    from tinytrain.cuda import _common

    before = copies()
    got = _common.binary("add", np.arange(6, dtype=np.float32).reshape(2, 3),
                         np.float32(1.0) * np.ones(3, np.float32), np.dtype(np.float32))
    assert got.tolist() == [[1, 2, 3], [4, 5, 6]]
    staged = copies()[2] - before[2]
    if memory.device:
        assert staged == 3, f"{staged} arrays staged for a launch on 3 NumPy arrays"
    else:
        assert copies() == before, "the interpreter's path copied"


@check
def host_storage_is_marked_device_memory() -> None:
    b = memory.empty((2, 2), np.float32)
    if memory.device:
        assert not isinstance(b.array, np.ndarray), "device memory is a NumPy array"
    else:
        assert isinstance(b.array, CudaArray), type(b.array)
        copied = b.transpose(1, 0).contiguous()
        assert copied.base is None and isinstance(copied.array, CudaArray), type(copied.array)


def main() -> None:
    results = {}
    for name, fn in CHECKS.items():
        try:
            fn()
            results[name] = "ok"
        except Exception:  # noqa: BLE001 - reported per check
            results[name] = traceback.format_exc()
    print(json.dumps({"allocator": type(rt.allocator()).__name__,
                      "interpreted": rt.interpreted(), "results": results}))


if __name__ == "__main__":
    main()
