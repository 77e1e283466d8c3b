"""Task 3.3: offloading saved tensors: save_on_cpu (host memory) and save_on_disk (files).

The hook pairs are graded on their own (pack then unpack one tensor), inside a real model
whose Functions call them (without depending on task 3.2's machinery), and through
``with save_on_cpu():`` around a forward. What is measured is explained in
``graders.probes.memory``.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from graders.checks import assert_close, assert_equal, assert_raises_like
from graders.checks.compare import literal
from graders.checks.structure import Kind, Shaped, conform
from graders.oracle import memory as oracle
from graders.strategies.programs import functions_source
from graders.suites._seed import seeded_values
from graders.suites._support import examples, task

DTYPES = ["float64", "float32", "float16", "int64", "bool"]
SHAPES = st.sampled_from([(), (0, 3), (5,), (2, 3), (3, 1, 2)])


def _round_trip(submission, kind, data):
    dtype = data.draw(st.sampled_from(DTYPES))
    shape = data.draw(SHAPES)
    values = data.draw(arrays(np.float64, shape, elements=st.floats(-3, 3, width=16)))
    transpose = len(shape) == 2 and data.draw(st.booleans())
    got = submission.call("memory.pack_round_trip", kind, values, dtype, transpose)
    code = _round_trip_code(kind, values, dtype, transpose)
    expected_shape = list(shape[::-1] if transpose else shape)
    original = np.asarray(values).astype(dtype)
    original = original.T if transpose else original
    conform(got, {"packed_type": Kind(str), "storage_freed": Kind(bool),
                  "files_after_pack": Kind(int), "is_tensor": Kind(bool), "dtype": Kind(str),
                  "shape": [Kind(int)] * len(shape), "values": Shaped(original.shape),
                  "original": Shaped(original.shape), "unpacked_twice_equal": Kind(bool),
                  "files_after_release": Kind(int), "write": {"type": Kind(None, str), "message": Kind(str)},
                  "written": Shaped(original.shape), "original_after_write": Shaped(original.shape),
                  "unpacked_after_write": Shaped(original.shape)}, what="memory.pack_round_trip")
    assert_equal(got["is_tensor"], True, what="unpack_hook returns a Tensor", reproducer=code)
    assert_equal([got["dtype"], got["shape"]], [dtype, expected_shape],
                 what="[dtype, shape] of the unpacked tensor", reproducer=code)
    assert_close(got["original"], original, rtol=0, atol=0, what="values of t", reproducer=code)
    assert_close(got["values"], original, rtol=0, atol=0, what="values of the unpacked tensor",
                 reproducer=code)
    assert_equal(got["unpacked_twice_equal"], True,
                 what="unpacking the same packed value a second time gives it again",
                 reproducer=code)
    assert_equal(got["storage_freed"], True,
                 what="the tensor's storage is freed once the caller drops it (what pack "
                      "returned must not keep it)", reproducer=code)
    # ownership axis: as torch's unpack_hook for a device tensor (``packed.to(device)``, a
    # new tensor each time), the unpacked tensor is writable and owns its memory
    axis = " (ownership: writing into the unpacked tensor, t kept alive)"
    assert_raises_like(got["write"], None, what=f"restored.data[...] = new values{axis}",
                       reproducer=code)
    new = ~original if original.dtype == np.bool_ else original + 1
    assert_close(got["written"], new, rtol=0, atol=0,
                 what=f"values of the unpacked tensor after the write{axis}", reproducer=code)
    assert_close(got["original_after_write"], original, rtol=0, atol=0,
                 what=f"values of t after writing into its unpacked copy{axis}", reproducer=code)
    assert_close(got["unpacked_after_write"], original, rtol=0, atol=0,
                 what=f"a second unpack of the same packed value after the write{axis}",
                 reproducer=code)
    return got


def _round_trip_code(kind, values, dtype, transpose):
    """A script doing what the probe does: pack, drop the tensor, unpack twice."""
    hooks = "save_on_cpu()" if kind == "cpu" else "save_on_disk(folder)"
    view = "\nt = Transpose.apply(t)  # a view: t.t()" if transpose else ""
    kept_view = view.replace("t = Transpose.apply(t)", "kept = Transpose.apply(kept)")
    return f"""import gc
import tempfile
import weakref

import numpy as np
import tinytrain as tt
{"" if not transpose else chr(10) + functions_source(["transpose"]) + chr(10) * 2}
folder = tempfile.mkdtemp()
hooks = tt.autograd.graph.{hooks}
t = tt.tensor(np.array({literal(values)}).reshape({tuple(np.shape(values))}).astype({dtype!r})){view}
print("t:", t)
storage = weakref.ref(t.data.base if t.data.base is not None else t.data)
packed = hooks.pack_hook(t)
del t
gc.collect()
print("storage freed once t is dropped:", storage() is None)  # PyTorch: True
restored = hooks.unpack_hook(packed)
print("unpacked:", type(restored).__name__, restored.data.dtype, list(restored.shape), restored)
print("unpacked again:", hooks.unpack_hook(packed))
kept = tt.tensor(np.array({literal(values)}).reshape({tuple(np.shape(values))}).astype({dtype!r})){kept_view}
packed = hooks.pack_hook(kept)
restored = hooks.unpack_hook(packed)
restored.data[...] = {"~restored.data" if dtype == "bool" else "restored.data + 1"}  # PyTorch: writable
print("t after the write:", kept)  # PyTorch: unchanged
print("unpacked after the write:", hooks.unpack_hook(packed))  # PyTorch (a device tensor): unchanged"""


@task("3.3")
@settings(max_examples=examples(20))
@given(data=st.data())
def test_save_on_cpu_round_trip(submission, data):
    """save_on_cpu's pack copies a tensor out to host memory (nothing refers to the
    tensor afterwards) and its unpack rebuilds it: same dtype, shape and values."""
    _round_trip(submission, "cpu", data)


@task("3.3")
@settings(max_examples=examples(15))
@given(data=st.data())
def test_save_on_disk_round_trip(submission, data):
    """save_on_disk's pack writes one file per tensor; unpack reads it back (same dtype,
    shape and values); the file is deleted once nothing refers to what pack returned."""
    got = _round_trip(submission, "disk", data)
    assert_equal(got["files_after_pack"], 1, what="files in the folder after one pack")
    assert_equal(got["files_after_release"], 0,
                 what="files in the folder once the packed value is garbage")


@task("3.3")
def test_save_on_disk_temporary_folder(submission):
    """save_on_disk() makes a temporary folder, keeps a file per saved tensor while the
    graph needs it, and removes the folder once the graph and the context are gone."""
    x = seeded_values(np.linspace(-1.0, 1.0, 6).reshape(2, 3), "3.3 temporary folder")
    got = submission.call("memory.disk_temp_folder", x)
    conform(got, {"folder_is_temporary": Kind(bool), "files_with_graph": Kind(int),
                  "files_after_context": Kind(int), "exists_after_backward": Kind(bool),
                  "exists_after_graph": Kind(bool), "grad": Shaped((2, 3))},
            what="memory.disk_temp_folder")
    expected = {"folder_is_temporary": True, "files_with_graph": 2, "files_after_context": 2,
                "exists_after_backward": False, "exists_after_graph": False}
    for key, value in expected.items():
        assert_equal(got[key], value, what=key.replace("_", " "),
                     case="offload = tt.autograd.graph.save_on_disk(); y = tanh(sin(x)) "
                          "with ops that keep what they save through offload's pack_hook; "
                          "del offload; y.sum().backward(); del y")
    assert_close(got["grad"], (1 - np.tanh(np.sin(x)) ** 2) * np.cos(x), what="x.grad")


def _mlp(submission, seed, mode):
    x, weights = oracle.mlp_inputs(seed)
    got, expected = submission.call("memory.mlp", x, weights, mode), oracle.mlp_grads(x, weights)
    conform(got, oracle.run_template(expected), what=f"memory.mlp ({mode})")
    assert_equal(got["block_calls"], [3, 3], what=f"calls of the 3 blocks ({mode}) [after the "
                 "forward, after backward]")
    return got, expected


def _same_grads(got, plain, expected, mode):
    names = ["x"] + [f"{n}{i // 4}" for i, n in enumerate(["W1_", "b1_", "W2_", "b2_"] * 3)]
    for name, g, p, e in zip(names, got["grads"], plain["grads"], expected, strict=True):
        assert_close(g, p, rtol=0, atol=0, what=f"{name}.grad under {mode} vs the plain run "
                     "(must be identical)")
        assert_close(g, e, what=f"{name}.grad under {mode} vs torch")


@task("3.3")
@settings(max_examples=examples(3))
@given(seed=st.integers(0, 2**16))
def test_offloaded_model_frees_activations(submission, seed):
    """In a model whose Functions keep their saved tensors through save_on_cpu's or
    save_on_disk's hook pair, no activation stays in compute memory between forward and
    backward; save_on_disk holds less memory in all; gradients are the plain run's."""
    plain, expected = _mlp(submission, seed, "plain")
    cpu, _ = _mlp(submission, seed, "explicit_cpu")
    disk, _ = _mlp(submission, seed, "explicit_disk")
    for mode, got in (("save_on_cpu hooks", cpu), ("save_on_disk hooks", disk)):
        assert_equal(got["live_bytes"], 0, what=f"bytes of activations alive after the "
                     f"forward with {mode} (plain run: {plain['live_bytes']})")
        _same_grads(got, plain, expected, mode)
    assert disk["traced_bytes"] < plain["traced_bytes"] / 2, (
        f"memory held after the forward with save_on_disk's hooks: {disk['traced_bytes']} "
        f"bytes, plain run: {plain['traced_bytes']}; the saved tensors should be on disk")
    saved = 6 * len(oracle.mlp_inputs(seed)[1]) // 4  # per block: x, W1; sin's z; s, W2; z2
    assert_equal([disk["files_after_forward"], disk["files_after_backward"]], [saved, 0],
                 what="files in the folder [after the forward (one per saved tensor), "
                      "after backward]")


@task("3.3")
@settings(max_examples=examples(2))
@given(seed=st.integers(0, 2**16))
def test_offload_contexts_keep_gradients(submission, seed):
    """A forward under ``with save_on_cpu():`` or ``with save_on_disk():`` gives exactly
    the gradients of the plain run."""
    plain, expected = _mlp(submission, seed, "plain")
    for mode in ("save_on_cpu", "save_on_disk"):
        got, _ = _mlp(submission, seed, mode)
        _same_grads(got, plain, expected, f"with {mode}()")
