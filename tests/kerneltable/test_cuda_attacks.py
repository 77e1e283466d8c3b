"""Hostile variants of the reference's assignment-6 kernels, graded with the real command
line (as root the worker runs as its own user): each attack must cost the tests it aims
at, and a correct kernel written differently (helper jit functions, literal constexprs,
a jit function imported from another module) must keep full marks.

The attacks: import-time code of the submission that replaces the grader's bounds checker
and guard comparison (a kernel loading past its buffer then scored full); a kernel body
that reaches the NumPy memory behind its pointers under the interpreter; the same behind
a constexpr set from TRITON_INTERPRET (a compiled branch that stores zeros); a wrapper that
computes with NumPy and launches a kernel whose stores never fire."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from ..conftest import REFERENCE, grade

pytest.importorskip("triton")

ELEMENTWISE = Path("tinytrain/cuda/elementwise.py")

ADD_BODY = '''    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
'''

# a plain Python function that does a kernel's work in NumPy on the memory behind the
# interpreter's pointers (x_ptr.handle.data holds addresses)
NUMPY_ADD = '''

def _numpy_add(x_ptr, y_ptr, out_ptr, n):
    import ctypes

    def at(ptr, count):  # the buffer's own dtype (float16 too: the wrappers draw both)
        address = int(ptr.handle.data.reshape(-1)[0])
        dtype = np.dtype(np.float16 if "fp16" in str(ptr.dtype) else np.float32)
        raw = (ctypes.c_uint8 * (count * dtype.itemsize)).from_address(address)
        return np.ctypeslib.as_array(raw).view(dtype)

    n = int(n.handle.data.reshape(-1)[0]) if hasattr(n, "handle") else int(n)
    if int(tl.program_id(0).handle.data.reshape(-1)[0]) == 0:
        at(out_ptr, n)[:] = at(x_ptr, n) + at(y_ptr, n)
'''


def _variant(tmp_path: Path, edit: Any) -> Path:
    sub = tmp_path / "sub"
    shutil.copytree(REFERENCE, sub, ignore=shutil.ignore_patterns("__pycache__"))
    edit(sub)
    return sub


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{path}: the reference changed; update the attack"
    path.write_text(text.replace(old, new, 1))


def _tests(score: dict[str, Any], task: str = "6.1") -> dict[str, dict[str, Any]]:
    tasks = {t["id"]: t for t in score.get("tasks", [])}
    assert task in tasks, score.get("_stderr", "")[-3000:] + score.get("_stdout", "")[-3000:]
    return {t["name"]: t for t in tasks[task]["tests"]}


def _grade(sub: Path, tmp_path: Path) -> dict[str, dict[str, Any]]:
    return _tests(grade(sub, tmp_path / "out", "--tasks", "6.1", timeout=900))


def test_replacing_the_bounds_checker_at_import_is_refused(tmp_path):
    def edit(sub: Path) -> None:
        # a load past the end of x (the store stays masked: values right, memory wrong)
        _replace(sub / ELEMENTWISE, "    x = tl.load(x_ptr + offsets, mask=mask)\n",
                 "    x = tl.load(x_ptr + offsets)\n")
        # at import, from a homework file (the given cuda/__init__.py is put back); the
        # grader's modules are sealed, so it finds the runtime in the worker's memory
        with open(sub / ELEMENTWISE, "a") as f:
            f.write('''

def _replace_the_checker():
    import gc, types
    for _rt in gc.get_objects():
        if (isinstance(_rt, types.ModuleType)
                and getattr(_rt, "__name__", "") == "graders.probes._cuda_runtime"):
            _rt._Checker.check = lambda self, *args, **kwargs: None
            _rt.GuardedBuffer.corrupted = lambda self: None
            print("REPLACED the bounds checker")


_replace_the_checker()
''')

    tests = _grade(_variant(tmp_path, edit), tmp_path)
    assert any("REPLACED the bounds checker" in t["output"] for t in tests.values())
    for name in ("test_kernel[add_kernel-float32]", "test_wrapper[elementwise.add]"):
        assert tests[name]["status"] in ("failed", "error"), tests[name]
        # refused by the seal, or caught by the checks the grader holds (the bad load, or
        # a replay the replaced checker could not bend): not passed either way


def test_a_kernel_computing_with_numpy_under_the_interpreter_fails(tmp_path):
    def edit(sub: Path) -> None:
        _replace(sub / ELEMENTWISE, ADD_BODY, "    _numpy_add(x_ptr, y_ptr, out_ptr, n_elements)\n")
        _replace(sub / ELEMENTWISE, "\n\n@triton.jit\ndef add_kernel", NUMPY_ADD +
                 "\n\n@triton.jit\ndef add_kernel")

    tests = _grade(_variant(tmp_path, edit), tmp_path)
    for name in ("test_kernel[add_kernel-float32]", "test_wrapper[elementwise.add]"):
        assert tests[name]["status"] == "failed", tests[name]
    message = tests["test_kernel[add_kernel-float32]"]["message"]
    assert "tinytrain/cuda/elementwise.py, line" in message and "_numpy_add" in message, message


def test_a_constexpr_set_by_the_interpreter_flag_fails(tmp_path):
    """The interpreter runs a NumPy branch, the compiler a branch storing zeros: a constexpr
    from TRITON_INTERPRET and a dict look-up (which Triton's dependency scan lets by)."""

    def edit(sub: Path) -> None:
        _replace(sub / ELEMENTWISE, ADD_BODY, '''    if _INTERPRETED:
        _CHEATS["add"](x_ptr, y_ptr, out_ptr, n_elements)
    else:
        offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        tl.store(out_ptr + offsets, tl.zeros((BLOCK_SIZE,), tl.float32),
                 mask=offsets < n_elements)
''')
        _replace(sub / ELEMENTWISE, "\n\n@triton.jit\ndef add_kernel", NUMPY_ADD + '''
_INTERPRETED = tl.constexpr(__import__("os").environ.get("TRITON_INTERPRET") == "1")
_CHEATS = {"add": _numpy_add}


@triton.jit
def add_kernel''')

    tests = _grade(_variant(tmp_path, edit), tmp_path)
    for name in ("test_kernel[add_kernel-float32]", "test_kernel[add_kernel-float16]",
                 "test_compiles_for_sm90[add_kernel]", "test_wrapper[elementwise.add]"):
        assert tests[name]["status"] == "failed", tests[name]
    assert "_INTERPRETED" in tests["test_kernel[add_kernel-float32]"]["message"]


def test_a_wrapper_computing_with_numpy_around_a_silent_kernel_fails(tmp_path):
    def edit(sub: Path) -> None:
        _replace(sub / ELEMENTWISE, "    tl.store(out_ptr + offsets, x + y, mask=mask)\n",
                 "    tl.store(out_ptr + offsets, x + y, mask=mask & (offsets < 0))\n")
        _replace(sub / ELEMENTWISE, "    out = np.empty_like(x)\n", "    out = x + y\n")

    tests = _grade(_variant(tmp_path, edit), tmp_path)
    wrapper = tests["test_wrapper[elementwise.add]"]
    assert wrapper["status"] == "failed", wrapper
    assert "not written by its kernel launches" in wrapper["message"], wrapper["message"]
    # the other wrappers are untouched
    assert tests["test_wrapper[elementwise.bias_gelu]"]["status"] == "passed"


def test_a_correct_kernel_written_differently_keeps_full_marks(tmp_path):
    """Helper jit functions (one imported from another module, one taking a constexpr),
    literal constexprs with arithmetic, tl under another name, a wrapper returning a copy
    of its kernel's output."""

    def edit(sub: Path) -> None:
        _replace(sub / ELEMENTWISE, ADD_BODY, '''    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE) * _ONE
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, _pair_sum(x_ptr, y_ptr, offsets, mask, _SCALE), mask=mask)
''')
        _replace(sub / ELEMENTWISE, "\n\n@triton.jit\ndef add_kernel", '''
_ONE = tl.constexpr(2 - 1)
_SCALE = tl.constexpr(1.0)
language = tl


@triton.jit
def _pair_sum(x_ptr, y_ptr, offsets, mask, SCALE: tl.constexpr):
    x = language.load(x_ptr + offsets, mask=mask)
    return _scaled(x + tl.load(y_ptr + offsets, mask=mask), SCALE)


@triton.jit
def add_kernel''')
        # the wrapper returns a copy of what its kernel stored
        _replace(sub / ELEMENTWISE, "BLOCK_SIZE=ADD_BLOCK)\n    return out\n",
                 "BLOCK_SIZE=ADD_BLOCK)\n    return out.copy()\n")
        _replace(sub / ELEMENTWISE, "from ._common import sum_rows\n",
                 "from ._common import sum_rows\nfrom ._helpers import _scaled\n")
        (sub / "tinytrain/cuda/_helpers.py").write_text('''from ._runtime import load_triton

triton = load_triton()
tl = triton.language


@triton.jit
def _scaled(v, SCALE: tl.constexpr):
    if SCALE != 1.0:
        v = v * SCALE
    return v
''')

    tests = _grade(_variant(tmp_path, edit), tmp_path)
    bad = {n: t["message"][:300] for n, t in tests.items() if t["status"] != "passed"}
    assert not bad, bad


def test_the_device_runs_the_checked_source_of_its_kernels(tmp_path):
    """A kernel reading a plain module global runs under the interpreter (and fails only
    its sm_90 compile): the device's tests launch the grader's build of the source, so they
    fail with the rule, as the kernel's own tests do."""

    def edit(sub: Path) -> None:
        softmax = sub / "tinytrain/cuda/softmax.py"
        _replace(softmax, "mask=mask, other=0.0).to(tl.float32)",
                 "mask=mask, other=0.0).to(tl.float32) * _ONE")
        _replace(softmax, "\n\n@triton.jit\ndef softmax_kernel", "\n_ONE = 1.0\n\n\n@triton.jit\n"
                 "def softmax_kernel")

    score = grade(_variant(tmp_path, edit), tmp_path / "out", "--tasks", "6.7", timeout=900)
    device = _tests(score, "6.7")["test_device_op[softmax]"]
    assert device["status"] in ("failed", "error"), device
    assert "_ONE is a module global" in device["message"], device["message"]
