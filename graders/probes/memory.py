"""Probes for assignment 3.3 and 3.4 (and the memory check of 3.2): what stays alive
between forward and backward, for plain, offloaded and checkpointed runs of one model.

The model is an MLP of blocks ``h -> sin(h @ W1 + b1) @ W2 + b2 -> tanh``, built from
probe Functions that save what torch's ops save: Linear saves its input and weight, sin
its input, tanh its result. What is measured, right after the forward, with the caller
holding only the loss, the parameters and the input:

- ``live_bytes``: the bytes of every array the forward produced (each op's output) that is
  still alive. These are the activations the graph keeps for backward in compute memory
  (the GPU's, on a GPU): what offloading moves out and checkpointing does not keep.
- ``traced_bytes``: all memory allocated during the forward and still held (tracemalloc,
  which sees NumPy's buffers): offloaded copies in host memory count here, files do not.

Each run then calls backward and reports the gradients, which must not depend on where
the saved tensors were kept.
"""

from __future__ import annotations

import contextlib
import gc
import os
import tempfile
import tracemalloc
import weakref
from typing import Any

import numpy as np

from . import probe
from ._functions import functions
from ._observe import array, grad, raised

_EXPLICIT: dict[int, Any] = {}


def _explicit_functions(tt: Any) -> Any:
    """Linear, sin and tanh that keep what they save through an explicit (pack, unpack)
    pair given as an argument, instead of ``ctx.save_for_backward``: they grade a hook
    pair (save_on_cpu's, save_on_disk's) inside a real graph without depending on how
    the submission applies saved-tensor hooks (task 3.2)."""
    found = _EXPLICIT.get(id(tt))
    if found is not None:
        return found
    base = tt.autograd.Function

    def keep(ctx: Any, hooks: Any, *tensors: Any) -> None:
        ctx.unpack = hooks.unpack_hook
        ctx.kept = [hooks.pack_hook(t) for t in tensors]

    def kept(ctx: Any) -> list[Any]:
        tensors = [ctx.unpack(k) for k in ctx.kept]
        ctx.kept = None  # freed after use, as backward frees saved tensors
        return tensors

    class Linear(base):
        @staticmethod
        def forward(ctx, hooks, x, w, b):
            keep(ctx, hooks, x, w)
            return x.data @ w.data + b.data

        @staticmethod
        def backward(ctx, grad):
            x, w = kept(ctx)
            return None, grad @ w.data.T, x.data.T @ grad, grad.sum(axis=0)

    class Sin(base):
        @staticmethod
        def forward(ctx, hooks, a):
            keep(ctx, hooks, a)
            return np.sin(a.data)

        @staticmethod
        def backward(ctx, grad):
            (a,) = kept(ctx)
            return None, grad * np.cos(a.data)

    class Tanh(base):
        @staticmethod
        def forward(ctx, hooks, a):
            keep(ctx, hooks, a)  # its input (its output is no Tensor yet)
            return np.tanh(a.data)

        @staticmethod
        def backward(ctx, grad):
            (a,) = kept(ctx)
            out = np.tanh(a.data)
            return None, grad * (1 - out * out)

    found = (Linear, Sin, Tanh)
    _EXPLICIT[id(tt)] = found
    return found


class _Tracker:
    """Weak references to every array the forward produces."""

    def __init__(self) -> None:
        self.refs: list[weakref.ref] = []

    def __call__(self, out: Any) -> Any:
        self.refs.append(weakref.ref(out.data))
        return out

    def live_bytes(self) -> int:
        alive = {id(a): a.nbytes for a in (r() for r in self.refs) if a is not None}
        return int(sum(alive.values()))


def _block(tt: Any, track: _Tracker, h: Any, params: list[Any], explicit: Any = None) -> Any:
    w1, b1, w2, b2 = params
    if explicit is None:
        fns = functions(tt)
        z = track(fns.linear.apply(h, w1, b1))
        s = track(fns.sin.apply(z))
        z2 = track(fns.linear.apply(s, w2, b2))
        return track(fns.tanh.apply(z2))
    hooks, (linear, sin, tanh) = explicit
    z = track(linear.apply(hooks, h, w1, b1))
    s = track(sin.apply(hooks, z))
    z2 = track(linear.apply(hooks, s, w2, b2))
    return track(tanh.apply(hooks, z2))


@probe
def mlp(tt: Any, x: np.ndarray, weights: list[np.ndarray], mode: str,
        folder: str | None = None) -> dict[str, Any]:
    """Forward (measure), then backward, of the MLP in one of the modes:
    "plain"; "save_on_cpu" / "save_on_disk" (the forward inside those contexts);
    "forgetful_hooks" (saved_tensors_hooks whose pack keeps nothing; no backward);
    "explicit_cpu" / "explicit_disk" (their hook pairs called by the model's Functions);
    "checkpoint" (each block under ``tt.utils.checkpoint.checkpoint``)."""
    with tempfile.TemporaryDirectory(prefix="tinytrain-probe-") as scratch:
        disk_folder = folder or scratch
        return _mlp(tt, x, weights, mode, disk_folder)


def _mlp(tt: Any, x: np.ndarray, weights: list[np.ndarray], mode: str,
         folder: str) -> dict[str, Any]:
    fns = functions(tt)
    params = [tt.tensor(w, requires_grad=True) for w in weights]
    xt = tt.tensor(x, requires_grad=True)
    blocks = [params[i:i + 4] for i in range(0, len(params), 4)]
    explicit = None
    context: Any = contextlib.nullcontext()
    if mode in ("explicit_cpu", "explicit_disk"):
        hooks = (tt.autograd.graph.save_on_cpu() if mode == "explicit_cpu"
                 else tt.autograd.graph.save_on_disk(folder))
        explicit = (hooks, _explicit_functions(tt))
    elif mode == "save_on_cpu":
        context = tt.autograd.graph.save_on_cpu()
    elif mode == "save_on_disk":
        context = tt.autograd.graph.save_on_disk(folder)
    elif mode == "forgetful_hooks":  # a pack hook that keeps nothing (no backward then)
        context = tt.autograd.graph.saved_tensors_hooks(lambda t: None, lambda packed: packed)
    track = _Tracker()
    forward_calls = [0]

    def run_block(h: Any, *block: Any) -> Any:
        forward_calls[0] += 1
        return _block(tt, track, h, list(block), explicit)

    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        with context:
            h = xt
            for block in blocks:
                if mode == "checkpoint":
                    h = track(tt.utils.checkpoint.checkpoint(run_block, h, *block))
                else:
                    h = run_block(h, *block)
            loss = fns.sum.apply(h)
        del h, context
        gc.collect()
        traced = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    live = track.live_bytes()
    files = len(os.listdir(folder)) if mode in ("save_on_disk", "explicit_disk") else None
    calls_after_forward = forward_calls[0]
    if mode != "forgetful_hooks":
        loss.backward()
    del loss
    gc.collect()
    return {
        "live_bytes": live,
        "traced_bytes": int(traced),
        "files_after_forward": files,
        "files_after_backward": len(os.listdir(folder)) if files is not None else None,
        "block_calls": [calls_after_forward, forward_calls[0]],
        "grads": [grad(xt)] + [grad(p) for p in params],
        "activation_bytes": int(x.nbytes),
    }


@probe
def pack_round_trip(tt: Any, kind: str, values: np.ndarray, dtype: str,
                    transpose: bool = False) -> dict[str, Any]:
    """Call a hook pair's pack_hook and unpack_hook directly on one tensor."""
    with tempfile.TemporaryDirectory(prefix="tinytrain-probe-") as folder:
        hooks = (tt.autograd.graph.save_on_cpu() if kind == "cpu"
                 else tt.autograd.graph.save_on_disk(folder))
        t = tt.tensor(np.asarray(values).astype(dtype))
        if transpose:
            t = functions(tt).transpose.apply(t)
        original = array(t)
        storage = weakref.ref(t.data.base if t.data.base is not None else t.data)
        packed = hooks.pack_hook(t)
        files_after_pack = len(os.listdir(folder))
        del t
        gc.collect()
        freed = storage() is None
        restored = hooks.unpack_hook(packed)
        twice = hooks.unpack_hook(packed)
        out = {
            "packed_type": type(packed).__name__,
            "storage_freed": freed,
            "files_after_pack": files_after_pack,
            "is_tensor": isinstance(restored, tt.Tensor),
            "dtype": str(restored.data.dtype),
            "shape": list(restored.shape),
            "values": array(restored),
            "original": original,
            "unpacked_twice_equal": bool(np.array_equal(array(twice), array(restored),
                                                        equal_nan=restored.data.dtype.kind == "f")),
        }
        del packed, restored, twice
        gc.collect()
        out["files_after_release"] = len(os.listdir(folder))
        # ownership: the unpacked tensor is the caller's to write into; the write reaches
        # neither the original (kept alive this time) nor what a second unpack gives
        kept = tt.tensor(np.asarray(values).astype(dtype))
        if transpose:
            kept = functions(tt).transpose.apply(kept)
        packed = hooks.pack_hook(kept)
        mine = hooks.unpack_hook(packed)
        before = array(mine)
        new = ~before if before.dtype == np.bool_ else before + 1
        out["write"] = raised(lambda: mine.data.__setitem__(Ellipsis, new))
        out["written"] = array(mine)
        out["original_after_write"] = array(kept)
        out["unpacked_after_write"] = array(hooks.unpack_hook(packed))
        return out


@probe
def disk_temp_folder(tt: Any, x: Any = None) -> dict[str, Any]:
    """save_on_disk() without a folder: a temporary one, holding one file per saved
    tensor while the graph lives, removed once the graph and the context are gone.
    (y = tanh(sin(x)) with Functions that call the hook pair themselves; x: the grader's
    2 x 3 values, a linspace by default.)"""
    fns = functions(tt)
    _linear, sin, tanh = _explicit_functions(tt)
    x = tt.tensor(np.linspace(-1.0, 1.0, 6).reshape(2, 3) if x is None else
                  np.asarray(x, np.float64), requires_grad=True)
    offload = tt.autograd.graph.save_on_disk()
    folder = offload.folder
    y = tanh.apply(offload, sin.apply(offload, x))
    out = {"folder_is_temporary": os.path.dirname(os.path.abspath(folder)) ==
           os.path.abspath(tempfile.gettempdir()),
           "files_with_graph": len(os.listdir(folder))}
    del offload
    gc.collect()
    out["files_after_context"] = len(os.listdir(folder))
    fns.sum.apply(y).backward()
    out["grad"] = grad(x)
    gc.collect()
    out["exists_after_backward"] = os.path.exists(folder)
    del y
    gc.collect()
    out["exists_after_graph"] = os.path.exists(folder)
    return out
