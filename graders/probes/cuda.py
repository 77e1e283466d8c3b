"""Probes for assignment 6 (Triton kernels and the cuda device).

``launch`` builds one of the student's ``@triton.jit`` kernels from the source text the
grader checked (``_cuda_ast``, ``_cuda_source``: never the submission's module) and runs
it on buffers and a grid the grader describes, under the interpreter with every access
bounds-checked; outputs start as NaN and every buffer sits between guard regions.
``wrapper`` calls a task's host function, records the launches it made and replays them
with the grader's kernels on fresh memory. ``compile_sm90`` compiles a kernel, from the
same text, for sm_90 in a child process (no GPU needed) and returns a summary of its PTX.
The worker loads and seals all of this before the submission is imported
(``_cuda_runtime.prepare``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any

import numpy as np

from . import _cuda_runtime as rt
from . import probe
from ._observe import not_a_tensor, type_name
from .gpt import _at, _gpt


@probe
def environment(tt: Any) -> dict[str, Any]:
    """Whether triton can be imported and runs the interpreter here, and why not."""
    try:
        triton = rt.triton_module()
    except RuntimeError as exc:
        return {"ok": False, "message": str(exc), "version": ""}
    version = str(getattr(triton, "__version__", ""))
    if version != rt.TRITON_VERSION:
        return {"ok": False, "version": version,
                "message": f"triton {version} is installed; the graders are written for "
                           f"triton {rt.TRITON_VERSION} (pip install triton=={rt.TRITON_VERSION})"}
    return {"ok": True, "message": "", "version": version}


def _argument(spec: dict[str, Any], buffers: dict[str, rt.GuardedBuffer]) -> Any:
    if "buffer" in spec:
        return buffers[spec["buffer"]]
    if "stride" in spec:
        name, dim = spec["stride"]
        return buffers[name].stride(dim)
    return spec["value"]


def _raise_cause(exc: BaseException) -> None:
    cause = rt.root_cause(exc)
    if cause is exc:
        raise exc
    raise cause


@probe
def launch(tt: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """Launch ``tinytrain.cuda.<module>.<kernel>[grid](*args, **constexprs)`` on the
    grader's buffers, the kernel built from ``spec["source"]`` (the grader's checked text;
    read from the submission when absent, for a probe run by hand). Returns every output
    buffer's values, the inputs that changed, the first out-of-bounds access (or None),
    the guard regions that changed, and (with ``trace``) the first element each program
    stored into that buffer, and how many elements were loaded from each buffer."""
    source = spec.get("source") or rt.submission_source(tt, spec["module"], spec["kernel"])
    runner = rt.source_kernel(source)
    buffers = {}
    for name, b in spec["buffers"].items():
        buffers[name] = rt.GuardedBuffer(name, b["values"], b.get("layout", "contiguous"),
                                         fill_nan=bool(b.get("output")) and not b.get("inout"))
    args = [_argument(a, buffers) for a in spec["args"]]
    grid = tuple(int(g) for g in spec["grid"])
    oob = None
    with rt.checked(spec["kernel"], list(buffers.values()), spec.get("trace")) as checker:
        try:
            with np.errstate(all="ignore"):  # masked-off lanes compute on fill values
                runner[grid](*args, **spec.get("constexprs", {}))
        except Exception as exc:  # noqa: BLE001 - an out-of-bounds access, or the kernel's error
            if checker.violation is None:
                _raise_cause(exc)
            oob = checker.violation
        stores, loads = checker.stores, dict(checker.loads)
    outputs = {n: np.array(b.view, copy=True) for n, b in buffers.items()
               if spec["buffers"][n].get("output")}
    written = [n for n, b in buffers.items() if not spec["buffers"][n].get("output")
               and not _same(b.view, b.initial)]
    guards = [c for c in (b.corrupted() for b in buffers.values()) if c is not None]
    return {"outputs": outputs, "written_inputs": written, "oob": oob, "guards": guards,
            "stores": stores or {}, "loads": loads}


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit for bit (NaN payloads included)."""

    def raw(x: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(x).reshape(-1).view(np.uint8)

    return bool(np.array_equal(raw(a), raw(b)))


def _laid_out(value: Any) -> Any:
    """A wrapper argument: {"array": a, "layout": ...} becomes a view with that layout."""
    if not (isinstance(value, dict) and "array" in value):
        return value
    array, layout = value["array"], value.get("layout", "contiguous")
    if layout == "transposed":
        return np.ascontiguousarray(np.swapaxes(array, -1, -2)).swapaxes(-1, -2)
    if layout == "strided":
        wide = np.zeros((*array.shape[:-1], array.shape[-1] * 2), array.dtype)
        wide[..., ::2] = array
        return wide[..., ::2]
    if layout == "offset":  # a view whose first element is not its allocation's
        wide = np.zeros(array.size + 8, array.dtype)
        view = wide[5:5 + array.size].reshape(array.shape)
        view[...] = array
        return view
    return np.array(array, copy=True)


def _memory_of(a: np.ndarray) -> np.ndarray:
    """The whole allocation behind a view (its gaps included)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


@probe
def wrapper(tt: Any, module: str, function: str, args: list[Any],
            kwargs: dict[str, Any], replay: dict[str, Any] | None = None) -> dict[str, Any]:
    """Call ``tinytrain.cuda.<module>.<function>(*args, **kwargs)`` (NumPy arrays in and
    out) and record the kernels it launched, with their arguments. With ``replay``
    ({"sources": checked source by "module.kernel", "outputs": output parameters by
    "module.kernel"}) the probe launches the recorded kernels again itself, built from
    the grader's source, with the recorded arguments on fresh memory, and returns what
    that replay left where each result lies ("replayed", None where no replayed launch
    wrote) and how many of its elements no replayed store wrote ("unwritten")."""
    rt.triton_module()
    mod = __import__(f"{tt.__name__}.cuda.{module}", fromlist=["_"])
    fn = getattr(mod, function)
    laid = [_laid_out(a) for a in args]
    images = rt.argument_images([a for a in laid if isinstance(a, np.ndarray)])
    before = [np.array(_memory_of(a), copy=True) if isinstance(a, np.ndarray) else None
              for a in laid]
    rt.LAUNCHES.clear()
    log: list[dict[str, Any]] = []
    rt.RECORDING[:] = [log]
    try:
        result = fn(*laid, **kwargs)
    except Exception as exc:  # noqa: BLE001 - surfaced as the kernel's own error
        _raise_cause(exc)
    finally:
        rt.RECORDING.clear()
        rt.CHECKER.disarm()
    launched = list(rt.LAUNCHES)
    results = result if isinstance(result, tuple) else (result,)
    for r in results:
        if not isinstance(r, np.ndarray):
            raise TypeError(f"tinytrain.cuda.{module}.{function} returned a "
                            f"{type_name(r)}, not a numpy.ndarray")
    values = [np.array(r, copy=True) for r in results]
    # ownership: the arguments whose memory (gaps of a strided view included) changed,
    # and for each result the arguments it shares memory with
    written = [k for k, (a, b) in enumerate(zip(laid, before))
               if b is not None and not _same(_memory_of(a), b)]
    shared = [[k for k, a in enumerate(laid) if isinstance(a, np.ndarray)
               and np.shares_memory(r, a)] for r in results]
    observed: dict[str, Any] = {"results": values, "launched": launched,
                                "written_args": written, "shared_args": shared}
    if replay is not None:
        try:
            shadow = rt.replay(log, replay["sources"], replay.get("outputs", {}), images)
        except Exception as exc:  # noqa: BLE001 - the replay's failure is the observation
            cause = rt.root_cause(exc)
            observed["replay_error"] = f"{type(cause).__name__}: {cause}"[:2000]
            return observed
        seen = [shadow.read(r) for r in results]
        observed["replayed"] = [v for v, _ in seen]
        observed["unwritten"] = [n for _, n in seen]
    return observed


_COMPILER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_cuda_compile.py")
_COMPILED: dict[str, Any] = {}  # this worker's compile results, by request


@probe
def compile_sm90(tt: Any, kernels: list[dict[str, Any]]) -> list[Any]:
    """Compile each ``{"module", "kernel", "signature", "constexprs", "source"}`` for sm_90
    (an H100/H200) without a GPU and summarise its PTX. ``source`` is the grader's checked
    text of the kernel (``_cuda_ast``; read from the submission when absent, for a probe
    run by hand): the child builds the kernel from it, as the interpreter does. One child
    process (the interpreter off there) compiles the ones this worker has not compiled
    yet. A stub kernel gives ``{"not_implemented": message}``."""
    rt.triton_module()
    keys = [json.dumps(k, sort_keys=True) for k in kernels]
    todo: dict[str, Any] = {}
    for key, k in zip(keys, kernels):
        if key in _COMPILED or key in todo:
            continue
        if k.get("source"):
            todo[key] = k
            continue
        try:
            todo[key] = {**k, "source": rt.submission_source(tt, k["module"], k["kernel"])}
        except AssertionError as exc:  # the source breaks the kernel rules
            _COMPILED[key] = {"error": {"type": type(exc).__name__, "message": str(exc),
                                        "where": str(getattr(exc, "where", ""))}}
    if todo:
        for key, result in zip(todo, _compile_in_child(tt, list(todo.values()))):
            _COMPILED[key] = result
    return [_COMPILED[key] for key in keys]


def _compile_in_child(tt: Any, kernels: list[dict[str, Any]]) -> list[Any]:
    with tempfile.TemporaryDirectory(prefix="tinytrain-compile-") as scratch:
        result_path = os.path.join(scratch, "result.json")
        request = json.dumps({"kernels": kernels, "result": result_path})
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": scratch,
               "TMPDIR": scratch, "TRITON_CACHE_DIR": os.path.join(scratch, "cache"),
               "TRITON_INTERPRET": "0", "PYTHONDONTWRITEBYTECODE": "1",
               # the backends from triton's own folder: the worker's environment holds
               # packages without their metadata, so entry points find none
               "TRITON_BACKENDS_IN_TREE": "1",
               "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.dirname(_COMPILER)))}
        proc = subprocess.run([sys.executable, "-s", _COMPILER, request], env=env, cwd=scratch,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, check=False)
        printed = proc.stdout.decode("utf-8", "replace")[-2000:]
        if not os.path.exists(result_path):
            raise RuntimeError(f"compiling for sm_90 crashed (exit code {proc.returncode}): "
                               f"{printed}")
        with open(result_path) as f:
            results = json.load(f)
    if not isinstance(results, list) or len(results) != len(kernels):
        raise RuntimeError("the sm_90 compiler returned a malformed answer")
    return results


# ----- task 6.7: the cuda device -----------------------------------------------------------
def _device_ops(tt: Any) -> dict[str, Any]:
    F = tt.nn.functional  # noqa: N806 - torch's usual name
    return {
        "linear": lambda t, kw: F.linear(*t),
        "matmul": lambda t, kw: t[0] @ t[1],
        "gelu": lambda t, kw: F.gelu(t[0], **kw),
        "softmax": lambda t, kw: F.softmax(t[0], **kw),
        "log_softmax": lambda t, kw: F.log_softmax(t[0], **kw),
        "layer_norm": lambda t, kw: F.layer_norm(t[0], (t[0].shape[-1],), t[1], t[2], **kw),
        "cross_entropy": lambda t, kw: F.cross_entropy(t[0], t[1], **kw),
        "scaled_dot_product_attention": lambda t, kw: F.scaled_dot_product_attention(*t, **kw),
    }


def _kernel_names(launched: list[str]) -> list[str]:
    return sorted({name.rsplit(".", 1)[-1] for name in launched})


@probe
def device_op(tt: Any, op: str, inputs: list[dict[str, Any]], kwargs: dict[str, Any],
              grad_output: np.ndarray, kernels: dict[str, Any] | None = None) -> dict[str, Any]:
    """``op`` on tensors made on the cuda device (``device="cuda"``), then backward with
    ``grad_output`` (on the device too): the output, every input gradient, the devices
    they are on, and the kernels that ran. With ``kernels`` (the grader's checked sources
    by "module.kernel") every launch runs the grader's build of the kernel."""
    rt.triton_module()
    call = _device_ops(tt)[op]
    # an input with layout "transposed" is the transpose of a leaf stored the other way
    # round: the operator gets a view whose last two dims are swapped in memory
    swapped = [i.get("layout") == "transposed" and np.ndim(i["array"]) >= 2 for i in inputs]
    stored = [np.ascontiguousarray(np.swapaxes(i["array"], -1, -2)) if s else i["array"]
              for i, s in zip(inputs, swapped)]
    leaves = [tt.tensor(a, device="cuda", requires_grad=bool(i.get("grad")))
              for a, i in zip(stored, inputs)]
    rt.LAUNCHES.clear()
    try:
        tensors = [leaf.transpose(-1, -2) if s else leaf for leaf, s in zip(leaves, swapped)]
        with rt.substituted(kernels):
            out = call(tensors, kwargs)
            out.backward(tt.tensor(grad_output, device="cuda"))
    except Exception as exc:  # noqa: BLE001 - surfaced as the kernel's own error
        _raise_cause(exc)
    grads = [(t.grad, s) for t, s in zip(leaves, swapped) if t.requires_grad]
    written = [k for k, (leaf, a) in enumerate(zip(leaves, stored))
               if not _same(_host(leaf), np.asarray(a))]
    return {"output": _host(out), "device": str(out.device),
            "grads": [None if g is None else
                      (np.ascontiguousarray(np.swapaxes(_host(g), -1, -2)) if s else _host(g))
                      for g, s in grads],
            "grad_devices": [None if g is None else str(g.device) for g, _ in grads],
            "inputs_written": written, "launched": _kernel_names(rt.LAUNCHES)}


def _host(tensor: Any) -> np.ndarray:
    data = getattr(tensor, "data", None)
    if not isinstance(data, np.ndarray):
        raise not_a_tensor(tensor)
    return np.array(data, copy=True).view(np.ndarray)


@probe
def device_adam(tt: Any, params: list[np.ndarray], grads: list[list[np.ndarray]],
                options: dict[str, Any], kernels: dict[str, Any] | None = None) -> dict[str, Any]:
    """``tt.optim.AdamW(**options)`` (or Adam, with ``decoupled`` False) over parameters on
    the cuda device, one step per list of gradients: the parameters after each step, their
    device, and the kernels that ran."""
    rt.triton_module()
    options = dict(options)
    cls = tt.optim.AdamW if options.pop("decoupled") else tt.optim.Adam
    tensors = [tt.tensor(p, device="cuda", requires_grad=True) for p in params]
    opt = cls(tensors, **{k: tuple(v) if isinstance(v, list) else v for k, v in options.items()})
    rt.LAUNCHES.clear()
    history = []
    try:
        with rt.substituted(kernels):
            for step in grads:
                for t, g in zip(tensors, step):
                    t.grad = tt.tensor(g, device="cuda")
                opt.step()
                history.append([_host(t) for t in tensors])
    except Exception as exc:  # noqa: BLE001 - surfaced as the kernel's own error
        _raise_cause(exc)
    return {"params": history, "devices": [str(t.device) for t in tensors],
            "launched": _kernel_names(rt.LAUNCHES)}


@probe
def device_train(tt: Any, cfg: dict[str, Any], weights: dict[str, np.ndarray],
                 batches: list[list[np.ndarray]], options: dict[str, Any],
                 kernels: dict[str, Any] | None = None) -> dict[str, Any]:
    """Assignment 5's GPT moved to the cuda device (``model.to("cuda")``), trained one step
    per batch (idx and targets moved with ``.to("cuda")``) with its own
    ``configure_optimizers``: the loss of each step, every weight at the end, the devices
    of the weights and their gradients, and the kernels that ran."""
    rt.triton_module()

    model = _gpt(tt, cfg, weights)
    model.to("cuda")
    opt = model.configure_optimizers(**options)
    rt.LAUNCHES.clear()
    losses = []
    try:
        with rt.substituted(kernels):
            for idx, targets in batches:
                opt.zero_grad()
                _, loss = model(tt.tensor(idx).to("cuda"), tt.tensor(targets).to("cuda"))
                loss.backward()
                opt.step()
                losses.append(float(_host(loss)))
    except Exception as exc:  # noqa: BLE001 - surfaced as the kernel's own error
        _raise_cause(exc)
    params = {name: _at(model, name) for name in weights}
    return {"losses": np.array(losses), "params": {n: _host(p) for n, p in params.items()},
            "devices": sorted({str(p.device) for p in params.values()}),
            "grad_devices": sorted({str(p.grad.device) for p in params.values()
                                    if p.grad is not None}),
            "launched": _kernel_names(rt.LAUNCHES)}
