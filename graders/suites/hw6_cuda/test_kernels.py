"""Assignment 6: every kernel of the kernel table, launched by the grader itself on its own
buffers and grid (outputs start as NaN, guard regions around every buffer, every load and
store bounds-checked), against torch on hand-picked and drawn cases, in float32 and
float16. bfloat16 is graded only where a GPU runs the kernels: Triton 3.9.0's interpreter
computes bfloat16 wrongly (casts truncate, bfloat16 tl.dot and adds return garbage)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graders.kerneltable import KERNELS
from graders.kerneltable.checks import check_launch, need_triton
from graders.strategies.cuda import Values, fixed
from graders.suites._support import examples, task

PARAMS = [pytest.param(k, dtype, id=f"{k.name}-{dtype}", marks=task(k.task))
          for k in KERNELS for dtype in k.dtypes]
CHECKS = [pytest.param(k, check, id=f"{k.name}-{name}", marks=task(k.task))
          for k in KERNELS for name, check in k.checks]


@pytest.mark.parametrize("info, dtype", PARAMS)
def test_kernel(submission, info, dtype):
    """The kernel against torch: hand-picked edges (size 1, exact tiles, tails), then drawn
    sizes and layouts."""
    need_triton(submission)
    for number, (label, make) in enumerate(info.edges):
        check_launch(submission, info, make(fixed(number), dtype), f" [{label}]")

    @settings(max_examples=examples(info.examples))
    @given(st.data())
    def drawn(data):
        check_launch(submission, info, info.case(Values(data), dtype))

    drawn()


if CHECKS:  # an empty parametrize would be collected as one test without a task

    @pytest.mark.parametrize("info, check", CHECKS)
    def test_kernel_property(submission, info, check):
        """A property of one kernel beyond its values (stability, program order ...)."""
        need_triton(submission)
        check(submission, info)
