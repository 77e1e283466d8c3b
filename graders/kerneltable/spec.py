"""The shape of a kernel table entry, and the parts every entry uses: launches described
as data (what ``graders.probes.cuda.launch`` runs), drawn values with a reproducer, the
expected outputs with their tolerance, and the signature a kernel is compiled with."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..strategies.cuda import NP_NAMES, Values


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ----- launches ------------------------------------------------------------------------
@dataclass
class Buffer:
    """A buffer the grader allocates: input values, or an output of this shape and dtype
    (filled with NaN before the launch), in a memory layout."""

    values: np.ndarray
    layout: str = "contiguous"
    output: bool = False
    inout: bool = False  # an output that starts with ``values`` (updated in place)


@dataclass(frozen=True)
class Ptr:
    """A buffer passed as a pointer argument."""

    name: str


@dataclass(frozen=True)
class Stride:
    """A buffer's stride (in elements) along ``dim``, as an integer argument."""

    name: str
    dim: int


@dataclass
class Launch:
    """One launch: buffers by name, the positional arguments, constexprs and the grid."""

    buffers: dict[str, Buffer]
    args: list[Any]
    constexprs: dict[str, Any]
    grid: tuple[int, ...]
    trace: str | None = None  # a buffer whose first store per program is recorded

    def wire(self, module: str, kernel: str) -> dict[str, Any]:
        """The request ``probes.cuda.launch`` takes."""
        args = []
        for a in self.args:
            if isinstance(a, Ptr):
                args.append({"buffer": a.name})
            elif isinstance(a, Stride):
                args.append({"stride": [a.name, a.dim]})
            else:
                args.append({"value": a})
        buffers = {n: {"values": _sent(b), "layout": b.layout, "output": b.output or b.inout,
                       "inout": b.inout} for n, b in self.buffers.items()}
        return {"module": module, "kernel": kernel, "buffers": buffers, "args": args,
                "constexprs": dict(self.constexprs), "grid": list(self.grid),
                "trace": self.trace}


def _sent(buffer: Buffer) -> np.ndarray:
    """The values sent for a buffer: an output's are never the grader's memory (an output
    allocated with ``np.empty`` holds whatever the grader's process had there; the probe
    fills float outputs with NaN), so a request depends on the case alone."""
    if not buffer.output or buffer.inout:
        return buffer.values
    kind = buffer.values.dtype.kind
    floating = kind in "fc" or buffer.values.dtype.name == "bfloat16"
    return np.full_like(buffer.values, np.nan) if floating else np.zeros_like(buffer.values)


# ----- expectations ------------------------------------------------------------------------
@dataclass
class Expect:
    """What one output must hold: torch's values within (rtol, atol), or, with ``bound``,
    within a per-element error bound (``|got - value| <= bound``)."""

    value: np.ndarray
    rtol: float | None = None
    atol: float | None = None
    bound: np.ndarray | None = None
    why: str = ""
    dtype: str | None = None  # the output's dtype, where ``value`` is kept wider (bounds)
    signed_zeros: bool = False  # where torch gives -0.0 (or 0.0), the sign must match


@dataclass
class Case:
    """A drawn case: the launch, what torch says of each output, and how to describe it."""

    launch: Launch
    expected: dict[str, Expect]
    description: str
    values: Values
    dtype: str


def layout_line(name: str, layout: str) -> str | None:
    """NumPy code that gives ``name`` the memory layout the grader used."""
    if layout == "transposed":
        return f"{name} = np.ascontiguousarray({name}.swapaxes(-1, -2)).swapaxes(-1, -2)"
    if layout == "strided":
        return (f"{name}_mem = np.zeros({name}.shape[:-1] + ({name}.shape[-1] * 2,), "
                f"{name}.dtype); {name}_mem[..., ::2] = {name}; {name} = {name}_mem[..., ::2]")
    if layout == "heads":
        return f"{name} = np.ascontiguousarray({name}.swapaxes(1, 2)).swapaxes(1, 2)"
    if layout == "padded":
        return (f"{name}_mem = np.zeros({name}.shape[:-1] + ({name}.shape[-1] + 3,), "
                f"{name}.dtype); {name}_mem[..., :-3] = {name}; {name} = {name}_mem[..., :-3]")
    return None


def reproducer(case: Case, module: str, kernel: str) -> str:
    """NumPy + tinytrain code that launches the kernel on the same buffers as the grader:
    once under the grader's own bounds checker (installed with the grader: it reports an
    access outside the buffers, writes into the guard regions around them, and inputs
    written), then plainly, printing each output."""
    launch = case.launch
    lines = ["import numpy as np", "import tinytrain as tt",
             "from graders.probes.cuda import launch as checked_launch",
             "from tinytrain.cuda._runtime import launch",
             f"from tinytrain.cuda.{module} import {kernel}", *case.values.lines]
    shown = []
    for name, buf in launch.buffers.items():
        if buf.output or buf.inout:
            shown.append(name)
        if buf.output and not buf.inout:
            dtype = NP_NAMES.get(buf.values.dtype.name, f"np.{buf.values.dtype.name}")
            lines.append(f"{name} = np.full({tuple(buf.values.shape)}, np.nan, {dtype})")
        line = layout_line(name, buf.layout)
        if line:
            lines.append(line)
    wire = launch.wire(module, kernel)
    buffers = ", ".join(
        f"{name!r}: {{'values': {name}, "
        + ", ".join(f"{k!r}: {v!r}" for k, v in spec.items() if k != "values") + "}"
        for name, spec in wire["buffers"].items())
    rest = ", ".join(f"{k!r}: {v!r}" for k, v in wire.items() if k != "buffers")
    lines += ["# the grader's checked launch (its own copies of the buffers, between guard regions)",
              f"seen = checked_launch(tt, {{'buffers': {{{buffers}}}, {rest}}})",
              "# a correct kernel: None, [], []",
              'print("out of bounds:", seen["oob"])',
              'print("guard regions written:", seen["guards"], "inputs written:", '
              'seen["written_inputs"])']
    args = []
    for a in launch.args:
        if isinstance(a, Ptr):
            args.append(a.name)
        elif isinstance(a, Stride):
            args.append(f"{a.name}.strides[{a.dim}] // {a.name}.itemsize")
        else:
            args.append(repr(a))
    consts = ", ".join(f"{k}={v!r}" for k, v in launch.constexprs.items())
    lines.append(f"launch({kernel}, {tuple(launch.grid)}, {', '.join(args)}, {consts})")
    lines.append("np.set_printoptions(precision=8, threshold=200)")
    lines += [f'print("{name}:", {name})' for name in shown]
    return "\n".join(lines)


# ----- the entry -------------------------------------------------------------------------
CaseFn = Callable[[Values, str], Case]


@dataclass(frozen=True)
class KernelInfo:
    """One kernel of the course's API, from which its checks are generated.

    ``params`` is the signature the API fixes (the grader launches the kernel itself, so
    the names and order matter); ``case(values, dtype)`` draws one launch and torch's
    answer; ``edges`` are hand-picked cases (size 1, exact tiles, tails) run before the
    drawn ones. ``pointer_types`` fixes the element type of pointers that do not follow
    the case's dtype (statistics in float32, int64 targets). ``tensor_cores``: the float16
    build must use mma/wgmma instructions, and (``ieee``) the float32 build must not use
    TF32. ``checks`` are extra named checks (stability, program order ...).
    ``compile_dtypes``: the buffer types it is compiled with (float16 for its casts and
    tensor cores; float32 too where TF32 must be ruled out): each compile costs seconds."""

    name: str
    module: str
    task: str
    params: tuple[str, ...]
    case: CaseFn
    dtypes: tuple[str, ...] = ("float32", "float16")
    edges: tuple[tuple[str, CaseFn], ...] = ()
    examples: int = 6
    pointer_types: dict[str, str] = field(default_factory=dict)
    float_params: tuple[str, ...] = ()
    compile_constexprs: dict[str, Any] = field(default_factory=dict)
    compile_dtypes: tuple[str, ...] = ("float32",)
    tensor_cores: bool = False
    ieee: bool = False
    checks: tuple[tuple[str, Callable[..., None]], ...] = ()

    def signature(self, dtype: str) -> dict[str, str]:
        """Triton's signature of this kernel for a compile with ``dtype`` buffers."""
        short = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}[dtype]
        sig = {}
        for p in self.params:
            if p in self.compile_constexprs:
                sig[p] = "constexpr"
            elif p in self.pointer_types:
                sig[p] = self.pointer_types[p]
            elif p.endswith("_ptr"):
                sig[p] = f"*{short}"
            elif p in self.float_params:
                sig[p] = "fp32"
            else:
                sig[p] = "i32"
        return sig

    def compile_requests(self) -> list[dict[str, Any]]:
        return [{"module": self.module, "kernel": self.name, "signature": self.signature(dt),
                 "constexprs": seeded_constexprs(self.compile_constexprs, self.name, dt)}
                for dt in self.compile_dtypes]


def seeded_constexprs(constexprs: dict[str, Any], *key: Any) -> dict[str, Any]:
    """A compile's constexprs drawn from the grading seed (``constexprs`` at seed 0): each
    flag either way, each power-of-two BLOCK_* size halved, kept or doubled (within 16 to
    2048: tensor cores need 16), GROUP_M and ROWS_PER_PROGRAM 4 or 8; at least one differs
    from ``constexprs``, so a compile request of another grading is never this one."""
    from ..suites._seed import case_rng, grading_seed

    if grading_seed() == 0:
        return dict(constexprs)
    rng = case_rng(0, "compile constexprs", *key)
    options = {}
    for name, value in constexprs.items():
        if isinstance(value, bool):
            options[name] = [False, True]
        elif name.startswith("BLOCK_") and isinstance(value, int) and value & (value - 1) == 0:
            options[name] = [v for v in (value // 2, value, value * 2) if 16 <= v <= 2048]
        elif name in ("GROUP_M", "ROWS_PER_PROGRAM"):
            options[name] = sorted({4, 8, value})
    drawn = {name: (options[name][int(rng.integers(len(options[name])))] if name in options
                    else value) for name, value in constexprs.items()}
    if drawn == dict(constexprs) and options:
        name = sorted(options)[int(rng.integers(len(options)))]
        drawn[name] = next(v for v in options[name] if v != constexprs[name])
    return drawn


@dataclass(frozen=True)
class WrapperInfo:
    """A task's host function (NumPy arrays in and out): called by the probe, its results
    against torch, the kernels it must launch (a wrapper that computes with NumPy
    launches none), and ownership: its arguments unchanged, its results its own memory."""

    name: str
    module: str
    task: str
    call: Callable[[Values], tuple[list[Any], dict[str, Any], list[Expect], str]]
    kernels: tuple[str, ...]
    examples: int = 3
    # arguments the API updates in place and returns (Adam's state): every other argument
    # must come back unchanged, and no result may share memory with one
    inplace: tuple[int, ...] = ()


def numel(shape: tuple[int, ...]) -> int:
    return math.prod(shape)
