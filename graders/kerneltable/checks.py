"""Turning what the probes observed of a kernel into a verdict with feedback: structure
first (``assert_conforms``), then out-of-bounds accesses, guard regions, inputs that were
written, outputs never written (still NaN), and values against torch."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..checks import assert_close, assert_conforms
from ..checks.compare import literal
from ..harness.errors import NotImplementedInSubmission
from ..probes._cuda_ast import KernelSourceError, _Module, kernel_source
from ..probes._cuda_fill import from_undefined_lanes, never_written
from ..strategies.cuda import worded
from .spec import Case, Expect, KernelInfo, Ptr, WrapperInfo, reproducer

COMPILE_TIMEOUT = 50.0  # seconds for one compile call (a child process compiles a batch)


def need_triton(submission: Any) -> None:
    """Fail with one clear message where triton is missing or is not the pinned release."""
    env = submission.call("cuda.environment")
    assert_conforms(env, {"ok": True, "message": "", "version": ""}, what="cuda.environment")
    if env["ok"] is not True:
        raise AssertionError(str(env["message"]))


def _where(index: tuple[int, ...]) -> str:
    return f"({', '.join(str(i) for i in index)})" if index else "()"


def check_values(name: str, got: np.ndarray, expect: Expect, *, what: str, case: str,
                 repro: str) -> None:
    """One output against torch: its dtype, elements never written, then the values."""
    expected = np.asarray(expect.value)
    dtype = expect.dtype or expected.dtype.name
    if got.dtype.name != dtype:
        raise AssertionError(f"{what}: {name} holds {got.dtype}, expected {dtype}\n"
                             f"  case: {case}")
    with np.errstate(invalid="ignore"):
        nan = np.isnan(got.astype(np.float64)) & ~np.isnan(expected.astype(np.float64)) \
            if got.dtype.kind == "f" else np.zeros(got.shape, bool)
    # the fill payload is no NaN a kernel computes: where torch's answer is NaN too (a row
    # of all -inf), an element still holding it was never written all the same
    untouched = never_written(got)
    if untouched.any():
        first = tuple(int(i) for i in np.argwhere(untouched)[0])
        raise AssertionError(
            f"{what}: {int(untouched.sum())} of {got.size} elements of {name} were never "
            f"written (they still hold the NaN the grader filled {name} with), the first at "
            f"{_where(first)}: a tile the grid or the masks skip?\n  case: {case}\n"
            f"  reproduce:\n" + _indent(repro))
    undefined = nan & from_undefined_lanes(got)
    if undefined.any():
        first = tuple(int(i) for i in np.argwhere(undefined)[0])
        raise AssertionError(
            f"{what}: {int(undefined.sum())} of {got.size} elements of {name} are NaN where "
            f"torch has a number, the first at {_where(first)}: a reduction included "
            "masked-out lanes: a load without `other` is undefined there (the grader reads "
            "them as NaN; give the load an `other` that leaves the reduction unchanged, "
            f"0.0 for a sum, -inf for a max)\n  case: {case}\n  reproduce:\n" + _indent(repro))
    if expect.bound is not None:
        _check_bound(name, got, expect, what=what, case=case, repro=repro)
        return
    assert_close(got, expected, what=f"{what}: {name}", rtol=expect.rtol, atol=expect.atol,
                 case=case, reproducer=repro)
    if expect.signed_zeros:
        zero = (expected == 0) & (got == 0)
        flipped = zero & (np.signbit(expected) != np.signbit(got))
        if flipped.any():
            first = tuple(int(i) for i in np.argwhere(flipped)[0])
            raise AssertionError(
                f"{what}: {int(flipped.sum())} of {got.size} elements of {name} have the "
                f"wrong sign of zero, the first at {_where(first)}: got {got[first]!r}, torch "
                f"gives {expected[first]!r} (with -0.0 inputs: -0.0 + -0.0 is -0.0)"
                f"\n  case: {case}\n  reproduce:\n" + _indent(repro))


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def _check_bound(name: str, got: np.ndarray, expect: Expect, *, what: str, case: str,
                 repro: str) -> None:
    g = got.astype(np.float64)
    e = np.asarray(expect.value, np.float64)
    with np.errstate(invalid="ignore"):
        excess = np.abs(g - e) - expect.bound
    bad = ~(excess <= 0)
    if not bad.any():
        return
    worst = tuple(int(i) for i in np.unravel_index(int(np.nanargmax(np.where(bad, np.nan_to_num(
        excess, nan=np.inf), -np.inf))), bad.shape))
    raise AssertionError(
        f"{what}: {int(bad.sum())} of {bad.size} elements of {name} are off by more than the "
        f"error bound ({expect.why})\n  worst at {_where(worst)}: got {g[worst]:.8g}, exact "
        f"{e[worst]:.8g} (|diff| {abs(g[worst] - e[worst]):.3g} > bound "
        f"{expect.bound[worst]:.3g})\n  case: {case}\n  reproduce:\n" + _indent(repro))


def violation_message(kernel: str, oob: Any) -> str:
    """An out-of-bounds access as the probe recorded it."""
    assert_conforms(oob, {"access": "", "buffer": "", "offset": 0, "numel": 0, "shape": None,
                          "program": None}, what=f"{kernel}: the out-of-bounds record")
    offset, count = int(oob["offset"]), int(oob["numel"])
    if offset < 0:
        place = f"{-offset} element(s) before its first element"
    elif offset >= count:
        place = f"{offset - count + 1} element(s) past its last element"
    else:
        place = "inside its extent"
    return (f"{kernel} {oob['access']}s out of bounds: {oob['buffer']} + {offset} "
            f"({place}; {oob['buffer']} has shape {tuple(oob['shape'])}, {count} elements) "
            f"in program {tuple(oob['program'])}. A load or store past a buffer must be "
            "masked.")


def check_launch(submission: Any, info: KernelInfo, case: Case, label: str = "") -> dict[str, Any]:
    """Launch the kernel on the case's buffers (through the probe) and check everything."""
    repro = reproducer(case, info.module, info.name)
    what = f"{info.name}{label}"
    case.description = worded(case.description)
    wire = case.launch.wire(info.module, info.name)
    wire["source"] = kernel_source(submission, info.module, info.name)
    obs = submission.call("cuda.launch", wire)
    outputs = {name: np.empty(np.shape(e.value)) for name, e in case.expected.items()}
    assert_conforms(obs, {"outputs": outputs, "written_inputs": None, "oob": None,
                          "guards": None, "stores": None, "loads": None},
                    what=what)
    if obs["oob"] is not None:
        raise AssertionError(violation_message(info.name, obs["oob"]) +
                             f"\n  case: {case.description}\n  reproduce:\n" + _indent(repro))
    guards, written = obs["guards"], obs["written_inputs"]
    if not isinstance(guards, list) or not isinstance(written, list):
        raise AssertionError(f"{what}: malformed answer: guards and written inputs must be lists")
    if guards:
        g = guards[0]
        assert_conforms(g, {"buffer": "", "offset": 0, "region": ""}, what=f"{what}: guard record")
        raise AssertionError(
            f"{what} wrote outside its buffers: the guard region {g['region']} {g['buffer']} "
            f"changed at {g['buffer']} + {g['offset']} (a store that is not masked, or a "
            f"wrong stride)\n  case: {case.description}\n  reproduce:\n" + _indent(repro))
    if written:
        raise AssertionError(f"{what} wrote into its input buffer {written[0]!r}, which it "
                             f"must only read\n  case: {case.description}")
    for name, expect in case.expected.items():
        check_values(name, obs["outputs"][name], expect, what=what, case=case.description,
                     repro=repro)
    return obs


def _wrapper_call(info: WrapperInfo, args: list[Any], kwargs: dict[str, Any],
                  name_of: Callable[[Any], str | None]) -> list[str]:
    """The lines that lay the arguments out as the probe does and call the wrapper."""
    lines, sources = [], []
    for a in args:
        array, layout = (a["array"], a.get("layout", "contiguous")) \
            if isinstance(a, dict) and "array" in a else (a, "contiguous")
        name = name_of(array)
        if name is None:
            sources.append(repr(array) if not isinstance(array, np.ndarray)
                           else f"np.array({literal(array)}, dtype=np.{array.dtype.name})")
            continue
        if layout == "transposed":
            lines.append(f"{name} = np.ascontiguousarray(np.swapaxes({name}, -1, -2))"
                         f".swapaxes(-1, -2)  # {layout}")
        elif layout == "strided":
            lines.append(f"{name}_mem = np.zeros({name}.shape[:-1] + ({name}.shape[-1] * 2,), "
                         f"{name}.dtype); {name}_mem[..., ::2] = {name}; "
                         f"{name} = {name}_mem[..., ::2]  # {layout}")
        elif layout == "offset":
            lines.append(f"{name}_mem = np.zeros({name}.size + 8, {name}.dtype); "
                         f"{name}_mem[5:5 + {name}.size] = {name}.reshape(-1); "
                         f"{name} = {name}_mem[5:5 + {name}.size].reshape({name}.shape)"
                         f"  # a view starting inside a bigger buffer")
        sources.append(name)
    sources += [f"{k}={v!r}" for k, v in kwargs.items()]
    call = f"tt.cuda.{info.module}.{info.name}({', '.join(sources)})"
    return [*lines, f"result = {call}", "np.set_printoptions(precision=8, threshold=200)",
            "print(result)"]


_OUTPUTS: dict[str, list[str]] = {}


def output_params(info: KernelInfo) -> list[str]:
    """The kernel's parameters that are outputs only (its first hand-picked case says)."""
    key = f"{info.module}.{info.name}"
    if key not in _OUTPUTS:
        from ..strategies.cuda import fixed

        case = info.edges[0][1](fixed(0), info.dtypes[0])
        names = []
        for param, arg in zip(info.params, case.launch.args):
            buffer = case.launch.buffers.get(getattr(arg, "name", None) or "") \
                if isinstance(arg, Ptr) else None
            if buffer is not None and buffer.output and not buffer.inout:
                names.append(param)
        _OUTPUTS[key] = names
    return _OUTPUTS[key]


def replay_request(submission: Any, info: WrapperInfo) -> dict[str, Any]:
    """What the wrapper probe needs to replay the launches a wrapper made: the checked
    source of every jit function of the wrapper's module, its kernels' modules and the
    given ``_common``, and the output parameters of the table's kernels."""
    from . import KERNELS

    root = Path(getattr(submission, "submission", submission))
    modules = {info.module, "_common", *(k.split(".")[0] for k in info.kernels)}
    sources: dict[str, Any] = {}
    for mod in sorted(modules):
        try:
            names = sorted(_Module(root, mod).jit)
        except KernelSourceError:
            continue
        for name in names:
            try:
                sources[f"{mod}.{name}"] = kernel_source(submission, mod, name)
            except KernelSourceError as exc:
                sources[f"{mod}.{name}"] = {"error": str(exc)}
    outputs = {f"{k.module}.{k.name}": output_params(k) for k in KERNELS
               if f"{k.module}.{k.name}" in sources}
    return {"sources": sources, "outputs": outputs}


def device_kernels(submission: Any) -> dict[str, Any]:
    """The checked source of every jit function in the submission's ``tinytrain/cuda``
    (by "module.kernel"; {"error": why} where it breaks the rules): the device's probes
    launch these builds instead of the modules' kernel objects."""
    root = Path(getattr(submission, "submission", submission))
    sources: dict[str, Any] = {}
    for path in sorted((root / "tinytrain" / "cuda").glob("*.py")):
        mod = path.stem
        if not mod.isidentifier():
            continue
        try:
            names = sorted(_Module(root, mod).jit)
        except KernelSourceError:
            continue
        for name in names:
            try:
                sources[f"{mod}.{name}"] = kernel_source(submission, mod, name)
            except KernelSourceError as exc:
                sources[f"{mod}.{name}"] = {"error": str(exc)}
    return sources


def _check_replay(info: WrapperInfo, obs: dict[str, Any], description: str) -> None:
    """Each result is what the recorded launches wrote: the probe replayed them with the
    grader's kernels on fresh memory."""
    what = f"tt.cuda.{info.module}.{info.name}"
    if obs.get("replay_error") is not None:
        raise AssertionError(f"{what}: the grader could not replay the kernel launches it "
                             f"made: {obs['replay_error']}\n  case: {description}")
    replayed, unwritten = obs.get("replayed"), obs.get("unwritten")
    if not isinstance(replayed, list) or not isinstance(unwritten, list) or \
            len(replayed) != len(obs["results"]) or len(unwritten) != len(replayed):
        raise AssertionError(f"{what}: malformed answer: no replay of its launches")
    for k, (got, again, missing) in enumerate(zip(obs["results"], replayed, unwritten)):
        name = f"result {k}" if len(replayed) > 1 else "the result"
        if again is None or not isinstance(missing, int) or missing > 0:
            count = got.size if again is None else missing
            raise AssertionError(
                f"{what}: {count} of {got.size} elements of {name} were not written by its "
                "kernel launches (the grader replayed them, with the same arguments, on "
                "fresh memory whose outputs start as NaN): the result must be what the "
                "task's kernels stored, not values computed by NumPy in the wrapper"
                f"\n  case: {description}")
        again = np.asarray(again)
        if again.shape != got.shape or again.dtype != got.dtype:
            raise AssertionError(f"{what}: malformed answer: the replay of {name} has "
                                 f"shape {again.shape} and dtype {again.dtype}")
        differ = (np.ascontiguousarray(again).view(np.uint8).reshape(*got.shape, -1)
                  != np.ascontiguousarray(got).view(np.uint8).reshape(*got.shape, -1)).any(-1)
        if differ.any():
            first = tuple(int(i) for i in np.argwhere(differ)[0])
            raise AssertionError(
                f"{what}: {int(differ.sum())} of {got.size} elements of {name} differ from "
                f"what its kernel launches store when the grader replays them with the same "
                f"arguments on fresh memory (the first at {_where(first)}): the result must "
                "be what the task's kernels stored, not changed afterwards"
                f"\n  case: {description}")


def check_wrapper(submission: Any, info: WrapperInfo, args: list[Any], kwargs: dict[str, Any],
                  expected: list[Expect], description: str, values_code: list[str],
                  name_of: Callable[[Any], str | None] = lambda _: None) -> None:
    """Call a task's host function, check its results and that it launched its kernels.
    ``name_of``: the name ``values_code`` gives a drawn array."""
    description = worded(description)
    obs = submission.call("cuda.wrapper", info.module, info.name, args, kwargs,
                          replay_request(submission, info))
    results = [np.empty(np.shape(e.value)) for e in expected]
    assert_conforms(obs, {"results": results, "launched": None}, what=info.name)
    launched = obs["launched"]
    if not isinstance(launched, list) or not all(isinstance(k, str) for k in launched):
        raise AssertionError(f"{info.name}: malformed answer: launched must list kernel names")
    missing = [k for k in info.kernels if not any(name.endswith(f".{k}") for name in launched)]
    if missing:
        raise AssertionError(
            f"tinytrain.cuda.{info.module}.{info.name} never launched {missing[0].split('.')[-1]} "
            f"(it launched {sorted(set(n.rsplit('.', 1)[-1] for n in launched)) or 'nothing'}): "
            "the work must be done by the task's Triton kernels, not by NumPy in the wrapper"
            f"\n  case: {description}")
    repro = "\n".join(["import numpy as np", "import tinytrain as tt", *values_code,
                       *_wrapper_call(info, args, kwargs, name_of)])
    _check_ownership(info, obs, args, description)
    for k, (got, expect) in enumerate(zip(obs["results"], expected)):
        check_values(f"result {k}" if len(expected) > 1 else "the result", got, expect,
                     what=f"tt.cuda.{info.module}.{info.name}", case=description, repro=repro)
    _check_replay(info, obs, description)


def _argument_label(args: list[Any], k: int) -> str:
    a = args[k]
    layout = a.get("layout", "contiguous") if isinstance(a, dict) and "array" in a \
        else "contiguous"
    return f"argument {k} ({LAYOUT_WORDS.get(layout, layout)})"


LAYOUT_WORDS = {"contiguous": "contiguous", "transposed": "transposed",
                "strided": "column-strided: every other element of its last dim",
                "offset": "a view starting inside a bigger buffer"}


def _check_ownership(info: WrapperInfo, obs: dict[str, Any], args: list[Any],
                     description: str) -> None:
    """The wrapper wrote into none of the arrays it was given (but those the API updates
    in place), and none of its results shares memory with an argument."""
    what = f"tt.cuda.{info.module}.{info.name}"
    written, shared = obs.get("written_args"), obs.get("shared_args")
    if not isinstance(written, list) or not isinstance(shared, list) or \
            not all(isinstance(k, int) for k in written) or \
            not all(isinstance(s, list) and all(isinstance(k, int) for k in s) for s in shared):
        raise AssertionError(f"{what}: malformed answer: no record of the arguments' memory")
    bad = [k for k in written if k not in info.inplace and 0 <= k < len(args)]
    if bad:
        raise AssertionError(
            f"{what} wrote into its {_argument_label(args, bad[0])}, an array the caller "
            "keeps: a wrapper must leave its inputs unchanged (write into arrays it "
            f"allocates itself)\n  case: {description}")
    for r, ks in enumerate(shared):
        ks = [k for k in ks if k not in info.inplace and 0 <= k < len(args)]
        if ks:
            name = f"result {r}" if len(shared) > 1 else "its result"
            raise AssertionError(
                f"{what}: {name} shares memory with its {_argument_label(args, ks[0])}: "
                "a result must be new memory, not a view of an input (writing one would "
                f"change the other)\n  case: {description}")


def check_compile(info: KernelInfo, results: list[Any], index: dict[str, int],
                  source: dict[str, Any]) -> None:
    """The kernel's sm_90 builds (from ``source``, its checked text): compiled, tensor
    cores for float16 where required, no TF32 for float32 where the course asks for IEEE
    float32."""
    for request in info.compile_requests():
        key = _key({**request, "source": source})
        result = results[index[key]]
        dtype = next(t for p, t in request["signature"].items() if p.endswith("_ptr")
                     and p not in info.pointer_types)
        label = f"{info.name} ({dtype[1:]} buffers)"
        if isinstance(result, dict) and "not_implemented" in result:
            raise NotImplementedInSubmission(f"NotImplementedError: {result['not_implemented']}")
        assert_conforms(result, {"error": None}, what=f"compiling {label} for sm_90")
        if result["error"] is not None:
            err = result["error"]
            assert_conforms(err, {"type": "", "message": "", "where": ""},
                            what=f"compiling {label} for sm_90")
            where = f" ({err['where']})" if err["where"] else ""
            raise AssertionError(f"{label} does not compile for sm_90 (H100/H200){where}: "
                                 f"{err['type']}:\n{err['message']}")
        assert_conforms(result, {"target": "", "wgmma": 0, "mma": 0, "tf32": 0,
                                 "mma_kinds": None, "ld_global": 0, "st_global": 0,
                                 "instructions": 0}, what=f"compiling {label}")
        if not str(result["target"]).startswith("sm_90"):
            raise AssertionError(f"{label}: compiled for {result['target']!r}, not sm_90")
        if result["instructions"] <= 0 or result["st_global"] <= 0:
            raise AssertionError(f"{label}: its PTX stores nothing to global memory")
        if info.tensor_cores and dtype == "*fp16" and result["wgmma"] + result["mma"] <= 0:
            raise AssertionError(
                f"{label}: no tensor-core instruction (wgmma/mma) in its sm_90 PTX: a float16 "
                "product must go through tl.dot on blocks of at least 16x16")
        if info.ieee and dtype == "*fp32" and result["tf32"] > 0:
            raise AssertionError(
                f"{label}: its float32 tl.dot runs on TF32 tensor cores ({result['mma_kinds']}); "
                "the course asks for input_precision=\"ieee\" in float32 (TF32 keeps 10 bits "
                "of mantissa)")


def _key(request: dict[str, Any]) -> str:
    import json

    return json.dumps(request, sort_keys=True)


def batch(requests: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Deduplicated compile requests and the index of each."""
    unique: dict[str, int] = {}
    ordered = []
    for r in requests:
        k = _key(r)
        if k not in unique:
            unique[k] = len(ordered)
            ordered.append(r)
    return ordered, unique
