"""The assignment-6 machinery on its own: the worker-side bounds check and guard regions
(hand-written bad kernels must be reported with kernel, buffer and offset, never crash the
process), the sm_90 compile in a child process (errors with their line, stubs, tensor
cores, TF32), and the kernel table against the reference's real kernel signatures.

The probes run in a subprocess each (the interpreter must be switched on before triton is
imported, which this test process may have done already)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from graders.kerneltable import KERNELS, WRAPPERS
from graders.kerneltable.checks import need_triton

from ..conftest import REFERENCE, ROOT

pytest.importorskip("triton")

KERNELS_PY = '''
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@triton.jit
def store_tail_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n))


@triton.jit
def read_past_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, tl.where(offs < n, x, 0.0), mask=offs < n)


@triton.jit
def wild_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs + 1000000000, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@triton.jit
def gap_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@triton.jit
def stub_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    raise NotImplementedError("task 6.1: a stub")


@triton.jit
def broken_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) + undefined_name, mask=offs < n)


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + r[:, None] * BLOCK + r[None, :])
    b = tl.load(b_ptr + r[:, None] * BLOCK + r[None, :])
    tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], tl.dot(a, b))


@triton.jit
def dot_ieee_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + r[:, None] * BLOCK + r[None, :])
    b = tl.load(b_ptr + r[:, None] * BLOCK + r[None, :])
    tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], tl.dot(a, b, input_precision="ieee"))


@triton.jit
def sum_no_other_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    one = tl.arange(0, 2)
    tl.store(y_ptr + one, tl.sum(x, axis=0) + tl.zeros((2,), tl.float32), mask=one < 1)


def wrapper_past_end(x):
    import numpy as np
    from ._runtime_stub import launch
    y = np.empty_like(x)
    launch(store_tail_kernel, (1,), x, y, x.size, BLOCK=64)
    return y
'''

RUNTIME_STUB = '''
import numpy as np


class HostBuffer:
    def __init__(self, array):
        self.array = array

    @property
    def dtype(self):
        return self.array.dtype.name

    def data_ptr(self):
        return self.array.ctypes.data

    def untyped_storage(self):
        return Storage(self.array)

    def storage_offset(self):
        return 0

    def size(self):
        return self.array.shape

    def stride(self):
        return tuple(s // self.array.itemsize for s in self.array.strides)

    def new_empty(self, *a, **k):
        return HostBuffer(self.array)

    def set_(self, storage, *a):
        self.array = storage.array
        return self


class Storage:
    def __init__(self, array):
        self.array = array

    def data_ptr(self):
        return self.array.ctypes.data

    def cpu(self):
        return self

    def copy_(self, other):
        return self


def launch(kernel, grid, *args, **meta):
    kernel[grid](*[HostBuffer(a) if isinstance(a, np.ndarray) else a for a in args], **meta)
'''


@pytest.fixture(scope="module")
def fake_submission(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fake")
    package = root / "tinytrain"
    (package / "cuda").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "cuda" / "__init__.py").write_text("")
    (package / "cuda" / "bad.py").write_text(KERNELS_PY)
    (package / "cuda" / "_runtime_stub.py").write_text(RUNTIME_STUB)
    return root


def run_probe(submission: Path, code: str) -> dict:
    """Run ``code`` (which sets ``result``) where the worker would: probes imported first,
    then the submission's tinytrain; returns ``result`` (JSON) or the exception."""
    script = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(ROOT)!r})
        import numpy as np
        from graders.probes import cuda as P
        from graders.probes import _cuda_runtime as rt
        sys.path.insert(0, {str(submission)!r})
        import tinytrain as tt
        try:
    """) + textwrap.indent(textwrap.dedent(code), "    ") + textwrap.dedent("""
        except BaseException as exc:
            result = {"raised": type(exc).__name__, "message": str(exc)}
        print("RESULT" + json.dumps(result, default=str))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=240, cwd=ROOT, env={"PATH": "/usr/bin:/bin"})
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")), None)
    assert line is not None, f"the probe process died ({proc.returncode}): {proc.stderr[-3000:]}"
    return json.loads(line[len("RESULT"):])


def _launch(kernel: str, n: int = 37, layout: str = "contiguous", block: int = 64) -> str:
    return f"""
        x = np.arange({n}, dtype=np.float32)
        spec = {{"module": "bad", "kernel": {kernel!r}, "grid": [1],
                 "buffers": {{"x": {{"values": x}},
                             "y": {{"values": np.zeros({n}, np.float32), "output": True,
                                   "layout": {layout!r}}}}},
                 "args": [{{"buffer": "x"}}, {{"buffer": "y"}}, {{"value": {n}}}],
                 "constexprs": {{"BLOCK": {block}}}}}
        obs = P.launch(tt, spec)
        result = {{"oob": obs["oob"], "guards": obs["guards"],
                  "ok": bool((obs["outputs"]["y"] == x).all()) if obs["oob"] is None else None}}
    """


def test_a_correct_kernel_leaves_guards_and_bounds_alone(fake_submission):
    result = run_probe(fake_submission, _launch("copy_kernel"))
    assert result == {"oob": None, "guards": [], "ok": True}


def test_an_unmasked_store_is_reported_with_kernel_buffer_and_offset(fake_submission):
    oob = run_probe(fake_submission, _launch("store_tail_kernel"))["oob"]
    assert oob["kernel"] == "store_tail_kernel" and oob["access"] == "store"
    assert oob["buffer"] == "y" and oob["offset"] == 37 and oob["numel"] == 37


def test_a_read_past_the_end_is_reported_even_when_the_result_is_right(fake_submission):
    oob = run_probe(fake_submission, _launch("read_past_kernel"))["oob"]
    assert oob["access"] == "load" and oob["buffer"] == "x" and oob["offset"] == 37


def test_a_wild_pointer_is_reported_not_a_segfault(fake_submission):
    oob = run_probe(fake_submission, _launch("wild_kernel"))["oob"]
    # the address is described from the buffer nearest to it: y (the kernel's base) or x,
    # whichever NumPy placed closer, a few KB apart
    assert oob["access"] == "store" and oob["buffer"] in ("x", "y")
    expected = 1_000_000_000 if oob["buffer"] == "y" else None
    assert oob["offset"] == expected or abs(oob["offset"] - 1_000_000_000) < 1_000_000, oob


def test_a_write_into_a_gap_of_a_strided_buffer_is_caught_by_the_guards(fake_submission):
    # gap_kernel ignores y's stride of 2: its stores land between y's elements
    result = run_probe(fake_submission, _launch("gap_kernel", n=8, layout="strided", block=8))
    assert result["oob"] is None
    assert result["guards"][0]["buffer"] == "y"
    assert result["guards"][0]["region"] == "in a gap between its elements"


def test_a_kernel_raising_not_implemented_reaches_the_grader_as_such(fake_submission):
    result = run_probe(fake_submission, _launch("stub_kernel"))
    assert result["raised"] == "NotImplementedError" and "task 6.1" in result["message"]


def test_launches_the_grader_did_not_set_up_are_bounds_checked_too(fake_submission):
    result = run_probe(fake_submission, """
        result = P.wrapper(tt, "bad", "wrapper_past_end", [np.zeros(5, np.float32)], {})
    """)
    assert result["raised"] == "OutOfBounds"
    assert "store_tail_kernel stores out of bounds: y_ptr + 5" in result["message"]


def test_compiling_for_sm90(fake_submission):
    def request(kernel: str, dtype: str = "fp32", block: int = 64) -> dict:
        return {"module": "bad", "kernel": kernel, "constexprs": {"BLOCK": block},
                "signature": {"x_ptr" if "dot" not in kernel else "a_ptr": f"*{dtype}",
                              "y_ptr" if "dot" not in kernel else "b_ptr": f"*{dtype}",
                              **({"c_ptr": "*fp32"} if "dot" in kernel else {}),
                              "n": "i32", "BLOCK": "constexpr"}}

    kernels = [request("copy_kernel"), request("stub_kernel"), request("broken_kernel"),
               request("dot_kernel", "fp16", 64), request("dot_kernel", "fp32", 64),
               request("dot_ieee_kernel", "fp32", 64)]
    result = run_probe(fake_submission, f"result = P.compile_sm90(tt, {kernels!r})")
    copy, stub, broken, dot16, dot32, ieee = result
    assert copy["error"] is None and copy["target"].startswith("sm_90")
    assert copy["mma"] + copy["wgmma"] == 0 and copy["st_global"] > 0
    assert stub == {"not_implemented": "task 6.1: a stub"}
    assert "undefined_name" in broken["error"]["message"]
    line = KERNELS_PY.splitlines().index(
        "    tl.store(y_ptr + offs, tl.load(x_ptr + offs) + undefined_name, mask=offs < n)") + 1
    assert broken["error"]["where"] == f"tinytrain/cuda/bad.py, line {line}"
    assert dot16["wgmma"] + dot16["mma"] > 0 and dot16["tf32"] == 0
    assert dot32["tf32"] > 0, "float32 tl.dot defaults to TF32 on sm_90"
    assert ieee["tf32"] == 0 and ieee["error"] is None


def test_the_kernel_table_matches_the_reference_signatures():
    """The table's parameter lists are the reference kernels' real signatures."""
    script = textwrap.dedent(f"""
        import importlib, inspect, json, sys
        sys.path.insert(0, {str(ROOT)!r})
        from graders.probes import _cuda_runtime
        sys.path.insert(0, {str(REFERENCE)!r})
        import tinytrain
        out = {{}}
        for module, name in {[(k.module, k.name) for k in KERNELS]!r}:
            kernel = getattr(importlib.import_module("tinytrain.cuda." + module), name)
            out[name] = [list(inspect.signature(kernel.fn).parameters), kernel.fn.__doc__ or ""]
        print(json.dumps(out))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    signatures = json.loads(proc.stdout.splitlines()[-1])
    for info in KERNELS:
        params, doc = signatures[info.name]
        assert tuple(params) == info.params, info.name
        assert set(info.compile_constexprs) <= set(info.params), info.name
        # the API fixes the grid the grader launches with: the docstring must give it
        assert "Grid: (" in doc, f"{info.name}: its docstring does not give its grid"


def test_wrappers_name_kernels_of_the_table():
    names = {f"{k.module}.{k.name}" for k in KERNELS}
    for wrapper in WRAPPERS:
        assert set(wrapper.kernels) <= names, wrapper.name


class _Reply:
    def __init__(self, answer: object) -> None:
        self.answer = answer

    def call(self, probe: str, *args: object, **kwargs: object) -> object:
        return self.answer


def test_missing_triton_is_one_clear_message():
    with pytest.raises(AssertionError, match="triton is not installed"):
        need_triton(_Reply({"ok": False, "version": "", "message":
                            "triton is not installed: assignment 6 needs Linux"}))
    with pytest.raises(AssertionError, match="malformed"):
        need_triton(_Reply([]))
    need_triton(_Reply({"ok": True, "version": "3.9.0", "message": ""}))


def test_the_worker_reports_a_missing_triton():
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})

        class NoTriton:
            def find_spec(self, name, path=None, target=None):
                if name.partition(".")[0] == "triton":
                    raise ImportError("no triton here")

        sys.meta_path.insert(0, NoTriton())
        from graders.probes import cuda
        print(cuda.environment(None))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert "triton is not installed: assignment 6 needs Linux" in proc.stdout, proc.stderr


def test_tinytrain_imports_without_triton():
    script = textwrap.dedent(f"""
        import sys

        class NoTriton:
            def find_spec(self, name, path=None, target=None):
                if name.partition(".")[0] == "triton":
                    raise ImportError("no triton here")

        sys.meta_path.insert(0, NoTriton())
        sys.path.insert(0, {str(REFERENCE)!r})
        import tinytrain as tt
        assert "triton" not in sys.modules
        assert tt.cuda.triton_available() is False and tt.cuda.is_available() is False
        try:
            tt.cuda.elementwise
        except RuntimeError as exc:
            print(exc)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "triton is not installed" in proc.stdout


def _sum_launch(kernel: str) -> str:
    return f"""
        x = np.arange(37, dtype=np.float32)
        spec = {{"module": "bad", "kernel": {kernel!r}, "grid": [1],
                 "buffers": {{"x": {{"values": x}},
                             "y": {{"values": np.zeros(1, np.float32), "output": True}}}},
                 "args": [{{"buffer": "x"}}, {{"buffer": "y"}}, {{"value": 37}}],
                 "constexprs": {{"BLOCK": 64}}}}
        obs = P.launch(tt, spec)
        result = {{"bits": obs["outputs"]["y"].view(np.uint32).tolist(), "oob": obs["oob"]}}
    """


@pytest.mark.parametrize("kernel, expected", [
    ("sum_no_other_kernel", "a reduction included masked-out lanes: a load without `other` "
                            "is undefined there"),
    ("stub_store_nothing", "were never written"),
])
def test_a_reduction_over_undefined_lanes_is_told_from_an_unwritten_output(
        fake_submission, kernel, expected):
    """Issue 20: masked-out lanes of a load without ``other`` read as one NaN pattern,
    outputs start as another; a stored NaN is not reported as an element never written."""
    from graders.kerneltable.checks import check_values
    from graders.kerneltable.spec import Expect

    if kernel == "stub_store_nothing":
        result = run_probe(fake_submission, _sum_launch("copy_kernel").replace(
            '"value": 37', '"value": 0'))
    else:
        result = run_probe(fake_submission, _sum_launch(kernel))
    assert result.get("oob") is None, result
    got = np.array(result["bits"], np.uint32).view(np.float32)
    with pytest.raises(AssertionError, match=expected.replace("`", ".")):
        check_values("y", got, Expect(np.array([666.0], np.float32)), what=kernel,
                     case="x of 37", repro="")


# ----- the kernel source rules (graders.probes._cuda_ast), checked by the grader -------------
SOURCE_HEAD = '''import os
import numpy as np
import triton
import triton.language as tl
from ._runtime import load_triton

FLAGS = {"interp": os.environ.get("TRITON_INTERPRET")}
SCALE = tl.constexpr(2.0)
SHIFT: tl.constexpr = -1
MODE = tl.constexpr(FLAGS["interp"] == "1")
PLAIN = 3


def helper(x):
    return x


@triton.jit
def jit_helper(x, K: tl.constexpr):
    return x * K


@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
'''


@pytest.mark.parametrize("line, message", [
    ("    tl.store(y_ptr + offs, jit_helper(x, SCALE + SHIFT).to(y_ptr.dtype.element_ty))", None),
    ("    tl.store(y_ptr + offs, np.exp(x))", "np is a module global"),
    ("    tl.store(y_ptr + offs, helper(x))", "helper is a module global"),
    ("    tl.store(y_ptr + offs, x * MODE)", "MODE is a module global"),
    ("    tl.store(y_ptr + offs, x * PLAIN)", "PLAIN is a module global"),
    ("    tl.store(y_ptr + offs, x + x_ptr.handle)", ".handle is not an attribute"),
    ("    tl.store(y_ptr + offs, x.__class__)", ".__class__ is not an attribute"),
    ("    tl.store(y_ptr + offs, x * tl.core.knobs.runtime.interpret)", "leaves triton.language"),
    ("    tl.store(y_ptr + offs, x * triton.knobs.runtime.interpret)", "is not triton.language"),
    ("    tl.store(y_ptr + offs, x * getattr(tl, 'sum')(x))", "getattr is not defined"),
    ("    import os", "an import inside a kernel"),
    ("    f = lambda v: v", "a lambda inside a kernel"),
])
def test_kernel_source_rules_name_file_and_line(tmp_path, line, message):
    from graders.probes._cuda_ast import KernelSource, KernelSourceError

    cuda = tmp_path / "tinytrain" / "cuda"
    cuda.mkdir(parents=True)
    text = SOURCE_HEAD + line + "\n"
    (cuda / "m.py").write_text(text)
    if message is None:
        wire = KernelSource(tmp_path, "m", "k").wire()
        assert wire["modules"]["m"]["functions"] == ["jit_helper", "k"]
        assert wire["modules"]["m"]["constants"] == {"SCALE": 2.0, "SHIFT": -1}
        return
    with pytest.raises(KernelSourceError) as info:
        KernelSource(tmp_path, "m", "k")
    number = len(text.splitlines())
    assert f"tinytrain/cuda/m.py, line {number}: " in str(info.value), str(info.value)
    assert message in str(info.value), str(info.value)


def test_a_kernel_rebound_after_its_def_is_not_a_kernel(tmp_path):
    from graders.probes._cuda_ast import KernelSource, KernelSourceError

    cuda = tmp_path / "tinytrain" / "cuda"
    cuda.mkdir(parents=True)
    (cuda / "m.py").write_text(SOURCE_HEAD + "    tl.store(y_ptr + offs, x)\n\n\nk = helper\n")
    with pytest.raises(KernelSourceError, match=r"defines k \(line \d+\) without @triton\.jit"):
        KernelSource(tmp_path, "m", "k")


# ----- the seal of the worker's kernel machinery -------------------------------------------
def _sealed(submission: Path, init: str, code: str) -> dict:
    """The worker's way: the machinery prepared and sealed, then a submission whose
    ``tinytrain/__init__.py`` is ``init`` imported, then ``code`` (sets ``result``)."""
    (submission / "tinytrain").mkdir(parents=True, exist_ok=True)
    (submission / "tinytrain" / "__init__.py").write_text(textwrap.dedent(init))
    script = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(ROOT)!r})
        from graders.harness import worker
        from graders import probes
        probes.load_all()
        guarded = worker.Guarded(worker.run_probe, worker.prepare_probes(probes), probes=probes)
        tt, root = worker.import_submission({str(submission)!r})
        def call(name):
            return guarded(tt, root, probes, {{"probe": name, "args": [], "kwargs": {{}}}})
    """) + textwrap.dedent(code) + '\nprint("RESULT" + json.dumps(result, default=str))\n'
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=240, cwd=ROOT, env={"PATH": "/usr/bin:/bin"})
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")), None)
    assert line is not None, f"the probe process died ({proc.returncode}): {proc.stderr[-3000:]}"
    return json.loads(line[len("RESULT"):])


@pytest.mark.parametrize("patch", [
    "rt._Checker.check = lambda self, *a, **k: None",
    "rt.GuardedBuffer.corrupted = lambda self: None",
    "rt.source_kernel.__code__ = (lambda source: None).__code__",
    "import triton.runtime.interpreter as i; i._interpreter = i._interpreter._real",
    "import graders.probes as p; p._REGISTRY['cuda.launch'] = lambda tt, spec: {}",
    "import builtins; rt.len = builtins.len",
])
def test_replacing_the_machinery_at_import_is_refused(tmp_path, patch):
    result = _sealed(tmp_path, f"import graders.probes._cuda_runtime as rt\n{patch}\n",
                     "result = [call('cuda.environment'), call('ops.nothing')]")
    cuda, other = result
    assert cuda["ok"] is False and cuda["error"]["type"] == "TamperingError", cuda
    assert "changed the grader's kernel machinery" in cuda["error"]["message"]
    assert other["error"]["type"] != "TamperingError"  # other assignments are not refused


def test_the_interpreter_s_own_patches_are_put_back_not_refused(tmp_path):
    """triton leaves tl functions patched after a jit function calls another; the seal puts
    them back instead of failing the next probe."""
    result = _sealed(tmp_path, "", """
        import triton.language as tl
        original = tl.core.program_id
        tl.core.program_id = lambda *a, **k: 0
        first = call('cuda.environment')
        result = [first["ok"], tl.core.program_id is original]
    """)
    assert result == [True, True]


def test_a_thread_left_running_stops_the_cuda_probes(tmp_path):
    result = _sealed(tmp_path, """
        import threading, time
        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
    """, "result = call('cuda.environment')")
    assert result["ok"] is False and "thread" in result["error"]["message"], result
