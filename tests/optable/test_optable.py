"""The op table is consistent with torch and with itself: its samples are valid torch
calls, its kink strategies hit kinks, its error cases raise in torch, and its
reproducers run on the reference."""

from __future__ import annotations

import contextlib
import io
import sys

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graders import rubric
from graders.optable import OPS
from graders.optable.spec import reproducer
from graders.oracle import ops as oracle
from graders.strategies.ops import DTYPES, Draw

from ..conftest import REFERENCE

FAST = settings(max_examples=10, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))


def test_every_assignment_2_task_has_ops_and_every_op_a_task():
    tasks = {t.id for t in rubric.load().tasks}
    op_tasks = {op.task for op in OPS}
    assert {t for t in tasks if t.startswith("2.")} <= op_tasks, "an operator task has no op"
    assert op_tasks <= tasks, "an op names a task the rubric does not have"


@pytest.mark.parametrize("op", OPS, ids=[op.name for op in OPS])
@FAST
@given(data=st.data())
def test_samples_are_valid_torch_calls(op, data):
    d = Draw(data)
    sample = op.sample(d, d.pick(DTYPES))
    outputs = oracle.forward(op, sample)
    if op.differentiable:
        oracle.backward(op, sample, oracle.grad_outputs(op, outputs, d.rng))
    if op.stability:
        outputs = oracle.forward(op, op.stability(d, d.pick(DTYPES)))
        assert all(np.isfinite(o).all() for o in outputs)


KINKS = [(op, kink) for op in OPS for kink in op.kinks]


@pytest.mark.parametrize(("op", "kink"), KINKS, ids=[f"{o.name}-{k.name}" for o, k in KINKS])
def test_kink_samples_hit_kinks(op, kink):
    """A kink strategy hits the kink (as the op's own near_kink judges) in every sample."""
    if op.near_kink is None:
        pytest.skip("no near_kink predicate (the kink strategy uses exact values)")
    hits = []

    @FAST
    @given(data=st.data())
    def draw(data):
        d = Draw(data)
        hits.append(op.near_kink(kink.sample(d, d.pick(DTYPES))))

    draw()
    assert all(hits), f"{op.name}-{kink.name}: {sum(hits)}/{len(hits)} hits"


ERRORS = [(op, case) for op in OPS for case in op.errors]


@pytest.mark.parametrize(("op", "case"), ERRORS, ids=[f"{o.name}-{c.name}" for o, c in ERRORS])
@FAST
@given(data=st.data())
def test_error_cases_raise_in_torch(op, case, data):
    d = Draw(data)
    with pytest.raises(Exception) as info:
        oracle.forward(op, case.sample(d, d.pick(DTYPES)))
    assert type(info.value).__name__ == case.exc_type
    for fragment in case.contains:
        assert fragment in str(info.value)


@pytest.fixture(scope="module")
def reference_tt():
    sys.path.insert(0, str(REFERENCE))
    try:
        import tinytrain

        yield tinytrain
    finally:
        sys.path.remove(str(REFERENCE))


@pytest.mark.parametrize("op", [op for op in OPS if op.differentiable],
                         ids=[op.name for op in OPS if op.differentiable])
@settings(max_examples=3, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_reproducers_run_on_the_reference(reference_tt, op, data):
    """The snippet shown to students runs and gives torch's gradients."""
    d = Draw(data)
    sample = op.sample(d, d.pick(DTYPES))
    outputs = oracle.forward(op, sample)
    grads_out = oracle.grad_outputs(op, outputs, d.rng)
    _, expected = oracle.backward(op, sample, grads_out)
    code = reproducer(op.calls[0], sample, grads_out, len(outputs))
    names: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(code, "<reproducer>", "exec"), names)
    leaves = [v for v in names.values() if isinstance(v, reference_tt.Tensor) and v.requires_grad
              and v.grad_fn is None]
    assert len(leaves) == len(expected), code
    for leaf, e in zip(leaves, expected, strict=True):
        np.testing.assert_allclose(leaf.grad.data, e, rtol=1e-5, atol=1e-5, err_msg=code)


def test_autocast_categories_follow_the_cuda_policy():
    """Spot checks against torch's dispatcher: ops with an AutocastCUDA kernel are in a
    cast category; ops without one run in their input dtype."""
    has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
    for op, aten in [("matmul", "matmul"), ("linear", "linear"), ("exp", "exp"),
                     ("softmax", "softmax.int"), ("logsumexp", "logsumexp"), ("sum", "sum"),
                     ("mse_loss", "mse_loss"), ("relu", "relu"), ("cat", "cat"),
                     ("mean", "mean"), ("sqrt", "sqrt")]:
        entry = next(o for o in OPS if o.name == op)
        assert has_kernel(f"aten::{aten}", "AutocastCUDA") == (entry.autocast != "none"), op


@pytest.mark.parametrize("op", OPS, ids=[op.name for op in OPS])
@FAST
@given(data=st.data())
def test_samples_along_every_axis_are_valid_torch_calls(op, data):
    """In every dtype the op is drawn in, with mixed dtypes and special values (as the
    forward check draws them), torch computes the op: no exemption is missing."""
    from graders.suites._opchecks import _draw_forward_sample

    d = Draw(data)
    sample, _ = _draw_forward_sample(d, op)
    outputs = oracle.forward(op, sample)
    floats = [t.value.dtype for t in sample.tensors() if t.value.dtype.kind == "f"]
    if floats and len(set(floats)) == 1 and outputs[0].dtype.kind == "f":
        assert outputs[0].dtype == floats[0], "one input dtype: the result keeps it"
