"""The operator checks generated from the op table (``graders.optable``).

``op_checks(assignment)`` makes the test functions for the ops whose task belongs to that
assignment; a suite module of the assignment exposes them (``globals().update(...)``), so
each assignment's ops are collected with its own suite (assignment 2's operators in
``hw2_ops``, the layer operators of assignment 5 in ``hw5_training``).

Per operator: forward values, gradients against torch's autograd, gradients against
central differences, and where the table says so: subgradient rules at kinks and ties,
stability for large logits, view semantics and error cases. Test ids name the operator,
e.g. ``test_backward[maximum]`` or ``test_subgradient[relu-zero]``.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from graders.checks import (
    assert_close,
    assert_conforms,
    assert_equal,
    assert_raises_like,
    running_example,
)
from graders.checks.compare import tolerance
from graders.optable import OPS
from graders.optable.spec import (
    OpInfo,
    axes_note,
    describe,
    reproducer,
    tensor_names,
    to_wire,
)
from graders.oracle import ops as oracle
from graders.strategies.ops import DTYPES, LOW_PRECISION, Draw, Sample, is_float, layouts_for
from graders.suites._support import examples, task

GRADCHECK_TOLERANCE = (1e-3, 1e-5)  # torch.autograd.gradcheck's (rtol, atol)
# float16 and bfloat16 gradients: four ulps (eps 2**-10 and 2**-7) relative, and one ulp
# of the operands' scale (about 1) absolute. Correct backward formulas round their
# intermediates differently (torch's CPU formulas round every step; tinytrain's opmath
# computes in float32 from the saved low-precision result; a view's backward sums in the
# gradient's dtype), and a sum of low-precision terms that cancels is off by an ulp of
# its terms, not of its result: torch.testing's defaults (about one ulp) fail correct code.
LOW_PRECISION_GRAD_TOLERANCE = {"float16": (4e-3, 1e-3), "bfloat16": (3.2e-2, 8e-3)}
# float64 outputs and gradients (the dtype axis): torch computes them in float64, so a
# value rounded through float32 on the way (a float32 buffer, a float32 scalar) is wrong.
# torch.testing's float64 default (1e-7, 1e-7) is above float32's rounding (eps 2**-24
# relative, 6e-8) and lets it pass; 1e-9 sees it on values near 1, and leaves correct
# float64 code (a different order of operations: a few eps, 1e-15, amplified by
# cancellation on logits around 1e4 to about 1e-12) far inside.
FLOAT64_TOLERANCE = (1e-9, 1e-9)


def _tolerance(op: OpInfo, dtype: np.dtype) -> tuple[float | None, float | None]:
    """The op table's tolerance for a result of ``dtype``, else FLOAT64_TOLERANCE for
    float64 (None: torch.testing's default for the dtype)."""
    rtol, atol = op.tolerance(dtype)
    if rtol is None and atol is None and np.dtype(dtype) == np.float64:
        return FLOAT64_TOLERANCE
    return rtol, atol


def _params(ops: list[OpInfo]) -> list[Any]:
    return [pytest.param(op, id=op.name, marks=task(op.task)) for op in ops]


def _cases(ops: list[OpInfo], attribute: str) -> list[Any]:
    return [pytest.param(op, case, id=f"{op.name}-{case.name}", marks=task(op.task))
            for op in ops for case in getattr(op, attribute)]


# Helpers that belong to one task and that operators of other tasks may call (matmul's
# backward reduces broadcast batch dims with 2.1's sum_to_shape): while an operator of
# another task runs, the probe puts its own copy in their place, so a 2.1 mistake costs
# 2.1 only.
# Likewise a float16 or bfloat16 call computes in float32 through Function.apply's opmath,
# task 4.1's forward_in_float32: the low-precision samples of other tasks' operators run
# with the probes' copy of it.
HELPER_TASKS = {"sum_to_shape": "2.1", "forward_in_float32": "4.1"}


def _call(submission: Any, probe: str, op: OpInfo, call: str, sample: Sample,
          *extra: Any, grad_layout: str = "contiguous") -> Any:
    own = [name for name, owner in HELPER_TASKS.items() if owner != op.task]
    # the backward probe's first extra argument is the incoming gradient of each output
    grads_out = extra[0] if probe == "backward" else None
    more = {"grad_layout": grad_layout} if probe == "backward" else {}
    with running_example(lambda: describe(sample), lambda: reproducer(
            call, sample, grads_out, len(grads_out) if grads_out else 1,
            grad_layout=grad_layout)):
        return submission.call(f"ops.{probe}", call, list(to_wire(sample.args)),
                               to_wire(sample.kwargs), *extra, own_helpers=own, **more)


def _check_outputs(op: OpInfo, call: str, sample: Sample, got: list[np.ndarray],
                   expected: list[np.ndarray], note: str = "") -> None:
    case = describe(sample)
    repro = reproducer(call, sample)
    assert_equal(len(got) if isinstance(got, list) else got, len(expected),
                 what=f"{op.name}: number of outputs", case=case, reproducer=repro)
    assert_conforms(got, [None] * len(expected), what=f"{op.name}: the outputs")
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        rtol, atol = _tolerance(op, e.dtype)
        label = "output" if len(expected) == 1 else f"output {k}"
        assert_close(g, e, what=f"{op.name}: {label}{note}", rtol=rtol, atol=atol, case=case,
                     reproducer=repro)


def _check_grads(op: OpInfo, sample: Sample, got: list[Any], expected: list[np.ndarray],
                 grads_out: list[np.ndarray | None], n_outputs: int, note: str = "",
                 tolerance: tuple[float, float] | None = None,
                 against: str = "PyTorch", grad_layout: str = "contiguous") -> None:
    names = tensor_names(sample)
    case = describe(sample)
    repro = reproducer(op.calls[0], sample, grads_out, n_outputs, grad_layout=grad_layout)
    # one entry per input gradient (each then compared by assert_close, which also
    # checks it is an array of the right shape)
    assert_conforms(got, [None] * len(expected), what=f"{op.name}: the input gradients")
    for t, g, e in zip(sample.differentiable(), got, expected, strict=True):
        rtol, atol = tolerance or _tolerance(op, e.dtype)
        if rtol is None and atol is None:
            rtol, atol = LOW_PRECISION_GRAD_TOLERANCE.get(e.dtype.name, (None, None))
        assert_close(g, e, what=f"{op.name}: gradient of {names[id(t)]}{note}", rtol=rtol,
                     atol=atol, case=case, reproducer=repro, against=against)


def _raises(exc_type: str | None, contains: tuple[str, ...]) -> str:
    """What PyTorch raises, for a reproducer's comment."""
    if exc_type is None:
        return "nothing"
    return exc_type + "".join(f" ...{c}..." for c in contains)


def _forward_and_grads(submission: Any, op: OpInfo, sample: Sample, d: Draw,
                       grad_values: tuple[float, ...] | None = None,
                       grad_layout: str = "contiguous") -> tuple[Any, ...]:
    """The submission's outputs and gradients, and torch's, for random incoming grads
    (given to the submission in ``grad_layout``)."""
    return _backward_along_axes(submission, op, sample, d, grad_values, grad_layout)[:4]


def _backward_along_axes(submission: Any, op: OpInfo, sample: Sample, d: Draw,
                         grad_values: tuple[float, ...] | None = None,
                         grad_layout: str | None = None,
                         outputs: list[np.ndarray] | None = None) -> tuple[Any, ...]:
    """``_forward_and_grads``, and the incoming gradient's layout: drawn for the
    differentiable output's shape when ``grad_layout`` is None (``outputs``: torch's
    forward of ``sample``, computed when not given)."""
    outputs = oracle.forward(op, sample) if outputs is None else outputs
    grads_out = oracle.grad_outputs(op, outputs, d.rng, grad_values)
    if grad_layout is None:
        grad_layout = d.pick(layouts_for(next(g for g in grads_out if g is not None).shape))
    expected_out, expected = oracle.backward(op, sample, grads_out)
    got = _call(submission, "backward", op, op.calls[0], sample, grads_out,
                grad_layout=grad_layout)
    assert_conforms(got, {"outputs": None, "grads": None, "unchanged": {"inputs": True}},
                    what=f"{op.name}: the observation")
    if got.get("path") == "isolated":  # the probe called the Function's backward itself
        assert_conforms(got["unchanged"], {SECOND_BACKWARD: True, "incoming gradients": True},
                        what=f"{op.name}: the ownership observation")
    _check_ownership(op, sample, got["unchanged"], grads_out, grad_layout)
    if any(t.value.dtype in LOW_PRECISION for t in sample.tensors()):
        opmath = oracle.backward_opmath(op, sample, grads_out)
        expected = [_either(op, g, native, wide) for g, native, wide
                    in zip(got["grads"], expected, opmath, strict=False)] + expected[len(opmath):]
    return got, expected_out, expected, grads_out, grad_layout


# The incoming gradient's layouts, in the order ``_grad_layouts`` gives them out: those
# that need the most of a shape first (transposed needs two dims), contiguous last (the
# other checks give contiguous gradients).
GRAD_LAYOUT_ROUND = ("transposed", "flipped", "sliced", "offset", "contiguous")
# how many more samples of the op are drawn to find an output that admits a layout of
# the round that the test's own sample does not (a 0-d loss admits only contiguous)
GRAD_LAYOUT_TRIES = 8
# per op: the round's layouts not given yet, and per sample seen: its layout and the
# layouts looked for in another sample
_grad_layout_state: dict[str, tuple[list[str], dict[bytes, tuple[str, tuple[str, ...]]],
                                    set[str]]] = {}


def _sample_key(sample: Sample) -> bytes:
    return hashlib.sha1(pickle.dumps((to_wire(sample.args), to_wire(sample.kwargs)))).digest()


def _admitted(op: OpInfo, sample: Sample, outputs: list[np.ndarray] | None = None
              ) -> list[str]:
    """The layouts the incoming gradient of ``sample``'s differentiable output (torch's
    ``outputs`` of it, computed when not given) can take."""
    outputs = oracle.forward(op, sample) if outputs is None else outputs
    shape = outputs[op.grad_output].shape
    # only where the layout differs from contiguous in more than its name: transposing
    # needs two dims longer than 1 (a (1, 4) array reads the same either way), a sliced
    # last dim needs more than one element
    real = {"transposed": sum(n > 1 for n in shape) >= 2, "sliced": bool(shape) and shape[-1] > 1}
    return [name for name in layouts_for(shape) if real.get(name, True)]


def _grad_layouts(op: OpInfo, sample: Sample, admitted: list[str],
                  draw: Callable[[], Sample]) -> list[tuple[Sample, str]]:
    """The backward checks of one test example of ``op``: its sample, and the layout of
    its incoming gradient, enumerated, not drawn. Each op goes through
    GRAD_LAYOUT_ROUND over its examples: a new sample takes the first layout of the
    round its output admits (``admitted``), which then leaves the round, and an empty
    round starts again. When it admits none of those left, up to GRAD_LAYOUT_TRIES more
    samples (``draw``) are drawn for one that does, and checked too, as long as some
    layout was never given (with none found, the round's other layouts are given up
    until the next round). So every layout that the op's outputs can take is given to
    its backward, by construction, in a handful of examples. A sample seen before
    (Hypothesis replays a failing example) gets the same layouts and the same extra
    sample, so a failure replays as it happened."""
    left, seen, given = _grad_layout_state.setdefault(op.name, ([], {}, set()))
    key = _sample_key(sample)
    first = key not in seen
    if first:
        if not left:
            left += GRAD_LAYOUT_ROUND
        layout = next((name for name in left if name in admitted), None)
        wanted: tuple[str, ...] = ()
        if layout is None:  # the round's layouts need more than this output has
            layout = admitted[len(seen) % len(admitted)]
            wanted = tuple(name for name in left if name not in given)
            if not wanted:
                left.clear()
        else:
            left.remove(layout)
        given.add(layout)
        seen[key] = (layout, wanted)
    layout, wanted = seen[key]
    checks = [(sample, layout)]
    for _ in range(GRAD_LAYOUT_TRIES if wanted else 0):
        other = draw()
        found = next((name for name in wanted if name in _admitted(op, other)), None)
        if found is not None:
            checks.append((other, found))
            if first:
                left.remove(found)
                given.add(found)
            break
    else:
        if wanted and first:
            left.clear()
    return checks


# per op: the inputs already checked not requiring grad, and per sample seen, the one it
# checks so (None: none)
_frozen_state: dict[str, tuple[set[int], dict[bytes, int | None]]] = {}


def _freeze_one(op: OpInfo, sample: Sample) -> int | None:
    """The inputs that do not require grad (``needs_input_grad`` False for them), an axis
    enumerated, not drawn: the first samples of each op with two or more differentiable
    inputs are checked once more with one of them not requiring grad, each input in turn
    until every one has been (torch gives it no gradient; the backward must still give
    the others theirs, and may skip the one not needed). The other checks keep every
    input requiring grad. Returns the index of that input among the sample's
    differentiable ones, or None. A sample seen before gets the same choice."""
    count = len(sample.differentiable())
    if count < 2:
        return None
    done, seen = _frozen_state.setdefault(op.name, (set(), {}))
    key = _sample_key(sample)
    if key not in seen:
        choice = next((i for i in range(count) if i not in done), None)
        if choice is not None:
            done.add(choice)
        seen[key] = choice
    return seen[key]


# the probe's key (graders.probes.ops._direct_backward) for whether backward, called again
# on the same ctx with the same incoming gradients, gave the same gradients
SECOND_BACKWARD = "arrays the graph keeps (a second backward must give the same gradients)"


def _check_ownership(op: OpInfo, sample: Sample, unchanged: dict[str, Any],
                     grads_out: list[np.ndarray | None], grad_layout: str) -> None:
    """The ownership axis: backward must not write into the arrays it is given or that
    the graph keeps (the incoming gradients, the inputs, the outputs it saved), as
    torch's never does: ``grad /= n`` changes the caller's gradient."""
    for what, same in unchanged.items():
        assert_equal(same, True, what=f"{op.name}: are the {what} left as they were after "
                     f"backward (ownership: backward must not write into arrays the caller "
                     f"or the graph keeps; compute a new array)",
                     case=describe(sample),
                     reproducer=reproducer(op.calls[0], sample, grads_out, len(grads_out),
                                           grad_layout=grad_layout))


def _either(op: OpInfo, got: Any, native: np.ndarray, wide: np.ndarray) -> np.ndarray:
    """For a float16 or bfloat16 gradient: torch's own (its CPU backward formulas round
    every intermediate step, and use the saved low-precision result) or torch's float32
    gradient of the same values rounded once (opmath, as tinytrain computes): correct
    implementations land near one or the other, a few ulps apart, more than the dtype's
    tolerance. Element by element, the one ``got`` is closer to; the message then names
    torch's own where neither is close."""
    if not isinstance(got, np.ndarray) or got.shape != native.shape or wide.shape != native.shape:
        return native
    rtol, atol = op.tolerance(native.dtype)
    default = LOW_PRECISION_GRAD_TOLERANCE.get(native.dtype.name, tolerance(native.dtype.name))
    rtol, atol = default[0] if rtol is None else rtol, default[1] if atol is None else atol
    g, w = got.astype(np.float64), wide.astype(np.float64)
    with np.errstate(invalid="ignore"):
        near_wide = ((np.abs(g - w) <= atol + rtol * np.abs(w)) | (g == w)
                     | (np.isnan(g) & np.isnan(w)))
    return np.where(near_wide, wide, native).astype(native.dtype)


SPECIAL_FRACTION = 3  # one forward sample in this many gets special values


def _mix_dtypes(d: Draw, op: OpInfo, sample: Sample) -> None:
    """Sometimes give the floating point tensor arguments different dtypes (in place):
    the result dtype must follow torch's type promotion. Never where the promoted result
    is float16 or bfloat16 (a wider operand then computes through task 4.1's opmath in
    ``apply_binary``), and never float16 with bfloat16 (their promotion is task 4.1's)."""
    floats = [t for t in sample.tensors() if is_float(t.value.dtype)]
    if "mixed_dtypes" in op.exempt or len(floats) < 2 or d.integer(0, 2):
        return
    original = [t.value for t in floats]
    for t in floats:
        if d.flag():
            t.value = t.value.astype(np.float64).astype(d.pick(op.dtypes))
    names = {t.value.dtype.name for t in floats}
    if (len(names) > 1 and {"float16", "bfloat16"} <= names) or (
            len(names) > 1 and oracle.result_dtype(op, sample).name in ("float16", "bfloat16")):
        for t, value in zip(floats, original, strict=True):
            t.value = value


def _draw_forward_sample(d: Draw, op: OpInfo) -> tuple[Sample, str | None]:
    """A forward sample along every axis: a dtype from the op's dtypes, maybe mixed
    dtypes, and in one sample in SPECIAL_FRACTION special values (the kind, or None)."""
    sample = op.sample(d, d.pick(op.dtypes))
    _mix_dtypes(d, op, sample)
    special = None
    if op.specials and d.integer(0, SPECIAL_FRACTION - 1) == 0:
        special = d.special_values(sample, op.specials)
    return sample, special


@pytest.fixture
def op_enumeration(op: OpInfo) -> None:
    """Each op's backward test enumerates its axes (``_grad_layouts``, ``_freeze_one``)
    from the start of their rounds, whatever ran before in this process (an earlier
    grading, a forked one's parent): a grade never depends on what was graded before."""
    _grad_layout_state.pop(op.name, None)
    _frozen_state.pop(op.name, None)


def op_checks(assignment: str) -> dict[str, Callable[..., Any]]:
    """The generated test functions (by name) for the ops of ``assignment``; a check with
    no op to run (no kinks among these ops, say) is left out."""
    ops = [op for op in OPS if op.task.split(".")[0] == assignment]
    differentiable = [op for op in ops if op.differentiable]

    @pytest.mark.parametrize("op", _params(ops))
    @settings(max_examples=examples(12))
    @given(data=st.data())
    def test_forward(submission, op, data):
        """Forward values and dtypes match torch, through every tinytrain spelling of the op,
        along every axis: float16, bfloat16, float32 and float64 inputs, mixed input dtypes
        (torch's type promotion), every layout for each tensor argument, and in some
        samples NaN, +-inf, -0.0 or a slice of all -inf (NaN where torch gives NaN)."""
        d = Draw(data)
        sample, special = _draw_forward_sample(d, op)
        call = d.pick(op.calls)
        got = _call(submission, "forward", op, call, sample)
        assert_conforms(got, {"outputs": None}, what=f"{op.name}: the observation")
        _check_outputs(op, call, sample, got["outputs"], oracle.forward(op, sample),
                       axes_note(sample, special))

    @pytest.mark.parametrize("op", _params(differentiable))
    @settings(max_examples=examples(15))
    @given(data=st.data())
    def test_backward(submission, op, op_enumeration, data):
        """Every input's gradient matches torch's autograd (broadcasting, 0-d, empty and
        non-contiguous inputs, float16, bfloat16, float32 and float64, and in some samples
        NaN, +-inf or -0.0 inputs: NaN where torch's gradient is NaN), for incoming
        gradients in every layout the op's output can take, and once with each input in
        turn not requiring grad; backward writes into none of the arrays it is given or
        keeps, and a second backward gives the same gradients."""
        d = Draw(data)
        sample = op.sample(d, d.pick(op.dtypes))
        special = None
        if op.grad_specials and d.integer(0, SPECIAL_FRACTION - 1) == 0:
            special = d.special_values(sample, op.grad_specials)
        freeze = _freeze_one(op, sample)
        outputs = oracle.forward(op, sample)
        checks = _grad_layouts(op, sample, _admitted(op, sample, outputs),
                               lambda: op.sample(d, d.pick(op.dtypes)))
        for k, (checked, layout) in enumerate(checks):
            got, expected_out, expected, grads_out, grad_layout = _backward_along_axes(
                submission, op, checked, d, grad_layout=layout,
                outputs=outputs if k == 0 else None)
            note = axes_note(checked, special if k == 0 else None, grad_layout=grad_layout)
            _check_grads(op, checked, got["grads"], expected, grads_out, len(expected_out),
                         note, grad_layout=grad_layout)
        if freeze is not None:  # once more, with that input not requiring grad
            frozen = sample.differentiable()[freeze]
            frozen.grad = False
            got, expected_out, expected, grads_out, grad_layout = _backward_along_axes(
                submission, op, sample, d, grad_layout=checks[0][1], outputs=outputs)
            note = axes_note(sample, special, grad_layout=grad_layout)
            note += (", " if note else " ") + (
                f"with {tensor_names(sample)[id(frozen)]} not requiring grad")
            _check_grads(op, sample, got["grads"], expected, grads_out, len(expected_out),
                         note, grad_layout=grad_layout)

    @pytest.mark.parametrize("op", _params(differentiable))
    @settings(max_examples=examples(6))
    @given(data=st.data())
    def test_gradcheck(submission, op, data):
        """In float64 away from kinks, every gradient matches central differences of the
        forward (computed with torch's forward, independently of torch's autograd), and
        torch's autograd at float64 precision (the float64 axis in every example, not only
        where a float64 sample is drawn)."""
        d = Draw(data)
        sample = op.sample(d, np.dtype(np.float64))
        assume(op.near_kink is None or not op.near_kink(sample))
        outputs = oracle.forward(op, sample)
        assume(all(np.isfinite(o).all() for o in outputs if o.dtype.kind == "f"))
        grads_out = oracle.grad_outputs(op, outputs, d.rng)
        estimate = oracle.finite_differences(op, sample, grads_out)
        got = _call(submission, "backward", op, op.calls[0], sample, grads_out)
        assert_conforms(got, {"grads": None}, what=f"{op.name}: the observation")
        _check_grads(op, sample, got["grads"], estimate, grads_out, len(outputs),
                     tolerance=GRADCHECK_TOLERANCE, against="central differences (eps 1e-6)")
        _, expected = oracle.backward(op, sample, grads_out)
        _check_grads(op, sample, got["grads"], expected, grads_out, len(outputs),
                     " in float64")

    @pytest.mark.parametrize(("op", "kink"), _cases(ops, "kinks"))
    @settings(max_examples=examples(10))
    @given(data=st.data())
    def test_subgradient(submission, op, kink, data):
        """At kinks and ties (hit on purpose), outputs and gradients are torch's."""
        d = Draw(data)
        sample = kink.sample(d, d.pick(DTYPES))
        got, expected_out, expected, grads_out = _forward_and_grads(
            submission, op, sample, d, kink.grad_values)
        note = f" at a kink ({kink.rule})"
        _check_outputs(op, op.calls[0], sample, got["outputs"], expected_out, note)
        _check_grads(op, sample, got["grads"], expected, grads_out, len(expected_out), note)

    @pytest.mark.parametrize("op", _params([op for op in ops if op.stability]))
    @settings(max_examples=examples(8))
    @given(data=st.data())
    def test_stability(submission, op, data):
        """With logits around +-1e4 (exp overflows without care), some of them 1e3 below
        the rest of their slice (their softmax underflows to 0, so the log of a softmax
        is -inf), outputs and gradients match torch."""
        d = Draw(data)
        sample = op.stability(d, d.pick(DTYPES))
        got, expected_out, expected, grads_out = _forward_and_grads(submission, op, sample, d)
        note = (" with logits around +-1e4, some 1e3 below the rest (subtract the max before "
                "exp, and never take the log of a softmax that underflowed)")
        _check_outputs(op, op.calls[0], sample, got["outputs"], expected_out, note)
        _check_grads(op, sample, got["grads"], expected, grads_out, len(expected_out), note)

    @pytest.mark.parametrize("op", _params([op for op in ops if op.view]))
    @settings(max_examples=examples(5))
    @given(data=st.data())
    def test_view(submission, op, data):
        """On a contiguous input the output is a view: it shares storage and the version
        counter with its input, and its _base is the input (the Function's forward must
        return a NumPy view, not a copy)."""
        d = Draw(data)
        sample = op.sample(d, d.pick(op.dtypes))
        assume(oracle.forward(op, sample)[0].size > 0)
        got = _call(submission, "view", op, op.calls[0], sample)
        assert_conforms(got, {"shares_storage": True, "shares_version_counter": True,
                              "base_is_input": True}, what=f"{op.name}: the observation")
        assert_equal(got, {"shares_storage": True, "shares_version_counter": True,
                           "base_is_input": True},
                     what=f"{op.name}: is the output a view of its (contiguous) input",
                     case=describe(sample), reproducer=reproducer(op.calls[0], sample,
                                                                  view=True))

    @pytest.mark.parametrize(("op", "error"), _cases(ops, "errors"))
    @settings(max_examples=examples(3))
    @given(data=st.data())
    def test_error(submission, op, error, data):
        """Where torch raises, the submission raises the same exception type and message."""
        d = Draw(data)
        sample = error.sample(d, d.pick(DTYPES))
        got = _call(submission, "raises", op, op.calls[0], sample)
        assert_conforms(got, {"type": None, "message": ""}, what=f"{op.name}: the observation")
        assert_raises_like(got, error.exc_type, what=f"{op.name} ({error.name})",
                           contains=error.contains, case=describe(sample),
                           reproducer=reproducer(op.calls[0], sample,
                                                 raises=_raises(error.exc_type, error.contains)))

    checks = {
        test_forward: ops,
        test_backward: differentiable,
        test_gradcheck: differentiable,
        test_subgradient: _cases(ops, "kinks"),
        test_stability: [op for op in ops if op.stability],
        test_view: [op for op in ops if op.view],
        test_error: _cases(ops, "errors"),
    }
    found: dict[str, Callable[..., Any]] = {fn.__name__: fn for fn, cases in checks.items()
                                            if cases}
    if differentiable:
        found["op_enumeration"] = op_enumeration  # test_backward's fixture
    return found
