"""Assignment 6: each task's host functions (NumPy arrays in and out) against torch, and
the kernels they launched: a wrapper that computes with NumPy instead of launching the
task's kernels scores nothing here."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graders.checks import assert_conforms
from graders.harness.errors import SubmissionRaised
from graders.kerneltable import WRAPPERS
from graders.kerneltable.checks import check_values, check_wrapper, need_triton
from graders.strategies.cuda import Seeded, Values, laid
from graders.suites._seed import case_seed
from graders.suites._support import examples, task

PARAMS = [pytest.param(w, id=f"{w.module}.{w.name}", marks=task(w.task)) for w in WRAPPERS]


@pytest.mark.parametrize("info", PARAMS)
def test_wrapper(submission, info):
    """The wrapper's results against torch, the kernels it launched, and its arguments
    unchanged: first with every array argument column-strided, then drawn layouts."""
    need_triton(submission)
    values = Seeded(case_seed(3, "cuda wrapper", info.module, info.name), "strided")
    args, kwargs, expected, description = info.call(values)
    check_wrapper(submission, info, args, kwargs, expected,
                  f"{description} [every array argument column-strided]", values.lines,
                  values.name_of)

    @settings(max_examples=examples(info.examples))
    @given(st.data())
    def drawn(data):
        values = Values(data)
        args, kwargs, expected, description = info.call(values)
        check_wrapper(submission, info, args, kwargs, expected, description, values.lines,
                      values.name_of)

    drawn()


@task("6.6")
def test_adam_step_with_a_strided_state(submission):
    """adam_step updates contiguous float32 state in place, as documented: given
    column-strided views of the parameter and the moments it refuses them (ValueError,
    TypeError) or updates those very views correctly; it never reads the gaps of a view
    as elements."""
    need_triton(submission)
    info = next(w for w in WRAPPERS if w.name == "adam_step")
    values = Seeded(case_seed(4, "cuda adam strided state"), "contiguous")
    args, kwargs, expected, description = info.call(values)
    args = [laid(a, "strided") if k in info.inplace else a for k, a in enumerate(args)]
    description = f"{description}, param, exp_avg, exp_avg_sq column-strided views"
    what = "tt.cuda.adam.adam_step"
    try:
        obs = submission.call("cuda.wrapper", info.module, info.name, args, kwargs)
    except SubmissionRaised as exc:
        if exc.exc_type in ("ValueError", "TypeError"):
            return  # refused, as the API allows
        raise
    assert_conforms(obs, {"results": [np.empty(np.shape(e.value)) for e in expected],
                          "shared_args": None}, what=what)
    for k, (got, expect) in enumerate(zip(obs["results"], expected)):
        check_values(f"result {k}", got, expect, what=what, case=description,
                     repro="\n".join(values.lines))
        shared = obs["shared_args"][k] if isinstance(obs["shared_args"], list) else None
        if not isinstance(shared, list) or info.inplace[k] not in shared:
            raise AssertionError(
                f"{what} with column-strided state returned result {k} in new memory: the "
                "state is updated in place (the caller's arrays), or refused with a "
                f"ValueError\n  case: {description}")
