"""Assignment 2: every operator check, generated from the op table (``graders.optable``)
for the ops of assignment 2's tasks; ``graders.suites._opchecks`` says what each check
does. Test ids name the operator, e.g. ``test_backward[maximum]`` or
``test_subgradient[relu-zero]``. Besides them: reshape where no view can give the shape.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from graders.optable import OPS
from graders.strategies.ops import DTYPES, Draw, Sample
from graders.suites._opchecks import _check_grads, _check_outputs, _forward_and_grads, op_checks
from graders.suites._support import examples, task

globals().update(op_checks("2"))

RESHAPE = next(op for op in OPS if op.name == "reshape")


@task("2.5")
@settings(max_examples=examples(6))
@given(data=st.data())
def test_reshape_that_copies(submission, data):
    """reshape of a transposed input (Fortran order, every side >= 2) into a shape that
    merges its dims, which no view can give (the copying path): torch's values and
    gradient."""
    d = Draw(data)
    dtype = d.pick(DTYPES)
    shape = tuple(d.integer(2, 3) for _ in range(d.integer(2, 3)))
    x = d.tensor(d.uniform(shape, dtype), layout="transposed")
    target = d.pick([(-1,)] if len(shape) == 2 else [(-1,), (shape[0], -1), (-1, shape[-1])])
    try:  # the premise: NumPy cannot give this shape as a view of the Fortran-order array
        np.reshape(np.asfortranarray(x.value), target, copy=False)
    except ValueError:
        pass
    else:
        raise AssertionError(f"grader bug: {shape} -> {target} is a view")
    sample = Sample((x, target))
    got, expected_out, expected, grads_out = _forward_and_grads(submission, RESHAPE, sample, d)
    _check_outputs(RESHAPE, RESHAPE.calls[0], sample, got["outputs"], expected_out)
    _check_grads(RESHAPE, sample, got["grads"], expected, grads_out, len(expected_out))
