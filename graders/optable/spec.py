"""The shape of an op table entry, and what the graders derive from a sample: the wire
form a probe understands, a one-line description, and a tinytrain reproducer."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..checks.compare import literal
from ..strategies.ops import (
    FLOAT_DTYPES,
    LAYOUT_WORDS,
    LOW_PRECISION,
    SPECIALS,
    Draw,
    Index,
    Sample,
    T,
    is_float,
)

SampleFn = Callable[[Draw, np.dtype], Sample]
AUTOCAST = ("lower_precision", "fp32", "promote", "none")
# what OpInfo.exempt may name; "grad_<kind>": special values in the backward check
AXES = ("float16", "bfloat16", "mixed_dtypes", *SPECIALS, *(f"grad_{k}" for k in SPECIALS))


@dataclass(frozen=True)
class Kink:
    """Inputs that hit a non-differentiable point (or a tie) on purpose; the submission
    must give torch's value there. ``rule`` says which (shown to the student)."""

    name: str
    sample: SampleFn
    rule: str
    grad_values: tuple[float, ...] = (1.0, -1.0, 0.5, 0.0)  # incoming gradient elements


@dataclass(frozen=True)
class ErrorCase:
    """Inputs on which torch raises: the submission must raise the same type, with
    ``contains`` in the message."""

    name: str
    sample: SampleFn
    exc_type: str
    contains: tuple[str, ...]


@dataclass(frozen=True)
class OpInfo:
    """One operator: how torch computes it, how tinytrain is called, where its inputs
    live, how it behaves at kinks, and how closely it must match.

    ``calls`` are the tinytrain spellings ("tt.add", "Tensor.add", "operator.add",
    "tt.nn.functional.relu"); the first is the canonical one. ``grad_output`` is the
    output that carries the gradient (None: not differentiable). ``near_kink(sample)``
    marks samples too close to a kink for finite differences. ``autocast`` is the op's
    category in torch's CUDA autocast policy. ``tolerances`` override the per-dtype
    (rtol, atol) of torch.testing.assert_close, with the reason in a comment.
    """

    name: str
    task: str
    torch: Callable[..., Any]
    calls: tuple[str, ...]
    sample: SampleFn
    autocast: str
    grad_output: int | None = 0
    near_kink: Callable[[Sample], bool] | None = None
    kinks: tuple[Kink, ...] = ()
    stability: SampleFn | None = None
    view: bool = False
    errors: tuple[ErrorCase, ...] = ()
    tolerances: dict[str, tuple[float, float]] = field(default_factory=dict)
    exempt: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.autocast not in AUTOCAST:
            raise ValueError(f"{self.name}: autocast category {self.autocast!r} not in {AUTOCAST}")
        unknown = set(self.exempt) - set(AXES)
        if unknown:
            raise ValueError(f"{self.name}: exempt from unknown axes {sorted(unknown)}")
        if not all(self.exempt.values()):
            raise ValueError(f"{self.name}: every exemption needs its reason")

    @property
    def dtypes(self) -> tuple[np.dtype, ...]:
        """The floating point dtypes its samples are drawn in (float32 and float64 always)."""
        return tuple(d for d in FLOAT_DTYPES if d.name not in self.exempt)

    @property
    def specials(self) -> tuple[str, ...]:
        """The kinds of special values its forward check puts into its inputs."""
        return tuple(k for k in SPECIALS if k not in self.exempt)

    @property
    def grad_specials(self) -> tuple[str, ...]:
        """The kinds of special values its backward check puts into its inputs (torch's
        autograd the oracle there too)."""
        return tuple(k for k in SPECIALS if k not in self.exempt and f"grad_{k}" not in self.exempt)

    @property
    def differentiable(self) -> bool:
        return self.grad_output is not None

    def tolerance(self, dtype: np.dtype) -> tuple[float | None, float | None]:
        return self.tolerances.get(np.dtype(dtype).name, (None, None))


# ----- the wire form (what graders.probes.ops decodes) --------------------------------
def to_wire(x: Any) -> Any:
    if isinstance(x, T):
        return {"tensor": x.value, "layout": x.layout, "grad": x.grad}
    if isinstance(x, Index):
        return {"index": [_index_item(i) for i in x.items]}
    if isinstance(x, tuple):
        return tuple(to_wire(v) for v in x)
    if isinstance(x, list):
        return [to_wire(v) for v in x]
    if isinstance(x, dict):
        return {k: to_wire(v) for k, v in x.items()}
    return x


def _index_item(item: Any) -> list[Any]:
    if item is None:
        return ["none"]
    if item is Ellipsis:
        return ["ellipsis"]
    if isinstance(item, slice):
        return ["slice", item.start, item.stop, item.step]
    return ["int", int(item)]


# ----- descriptions and reproducers ---------------------------------------------------
_NAMES = ("x", "y", "z", "w", "v", "u", "s", "r")
_OPERATORS = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "pow": "**", "matmul": "@"}


def tensor_names(sample: Sample) -> dict[int, str]:
    """A short name for each tensor argument (by ``id``): x, y, z, ..."""
    return {id(t): _NAMES[i] if i < len(_NAMES) else f"t{i}"
            for i, t in enumerate(sample.tensors())}


def describe(sample: Sample) -> str:
    """The inputs in one line: name: dtype shape (layout), and the other arguments."""
    names = tensor_names(sample)
    parts = []
    for t in sample.tensors():
        layout = "" if t.layout == "contiguous" else f" {t.layout}"
        parts.append(f"{names[id(t)]}: {t.value.dtype.name}{list(t.value.shape)}{layout}")
    others = [repr(a) for a in sample.args if not _holds_tensor(a)]
    others += [f"{k}={v!r}" for k, v in sample.kwargs.items() if not _holds_tensor(v)]
    return ", ".join(parts + others)


_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth")


def axes_note(sample: Sample, special: str | None = None, grad_layout: str | None = None
              ) -> str:
    """The axes of a sample that are not the plain case, as a failure message names them:
    " with a strided second operand, with float16 inputs, with NaN inputs, with a
    transposed gradient" (empty for contiguous float32/float64 inputs)."""
    tensors = sample.tensors()
    parts = []
    for i, t in enumerate(tensors):
        if t.layout == "contiguous":
            continue
        which = "input" if len(tensors) == 1 else (
            f"{_ORDINALS[i] if i < len(_ORDINALS) else f'#{i + 1}'} operand")
        word = LAYOUT_WORDS.get(t.layout, t.layout)
        parts.append(f"with {'an' if word[0] in 'aeiou' else 'a'} {word} {which}")
    floats = sorted({t.value.dtype.name for t in tensors if is_float(t.value.dtype)})
    if len(floats) > 1:
        parts.append(f"with mixed {' and '.join(floats)} inputs")
    elif floats and floats[0] in {d.name for d in LOW_PRECISION}:
        parts.append(f"with {floats[0]} inputs")
    if special is not None:
        parts.append(SPECIALS[special])
    if grad_layout not in (None, "contiguous"):
        word = LAYOUT_WORDS.get(grad_layout, grad_layout)
        parts.append(f"with {'an' if word[0] in 'aeiou' else 'a'} {word} gradient")
    return "".join(f" {p}" if not k else f", {p}" for k, p in enumerate(parts))


def _holds_tensor(x: Any) -> bool:
    return isinstance(x, T) or (isinstance(x, (list, tuple)) and any(_holds_tensor(v) for v in x))


def _source(x: Any, names: dict[int, str]) -> str:
    """Python source for an argument."""
    if isinstance(x, T):
        return names[id(x)]
    if isinstance(x, Index):
        return ", ".join(_index_source(i) for i in x.items) or "()"
    if isinstance(x, list):
        return "[" + ", ".join(_source(v, names) for v in x) + "]"
    if isinstance(x, tuple):
        inner = ", ".join(_source(v, names) for v in x)
        return f"({inner},)" if len(x) == 1 else f"({inner})"
    return repr(x)


def _index_source(item: Any) -> str:
    if item is Ellipsis:
        return "..."
    if isinstance(item, slice):
        parts = ["" if v is None else str(v) for v in (item.start, item.stop, item.step)]
        return ":".join(parts if item.step is not None else parts[:2])
    return repr(item)


def call_source(call: str, sample: Sample, names: dict[int, str]) -> str:
    """The call as a student would write it."""
    args = [_source(a, names) for a in sample.args]
    kwargs = [f"{k}={_source(v, names)}" for k, v in sample.kwargs.items()]
    kind, _, name = call.partition(".")
    if kind == "operator":
        if name == "getitem":
            return f"{args[0]}[{args[1]}]"
        if name == "neg":
            return f"-{args[0]}"
        if name == "abs":
            return f"abs({args[0]})"
        return f"{args[0]} {_OPERATORS[name]} {args[1]}"
    if kind == "Tensor":
        rest = ", ".join(args[1:] + kwargs)
        member = f"{args[0]}.{name}"
        return member if name in ("T", "mT") else f"{member}({rest})"
    return f"{call}({', '.join(args + kwargs)})"


def values_source(array: np.ndarray) -> str:
    """A Python literal for ``array``, non-finite values included."""
    if array.size == 0:
        return f"np.zeros({array.shape})"
    return re.sub(r"\b(inf|nan)\b", r"float('\1')", literal(array))


def _layout_source(array: str, layout: str, ndim: int) -> str:
    """Source for the values of ``array`` (source too) in ``layout``."""
    if layout == "transposed":
        return f"np.asfortranarray({array})"
    if layout == "offset":  # a view that starts inside a larger buffer
        index = ", ".join(["1:"] * ndim)
        return (f"np.pad({array}, [(1, 0)] * {ndim})[{index}]" if ndim
                else f"np.pad({array}.reshape(1), (1, 0))[1:].reshape(())")
    if layout == "flipped":  # negative strides
        return f"np.flip(np.flip({array}).copy())"
    if layout == "sliced":
        return f"np.repeat({array}, 2, axis=-1)[..., ::2]"
    return array


def _tensor_source(t: T, name: str, with_grad: bool, contiguous: bool = False,
                   values: str | None = None) -> str:
    dtype = t.value.dtype.name
    values = values_source(t.value) if values is None else values
    if t.layout == "contiguous" or contiguous:
        grad = ", requires_grad=True" if with_grad and t.grad else ""
        return f"{name} = tt.tensor({values}, dtype=tt.{dtype}{grad})"
    array = f"np.array({values}, dtype=tt.{dtype}.np)"  # (NumPy has no bfloat16 of its own)
    array = _layout_source(array, t.layout, t.value.ndim)
    grad = ".requires_grad_()" if with_grad and t.grad else ""
    return f"{name} = tt.Tensor({array}){grad}  # {t.layout}: not C-contiguous"


def reproducer(call: str, sample: Sample, grad_outputs: list[np.ndarray | None] | None = None,
               n_outputs: int = 1, *, view: bool = False, raises: str | None = None,
               setup: tuple[str, ...] = (), values: dict[str, str] | None = None,
               grad_layout: str = "contiguous") -> str:
    """A tinytrain script a student can run: the inputs, the call, and (with
    ``grad_outputs``) the backward and the gradients; with ``view``, whether the output
    is a view of the first input; with ``raises`` (what PyTorch raises), the exception.
    ``values``: NumPy expressions for the values of some inputs (by name: x, y, ...),
    after the ``setup`` lines, instead of literals (large drawn inputs: a seeded
    generator gives the same values in a few characters). ``grad_layout``: the memory
    layout of the incoming gradient."""
    names = tensor_names(sample)
    lines = ["import numpy as np", "import tinytrain as tt", *setup]
    backward = grad_outputs is not None
    # (the view probe makes its inputs contiguous)
    lines += [_tensor_source(t, names[id(t)], backward, contiguous=view,
                             values=(values or {}).get(names[id(t)]))
              for t in sample.tensors()]
    source = call_source(call, sample, names)
    if raises is not None:
        return "\n".join([*lines, "try:", f"    out = {source}", '    print("raised nothing")',
                          f"except Exception as error:  # PyTorch: {raises}",
                          "    print(type(error).__name__, error)"])
    lines.append(f"out = {source}")
    if view:
        first = names[id(sample.tensors()[0])]
        out = "out[0]" if n_outputs > 1 else "out"
        return "\n".join([*lines, "# PyTorch: True True True (a view shares memory and the "
                                  "version counter, and _base is the input)",
                          f"print(np.shares_memory({out}.data, {first}.data), "
                          f"{out}._version_counter is {first}._version_counter, "
                          f"{out}._base is {first})"])
    lines.append("print(out)")
    if not backward:
        return "\n".join(lines)
    k, grad = next((k, g) for k, g in enumerate(grad_outputs) if g is not None)
    target = f"out[{k}]" if n_outputs > 1 else "out"
    if grad_layout == "contiguous":
        lines.append(f"{target}.backward(tt.tensor({values_source(grad)}, "
                     f"dtype=tt.{grad.dtype.name}))")
    else:
        array = _layout_source(f"np.array({values_source(grad)}, dtype=tt.{grad.dtype.name}.np)",
                               grad_layout, grad.ndim)
        lines.append(f"{target}.backward(tt.Tensor({array}))  # {grad_layout} gradient")
    wanted = [names[id(t)] for t in sample.differentiable()]
    lines.append("print(" + ", ".join(f"{n}.grad" for n in wanted) + ")")
    return "\n".join(lines)
