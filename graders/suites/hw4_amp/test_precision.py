"""Task 4.1: float16 and bfloat16 tensors against PyTorch: type promotion, casts and their
gradients, float32 "opmath" (a low-precision op computes in float32 and rounds once: a
matmul accumulates in float32), scalar operands, overflow and underflow, and every operator of
assignment 2 in the op table run in float16 and bfloat16.

Low-precision values are compared by the rule of ``graders.checks.precision``:
assert_close's defaults for the dtype around PyTorch's value, widened by PyTorch's own
distance from the float32 result on the same inputs. Where PyTorch rounds exactly once
(casts, matmul, sum), that is assert_close itself, or exact equality for casts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graders.checks import assert_close, assert_equal
from graders.checks.precision import assert_low_precision_close
from graders.checks.structure import Kind, ListOf, conform
from graders.optable import OPS
from graders.optable.spec import (
    OpInfo,
    describe,
    reproducer,
    tensor_names,
    to_wire,
    values_source,
)
from graders.oracle import ops as ops_oracle
from graders.oracle import precision as oracle
from graders.strategies.ops import Draw, Sample, T
from graders.strategies.precision import FLOATS, LOW, edge_values, gradient_values
from graders.strategies.programs import classes_source
from graders.suites._seed import case_rng, grading_seed
from graders.suites._support import examples, task

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", *FLOATS]
TORCH = {**oracle.TORCH_DTYPES, "bool": torch.bool, "uint8": torch.uint8, "int8": torch.int8,
         "int16": torch.int16, "int32": torch.int32, "int64": torch.int64}


def _torch_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@task("4.1")
def test_promotion(submission):
    """``tt.promote_types`` for every pair of dtypes (float16 with bfloat16 is float32; a
    floating type beats any integer), and ``tt.result_type`` for tensors with dims,
    zero-dim tensors and Python numbers (dims outrank zero-dim, which outrank numbers,
    unless the lower one is of a higher category), bfloat16 included."""
    pairs = [[a, b] for a in DTYPES for b in DTYPES]
    operands = []
    rng = case_rng(0, "4.1 promotion")
    # at grading seeds other than 0: other numbers of each kind, and both lists shuffled
    numbers = (2.5, 3, True) if grading_seed() == 0 else \
        (float(rng.integers(-400, 400)) + 0.5, int(rng.integers(-100, 100)),
         bool(rng.integers(2)))
    for a in ("float16", "bfloat16", "int64", "float32"):
        for b in ("float16", "bfloat16", "float32", "float64", "int32"):
            for dims in ((1, 1), (1, 0), (0, 1), (0, 0)):
                operands.append([["tensor", a, dims[0]], ["tensor", b, dims[1]]])
        for number in numbers:
            operands.append([["tensor", a, 1], ["number", number]])
            operands.append([["tensor", a, 0], ["number", number]])
    if grading_seed():
        pairs = [pairs[i] for i in rng.permutation(len(pairs))]
        operands = [operands[i] for i in rng.permutation(len(operands))]
    got = submission.call("precision.promotion", pairs, operands)
    conform(got, {"promote_types": [Kind(str)] * len(pairs),
                  "result_type": [Kind(str)] * len(operands)}, what="precision.promotion")
    expected_types = [_torch_name(torch.promote_types(TORCH[a], TORCH[b])) for a, b in pairs]
    for (a, b), g, e in zip(pairs, got["promote_types"], expected_types, strict=True):
        assert_equal(g, e, what=f"tt.promote_types(tt.{a}, tt.{b})",
                     reproducer=f"import tinytrain as tt\nprint(tt.promote_types(tt.{a}, tt.{b}))")

    def torch_operand(spec: list[Any]) -> Any:
        if spec[0] == "number":
            return spec[1]
        return torch.zeros((2,) * spec[2], dtype=TORCH[spec[1]])

    for (a, b), g in zip(operands, got["result_type"], strict=True):
        e = _torch_name(torch.result_type(torch_operand(a), torch_operand(b)))
        source = (f"tt.zeros({(2,) * a[2]}, dtype=tt.{a[1]})",
                  repr(b[1]) if b[0] == "number" else f"tt.zeros({(2,) * b[2]}, dtype=tt.{b[1]})")
        assert_equal(g, e, what=f"tt.result_type({source[0]}, {source[1]})",
                     reproducer=f"import tinytrain as tt\nprint(tt.result_type({', '.join(source)}))")


OBSERVED = {"dtype": Kind(str), "value": Kind(np.ndarray)}  # the probes' _observed(tensor)

CASTS = {"half": "float16", "bfloat16": "bfloat16", "float": "float32", "double": "float64"}


@task("4.1")
@settings(max_examples=examples(30))
@given(values=edge_values(), source=st.sampled_from(FLOATS),
       call=st.sampled_from([*CASTS, "to", "to_kw"]), target=st.sampled_from(FLOATS),
       data=st.data())
def test_cast(submission, values, source, call, target, data):
    """``.half()``, ``.bfloat16()``, ``.float()``, ``.double()``, ``.to(dtype)`` and
    ``.to(dtype=...)``: the values rounded exactly as torch rounds them (to nearest, ties
    to even; past float16's 65504 to inf, while bfloat16 keeps float32's range; float64
    through float32), the same tensor when the dtype does not change, and the cast's own
    backward returns the gradient in the source dtype (an incoming float32 gradient below
    float16's smallest subnormal 2**-24 flushes to zero)."""
    target = CASTS.get(call, target)
    x = oracle.torch_of(np.asarray(values, dtype=np.float64)).to(TORCH[source])
    x_value = oracle.numpy_of(x)  # rounded by torch, sent as it is
    g_value = oracle.cast_values(data.draw(gradient_values(x_value.shape), label="grad"), target)
    got = submission.call("precision.cast", x_value, source, call, target, g_value)
    conform(got, {"output": OBSERVED, "same_object": Kind(bool),
                  "grad": Kind(None, dict)}, what="precision.cast")
    if got["grad"] is not None:
        conform(got["grad"], {"dtype": Kind(str), "value": Kind(None, np.ndarray)},
                what="precision.cast['grad']")
    x.requires_grad_(True)
    y = x.to(TORCH[target])
    method = {"to": f".to(tt.{target})", "to_kw": f".to(dtype=tt.{target})"}.get(call, f".{call}()")
    # x's values are those of the source dtype already: converting them rounds nothing
    repro = (f"import numpy as np\nimport tinytrain as tt\nx = tt.tensor(np.array("
             f"{values_source(x_value.astype(np.float64))}), dtype=tt.{source}, "
             f"requires_grad=True)\ny = x{method}\nprint(y, y is x)")
    backward_repro = (
        f"{repro}\ng = np.array({values_source(np.asarray(g_value, dtype=np.float64))}, "
        f"dtype=tt.{target}.np)\n# the cast's own backward, called as the grader calls it "
        "(the engine would convert what it returns)\n"
        "print(type(y.grad_fn)._function.backward(y.grad_fn, g))")
    case = f"x: {source}{list(x_value.shape)}, y = x{method}"
    assert_equal(got["same_object"], source == target,
                 what=f"x{method} returns x itself exactly when x is already {target}",
                 case=case, reproducer=repro)
    expected = oracle.numpy_of(y)
    assert_close(got["output"]["value"], expected, rtol=0, atol=0, what=f"values of x{method}",
                 case=case, reproducer=repro)
    if source == target:
        return
    y.backward(oracle.torch_of(g_value))
    expected_grad = oracle.numpy_of(x.grad)
    grad_case = f"{case}; its backward called with a {target} gradient"
    assert_equal(got["grad"] is not None, True,
                 what=f"x{method} records a cast Function in the graph (its grad_fn)",
                 case=grad_case, reproducer=f"{repro}\nprint(y.grad_fn)")
    assert_equal(got["grad"]["dtype"], source,
                 what=f"dtype of the gradient the backward of x{method} returns (x's dtype)",
                 case=grad_case, reproducer=backward_repro)
    assert_close(got["grad"]["value"], expected_grad, rtol=0, atol=0,
                 what=f"gradient the backward of x{method} returns", case=grad_case,
                 reproducer=backward_repro)


def _opmath_case(draw: Any, name: str) -> tuple[list[np.ndarray], list[str]]:
    """The inputs, and the NumPy code that draws them again (a seeded generator)."""
    seed = draw(st.integers(0, 2**32 - 1), label="seed")
    if name == "matmul":  # all positive: every product adds up, so rounding errors do too
        n, k, m = (draw(st.integers(1, 6), label="n"), draw(st.integers(64, 512), label="k"),
                   draw(st.integers(1, 6), label="m"))
        ranges = [(0, 1, (n, k)), (0, 1, (k, m))]
    elif name == "sum_last":
        ranges = [(0, 1, (draw(st.integers(1, 3)), draw(st.integers(200, 2000))))]
    elif name == "exp":
        ranges = [(-4, 4, (draw(st.integers(1, 50)),))]
    else:
        shape = (draw(st.integers(1, 50)),)
        ranges = [(-4, 4, shape), (-4, 4, shape)]
    rng = np.random.default_rng(seed)
    return ([rng.uniform(lo, hi, shape) for lo, hi, shape in ranges],
            [f"rng = np.random.default_rng({seed})",
             *[f"rng.uniform({lo}, {hi}, {shape})" for lo, hi, shape in ranges]])


TORCH_OPMATH = {"matmul": torch.matmul, "sum_last": lambda a: a.sum(-1), "exp": torch.exp,
                "mul": torch.mul}
OPMATH_SOURCE = {"matmul": "a @ b (a (n, k), b (k, m), k from 64 to 512)",
                 "sum_last": "a.sum(-1) over 200 to 2000 elements", "exp": "a.exp()",
                 "mul": "a * b"}


OPMATH_CLASSES = {"matmul": "Matmul", "sum_last": "SumLast", "exp": "Exp", "mul": "Mul"}


def _opmath_reproducer(name: str, dtype: str, draws: list[str], grad_seed: int) -> str:
    """The probe's Function applied to the same low-precision leaves, then backward."""
    cls = OPMATH_CLASSES[name]
    leaves = [f"t{i}" for i in range(len(draws) - 1)]
    return "\n".join([
        "import numpy as np", "import tinytrain as tt", "",
        classes_source([cls], module="precision"), "", "",
        f"# Function.apply must run {cls}'s plain NumPy forward on float32 copies and round",
        f"# its outputs (and, in backward, its gradients) to {dtype} once",
        draws[0],
        *[f"{t} = tt.tensor({draw}, dtype=tt.{dtype}, requires_grad=True)"
          for t, draw in zip(leaves, draws[1:], strict=True)],
        f"out = {cls}.apply({', '.join(leaves)})",
        f"g = np.random.default_rng({grad_seed}).uniform(-1, 1, out.shape)",
        f"out.backward(tt.tensor(g, dtype=tt.{dtype}))",
        "print(out)",
        *[f'print("{t}.grad:", {t}.grad)' for t in leaves]])


@task("4.1")
@pytest.mark.parametrize("name", list(TORCH_OPMATH))
@settings(max_examples=examples(6))
@given(data=st.data(), dtype=st.sampled_from(LOW))
def test_opmath(submission, name, data, dtype):
    """A Function of the graders' own (plain NumPy math in whatever dtype it is handed),
    applied to float16/bfloat16 leaves through tinytrain's Function.apply: the output and
    the gradients are PyTorch's, which computes in float32 and rounds once. A matmul or a
    long sum that accumulated in low precision would be far off; so would an output left
    in float32."""
    drawn, draws = _opmath_case(data.draw, name)
    values = [np.asarray(v).astype(oracle.NUMPY_DTYPES[dtype]) for v in drawn]
    leaves = [oracle.torch_of(v).requires_grad_(True) for v in values]
    out = TORCH_OPMATH[name](*leaves)
    grad_seed = data.draw(st.integers(0, 2**32 - 1), label="grad seed")
    rng = np.random.default_rng(grad_seed)
    g = rng.uniform(-1, 1, tuple(out.shape)).astype(oracle.NUMPY_DTYPES[dtype])
    out.backward(oracle.torch_of(g))
    got = submission.call("precision.opmath", name, values, dtype, g)
    conform(got, {"output": OBSERVED, "grads": [Kind(None, dict)] * len(values)},
            what="precision.opmath")
    case = f"{OPMATH_SOURCE[name]}, {dtype} inputs of shapes {[list(v.shape) for v in values]}"
    repro = _opmath_reproducer(name, dtype, draws, grad_seed)
    assert_close(got["output"]["value"], oracle.numpy_of(out), what=f"{name}: output",
                 case=case, reproducer=repro)
    for i, (leaf, grad) in enumerate(zip(leaves, got["grads"], strict=True)):
        assert grad is not None, f"{name}: input {i} received no gradient\n  case: {case}"
        conform(grad, OBSERVED, what=f"precision.opmath['grads'][{i}]")
        assert_close(grad["value"], oracle.numpy_of(leaf.grad),
                     what=f"{name}: gradient of input {i}", case=case, reproducer=repro)


class _TorchScale(torch.autograd.Function):
    """``a * k``, the probes' Scale, in torch."""

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, k: float) -> torch.Tensor:
        ctx.k = k
        return a * k

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, None]:
        return g * ctx.k, None


@task("4.1")
@pytest.mark.parametrize("dtype", LOW)
def test_opmath_passes_keyword_arguments(submission, dtype):
    """Function.apply(x, k=3.0) on a float16/bfloat16 x: the keyword reaches forward on
    the float32 path too, as torch's Function.apply passes it."""
    rng = case_rng(41, "4.1 keyword", dtype)
    x = rng.uniform(-4, 4, 7).astype(oracle.NUMPY_DTYPES[dtype])
    g = rng.uniform(-1, 1, 7).astype(oracle.NUMPY_DTYPES[dtype])
    leaf = oracle.torch_of(x).requires_grad_(True)
    out = _TorchScale.apply(leaf, k=3.0)
    out.backward(oracle.torch_of(g))
    got = submission.call("precision.opmath", "scale", [x], dtype, g, {"k": 3.0})
    conform(got, {"output": OBSERVED, "grads": [Kind(None, dict)]}, what="precision.opmath")
    case = f"Scale.apply(x, k=3.0) (forward: a.data * k) for a {dtype} x of 7 elements"
    assert_equal(got["output"]["dtype"], dtype, what="the output's dtype", case=case)
    assert_close(got["output"]["value"], oracle.numpy_of(out), what="the output", case=case)
    assert got["grads"][0] is not None, f"x received no gradient\n  case: {case}"
    conform(got["grads"][0], OBSERVED, what="precision.opmath['grads'][0]")
    assert_close(got["grads"][0]["value"], oracle.numpy_of(leaf.grad), what="x.grad", case=case)


@task("4.1")
@pytest.mark.parametrize("call", ["tt.matmul", "tt.nn.functional.linear"])
@settings(max_examples=examples(5))
@given(data=st.data(), dtype=st.sampled_from(LOW))
def test_matmul_accumulates_in_float32(submission, call, data, dtype):
    """tt.matmul and linear on float16/bfloat16 operands with long inner dims (64 to 512,
    positive values): PyTorch's result is the float32 product (accumulated in float32, as
    tensor cores do) rounded once, so it must match at assert_close's tolerance; one that
    accumulated in low precision drifts by several units of rounding."""
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    rng = np.random.default_rng(seed)
    n, k, m = data.draw(st.integers(1, 5)), data.draw(st.integers(64, 512)), data.draw(st.integers(1, 5))
    low = oracle.NUMPY_DTYPES[dtype]
    a = rng.uniform(0, 1, (n, k)).astype(low)
    b = rng.uniform(0, 1, (k, m) if call == "tt.matmul" else (m, k)).astype(low)
    op = next(o for o in OPS if o.name == ("matmul" if call == "tt.matmul" else "linear"))
    sample = Sample((T(a), T(b)))
    grads = ops_oracle.grad_outputs(op, oracle.run(op, sample)["outputs"], rng)
    expected = oracle.run(op, sample, grads)
    got = submission.call("precision.low_precision_op", call, to_wire(list(sample.args)), {}, grads)
    conform(got, {"outputs": [Kind(np.ndarray)], "grads": [Kind(None, np.ndarray)] * 2},
            what="precision.low_precision_op")
    case = describe(sample)
    # the inputs from the same seeded generator (hundreds of values each)
    repro = reproducer(call, sample, grads, setup=(f"rng = np.random.default_rng({seed})",),
                       values={"x": f"rng.uniform(0, 1, {a.shape})",
                               "y": f"rng.uniform(0, 1, {b.shape})"})
    assert_close(got["outputs"][0], expected["outputs"][0], what=f"{call}: output", case=case,
                 reproducer=repro)
    for name, g, e in zip(("a", "b"), got["grads"], expected["grads"], strict=True):
        assert_close(g, e, what=f"{call}: gradient of {name}", case=case, reproducer=repro)


@task("4.1")
@settings(max_examples=examples(25))
@given(op=st.sampled_from(["add", "sub", "mul", "div", "pow"]), dtype=st.sampled_from(LOW),
       kind=st.sampled_from(["number", "float32", "float64"]), scalar_first=st.booleans(),
       data=st.data())
def test_scalar_operand(submission, op, dtype, kind, scalar_first, data):
    """A float16/bfloat16 tensor with a scalar: a Python number or a zero-dim float32 or
    float64 tensor. The result stays in the tensor's dtype, but PyTorch computes in float32
    with the scalar's own value: ``x * 65536.0`` with x = 0.001 in float16 is 65.56 (not
    0.001 * inf), ``x - 65536.0`` with x = 1000 is -64536; then rounds once. (Compared by
    the low-precision rule: ``2.0 / x`` is ``x.reciprocal() * 2.0`` in PyTorch, which
    rounds twice.)"""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    low = oracle.NUMPY_DTYPES[dtype]
    shape = (data.draw(st.integers(1, 6)),)
    if op == "pow":
        x = rng.uniform(0.5, 2.0, shape)
        scalar = data.draw(st.sampled_from([2.0, 0.5, 3.0, -1.0, 1.7]))
    else:
        x = rng.choice([0.001, 0.01, 1000.0, 1.5, -0.003, 40000.0], shape) * rng.uniform(0.9, 1.1, shape)
        scalar = data.draw(st.sampled_from([65536.0, 1e5, -70000.0, 0.1, 3.3, 1e-3, 1e-6]))
    x = x.astype(low)
    g = rng.uniform(-1, 1, shape).astype(low)
    got = submission.call("precision.scalar_operand", op, x, dtype, scalar, kind, scalar_first, g)
    conform(got, {"output": OBSERVED, "grad": Kind(None, dict)}, what="precision.scalar_operand")
    fn = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
          "pow": torch.pow}[op]
    leaf = oracle.torch_of(x).requires_grad_(True)
    s = scalar if kind == "number" else torch.tensor(scalar, dtype=TORCH[kind])
    out = fn(s, leaf) if scalar_first and kind != "number" else (
        _reverse(op, scalar, leaf) if scalar_first else fn(leaf, s))
    out.backward(oracle.torch_of(g))
    wide_leaf = torch.tensor(x.astype(np.float32), requires_grad=True)
    wide_s = scalar if kind == "number" else torch.tensor(scalar, dtype=TORCH[kind]).float()
    wide = _reverse(op, wide_s, wide_leaf) if scalar_first else fn(wide_leaf, wide_s)
    wide.backward(torch.tensor(g.astype(np.float32)))
    symbol = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**"}[op]
    s_src = repr(scalar) if kind == "number" else f"tt.tensor({scalar!r}, dtype=tt.{kind})"
    expr = f"{s_src} {symbol} x" if scalar_first else f"x {symbol} {s_src}"
    repro = (f"import numpy as np\nimport tinytrain as tt\nx = tt.tensor(np.array({values_source(x)}), "
             f"dtype=tt.{dtype}, requires_grad=True)\ny = {expr}\nprint(y)")
    case = f"y = {expr}, x: {dtype}{list(shape)}"
    assert_low_precision_close(got["output"]["value"], oracle.numpy_of(out),
                               _rounded(wide, low), what=f"{expr}: output", case=case,
                               reproducer=repro)
    assert got["grad"] is not None, f"{expr}: x received no gradient\n  case: {case}"
    conform(got["grad"], OBSERVED, what="precision.scalar_operand['grad']")
    assert_low_precision_close(got["grad"]["value"], oracle.numpy_of(leaf.grad),
                               _rounded(wide_leaf.grad, low), what=f"{expr}: x.grad",
                               gradient=True, case=case, reproducer=repro)


# (op, scalar, scalar_first): the scalar is outside float32's range, so float32 opmath
# makes it inf or 0 (0 * inf, 0 / 0 and 1e-50 / 0 are NaN in PyTorch); in float64 it is not.
BEYOND_FLOAT32 = [("mul", 1e50, False), ("mul", 1e50, True), ("div", 1e-50, False),
                  ("div", 1e-50, True)]


@task("4.1")
@pytest.mark.parametrize("dtype", LOW)
def test_scalar_operand_is_rounded_to_float32(submission, dtype):
    """Opmath is float32, not float64: the scalar (a Python number or a zero-dim float64
    tensor) is rounded to float32 before the op, as PyTorch does. ``x * 1e50`` is NaN at
    x = 0 (0 * inf), ``x / 1e-50`` too (0 / 0), ``1e-50 / x`` is 0 at x = 0.01. The
    results are 0, inf or NaN: compared exactly."""
    low = oracle.NUMPY_DTYPES[dtype]
    x = np.array([0.0, 0.01, 0.5, -2.0]).astype(low)
    g = np.ones(x.shape, low)
    cases = BEYOND_FLOAT32
    if grading_seed():  # the same edges (0 and 0.01 among x), other values and scalars
        rng = case_rng(0, "4.1 scalar beyond float32", dtype)
        x = rng.permutation([0.0, 0.01, rng.uniform(0.1, 1), -rng.uniform(1, 4)]).astype(low)
        g = rng.uniform(0.5, 2, x.shape).astype(low)
        cases = [(op, float(10.0 ** (rng.integers(40, 300) * (1 if s > 1 else -1))), first)
                 for op, s, first in BEYOND_FLOAT32]
    for op, scalar, scalar_first in cases:
        for kind in ("number", "float64"):
            got = submission.call("precision.scalar_operand", op, x, dtype, scalar, kind,
                                  scalar_first, g)
            conform(got, {"output": OBSERVED, "grad": Kind(None, dict)},
                    what="precision.scalar_operand")
            fn = {"mul": torch.mul, "div": torch.div}[op]
            leaf = oracle.torch_of(x)
            s = scalar if kind == "number" else torch.tensor(scalar, dtype=torch.float64)
            out = _reverse(op, s, leaf) if scalar_first else fn(leaf, s)
            symbol = {"mul": "*", "div": "/"}[op]
            s_src = repr(scalar) if kind == "number" else f"tt.tensor({scalar!r}, dtype=tt.float64)"
            expr = f"{s_src} {symbol} x" if scalar_first else f"x {symbol} {s_src}"
            repro = (f"import numpy as np\nimport tinytrain as tt\nx = tt.tensor(np.array("
                     f"{values_source(x)}), dtype=tt.{dtype})\nprint({expr})")
            assert_close(got["output"]["value"], oracle.numpy_of(out), rtol=0, atol=0,
                         what=f"{expr}: output", case=f"y = {expr}, x: {dtype}{list(x.shape)}",
                         reproducer=repro)


def _rounded(t: torch.Tensor, low: np.dtype) -> np.ndarray:
    with np.errstate(over="ignore"):
        return t.detach().numpy().astype(low)


def _reverse(op: str, scalar: float, leaf: torch.Tensor) -> torch.Tensor:
    """``scalar <op> leaf`` for a Python number, as Python evaluates it in torch."""
    return {"add": lambda: scalar + leaf, "sub": lambda: scalar - leaf,
            "mul": lambda: scalar * leaf, "div": lambda: scalar / leaf,
            "pow": lambda: scalar ** leaf}[op]()


@task("4.1")
@settings(max_examples=examples(20))
@given(dtype=st.sampled_from(LOW), data=st.data())
def test_overflow_and_underflow(submission, dtype, data):
    """``loss = sum(x.to(dtype) * c) * k`` (the graders' own mul, sum and scale; your cast
    and Function.apply): near float16's maximum the forward overflows to inf in float16
    but not in bfloat16, and x.grad = k * c, formed in the low dtype, flushes to zero in
    float16 where it falls below 2**-24 but survives in bfloat16 (float32's exponent
    range): why float16 training needs loss scaling."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    n = data.draw(st.integers(1, 6))
    x = rng.uniform(0.5, 2, n).astype(np.float32)
    big = data.draw(st.booleans(), label="large values")
    c = (10.0 ** rng.uniform(3.5, 4.5, n) if big else 10.0 ** rng.uniform(-5, -2, n))
    c = c.astype(oracle.NUMPY_DTYPES[dtype])
    k = float(10.0 ** rng.uniform(-1, 1.5) if big else 10.0 ** rng.uniform(-6, -2))
    got = submission.call("precision.underflow", x, c, k, dtype)
    conform(got, {"loss": OBSERVED, "grad": Kind(None, dict)}, what="precision.underflow")
    leaf = torch.tensor(x, requires_grad=True)
    y = leaf.to(TORCH[dtype])
    loss = (y * oracle.torch_of(c)).sum() * k
    loss.backward()
    repro = (f"import numpy as np\nimport tinytrain as tt\nx = tt.tensor(np.array({values_source(x)}), "
             f"requires_grad=True)\nc = tt.tensor(np.array({values_source(c.astype(np.float64))}), "
             f"dtype=tt.{dtype})\nloss = (x.to(tt.{dtype}) * c).sum() * {k!r}\nloss.backward()\n"
             "print(loss, x.grad)")
    case = f"x: float32[{n}], c: {dtype}[{n}], k = {k:g}"
    assert_close(got["loss"]["value"], oracle.numpy_of(loss), what="loss", case=case,
                 reproducer=repro)
    assert got["grad"] is not None, f"x received no gradient\n  case: {case}"
    conform(got["grad"], OBSERVED, what="precision.underflow['grad']")
    assert_close(got["grad"]["value"], oracle.numpy_of(leaf.grad), what="x.grad (float32; "
                 f"its values passed through {dtype})", rtol=oracle.EPS[dtype], atol=0.0,
                 case=case, reproducer=repro)


def _ops_params() -> list[Any]:
    # Assignment 2's operators only: the op table also holds assignment 5's layer operators
    # (embedding, layer_norm, dropout), whose forward is assignment-5 homework; with them
    # this task would depend on assignment 5 (their autocast categories ship as given code).
    return [pytest.param(op, id=op.name, marks=task("4.1")) for op in OPS
            if op.task.split(".")[0] == "2"]


@pytest.mark.parametrize("op", _ops_params())
@settings(max_examples=examples(4))
@given(data=st.data(), dtype=st.sampled_from(LOW))
def test_low_precision_op(submission, op: OpInfo, data, dtype):
    """The op on float16/bfloat16 inputs, through every step a student's code takes
    (operators, Function.apply, the engine): output dtypes are PyTorch's, and outputs and
    gradients are within the low-precision rule (graders.checks.precision) of PyTorch's
    values in the same dtype."""
    d = Draw(data)
    sample = oracle.in_dtype(op.sample(d, np.dtype(np.float32)), dtype)
    first = oracle.run(op, sample)
    grads = ops_oracle.grad_outputs(op, first["outputs"], d.rng) if op.differentiable else None
    expected = oracle.run(op, sample, grads) if grads is not None else first
    reference = oracle.float32_reference(op, sample, grads, dtype)
    got = submission.call("precision.low_precision_op", op.calls[0], list(to_wire(sample.args)),
                          to_wire(sample.kwargs), grads)
    template = {"outputs": ListOf(Kind(np.ndarray))}
    if grads is not None:
        template["grads"] = [Kind(None, np.ndarray)] * len(sample.differentiable())
    conform(got, template, what="precision.low_precision_op")
    case = describe(sample)
    assert_equal(len(got["outputs"]), len(expected["outputs"]),
                 what=f"{op.name}: number of outputs", case=case)
    for k, (g, e, f) in enumerate(zip(got["outputs"], expected["outputs"],
                                      reference["outputs"], strict=True)):
        assert_low_precision_close(g, e, f, what=f"{op.name}: output {k} ({dtype} inputs)",
                                   case=case, reproducer=reproducer(op.calls[0], sample))
    if grads is None:
        return
    names = tensor_names(sample)
    repro = reproducer(op.calls[0], sample, grads, len(expected["outputs"]))
    for t, g, e, f in zip(sample.differentiable(), got["grads"], expected["grads"],
                          reference["grads"], strict=True):
        assert_low_precision_close(g, e, f, what=f"{op.name}: gradient of {names[id(t)]} "
                                   f"({dtype})", gradient=True, case=case, reproducer=repro)
