"""The cuda device's allocator (reference/tinytrain/cuda/_runtime.py): the DeviceAllocator
contract (views share storage, copies only at copy_from_host / copy_to_host / item, each
counted by a spy, launches on buffers stage nothing, dtype/shape/stride round trips,
bfloat16 through ml_dtypes), run against HostAllocator always (under Triton's
interpreter) and against CupyAllocator where CuPy and a GPU are present (natively).
Each allocator's checks run in one fresh process (tests/kerneltable/cuda_allocator_contract.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ..conftest import REFERENCE, ROOT

pytest.importorskip("triton")
pytest.importorskip("ml_dtypes")

CONTRACT = ROOT / "tests" / "kerneltable" / "cuda_allocator_contract.py"
CHECKS = ("allocate_shape_dtype_strides", "round_trip_dtypes", "bfloat16_is_ml_dtypes",
          "copy_from_host_casts_and_checks_shape", "views_share_storage_without_copies",
          "view_refuses_what_needs_a_copy_reshape_copies_on_device", "item_is_one_host_copy",
          "free_returns_the_bytes", "launch_on_buffers_stages_nothing",
          "launch_bfloat16_buffers", "numpy_arguments_behave_as_before",
          "host_storage_is_marked_device_memory")
_RUNS: dict[str, dict[str, Any]] = {}


def _gpu() -> bool:
    """Whether CuPy sees a GPU. TINYTRAIN_REQUIRE_GPU=1 (scripts/gpu_check.sh on a GPU
    machine) turns a skip into a failure: there the native half must run."""
    required = os.environ.get("TINYTRAIN_REQUIRE_GPU") == "1"
    try:
        import cupy
    except ImportError:
        if required:
            pytest.fail("TINYTRAIN_REQUIRE_GPU=1 and CuPy is not importable")
        pytest.skip("could not import 'cupy'")
    try:
        found = cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no driver, no device
        found = False
    if required and not found:
        pytest.fail("TINYTRAIN_REQUIRE_GPU=1 and CuPy sees no GPU")
    return found


def _run(kind: str) -> dict[str, Any]:
    if kind not in _RUNS:
        env = dict(os.environ)
        env.pop("TINYTRAIN_ALLOCATOR", None)
        if kind == "host":
            env["TRITON_INTERPRET"] = "1"
        else:
            env.pop("TRITON_INTERPRET", None)
        proc = subprocess.run([sys.executable, str(CONTRACT), kind, str(REFERENCE)],
                              capture_output=True, text=True, timeout=600, env=env,
                              cwd=str(ROOT))
        assert proc.returncode == 0, proc.stderr[-4000:]
        _RUNS[kind] = json.loads(proc.stdout.strip().splitlines()[-1])
    return _RUNS[kind]


@pytest.mark.parametrize("check", CHECKS)
def test_host_allocator(check: str) -> None:
    run = _run("host")
    assert run["interpreted"] is True
    assert run["results"][check] == "ok", run["results"][check]


@pytest.mark.parametrize("check", CHECKS)
def test_cupy_allocator(check: str) -> None:
    if not _gpu():
        pytest.skip("no GPU: CupyAllocator runs natively only")
    run = _run("cupy")
    assert run["interpreted"] is False
    assert run["results"][check] == "ok", run["results"][check]


def test_the_contract_lists_every_check() -> None:
    assert set(_run("host")["results"]) == set(CHECKS)


SELECT = """
import os, sys
sys.path.insert(0, sys.argv[1])
from tinytrain.cuda import _runtime as rt
print(type(rt.select_allocator()).__name__, type(rt.allocator()).__name__,
      rt.allocator() is rt.allocator())
"""


@pytest.mark.parametrize("env", [{"TRITON_INTERPRET": "1"},
                                 {"TRITON_INTERPRET": "1", "TINYTRAIN_ALLOCATOR": "cupy"},
                                 {"TINYTRAIN_ALLOCATOR": "host"}])
def test_interpreter_or_forced_host_selects_host_memory(env: dict[str, str]) -> None:
    full = {k: v for k, v in os.environ.items()
            if k not in ("TRITON_INTERPRET", "TINYTRAIN_ALLOCATOR")} | env
    proc = subprocess.run([sys.executable, "-c", SELECT, str(REFERENCE)], capture_output=True,
                          text=True, timeout=120, env=full)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["HostAllocator", "HostAllocator", "True"]


def test_the_worker_path_never_imports_torch_or_cupy_under_the_interpreter() -> None:
    code = SELECT + "import numpy as np\nrt.allocator().from_host(np.ones(3)).copy_to_host()\n" \
        "print('torch' in sys.modules, 'cupy' in sys.modules)"
    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run([sys.executable, "-c", code, str(REFERENCE)], capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[-2:] == ["False", "False"]


def test_require_gpu_turns_the_native_skip_into_a_failure() -> None:
    if os.environ.get("TINYTRAIN_REQUIRE_GPU") == "1":
        pytest.skip("already required")
    try:
        import cupy  # noqa: F401
        pytest.skip("CuPy is here")
    except ImportError:
        pass
    env = dict(os.environ, TINYTRAIN_REQUIRE_GPU="1")
    proc = subprocess.run([sys.executable, "-m", "pytest", str(Path(__file__)), "-q",
                           "-p", "no:benchmark", "-p", "no:cacheprovider",
                           "-k", "test_cupy_allocator and allocate_shape"],
                          capture_output=True, text=True, timeout=300, env=env, cwd=str(ROOT))
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "1 failed" in proc.stdout and "CuPy is not importable" in proc.stdout
