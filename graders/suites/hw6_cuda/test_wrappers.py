"""Assignment 6: each task's host functions (NumPy arrays in and out) against torch, and
the kernels they launched: a wrapper that computes with NumPy instead of launching the
task's kernels scores nothing here."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graders.kerneltable import WRAPPERS
from graders.kerneltable.checks import check_wrapper, need_triton
from graders.strategies.cuda import Seeded, Values
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
