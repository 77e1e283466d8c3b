"""Assignment 6: every graded kernel compiles for sm_90 (H100/H200) without a GPU, in a
child process of the worker, with the types the table gives; compile errors are shown with
their line. The matmul and attention kernels must use tensor-core instructions (wgmma or
mma) for float16, and no TF32 for float32 (the course asks for input_precision="ieee")."""

from __future__ import annotations

import pytest

from graders.kerneltable import KERNELS
from graders.kerneltable.checks import COMPILE_TIMEOUT, batch, check_compile, need_triton
from graders.suites._support import task

PARAMS = [pytest.param(k, id=k.name, marks=task(k.task)) for k in KERNELS]


@pytest.mark.parametrize("info", PARAMS)
def test_compiles_for_sm90(submission, info):
    """The kernel compiles for sm_90 (and uses tensor cores where it must)."""
    need_triton(submission)
    # every kernel of the task in one call: the worker compiles them in one child process
    # and remembers the results for the task's other kernels
    requests, index = batch([r for k in KERNELS if k.task == info.task
                             for r in k.compile_requests()])
    results = submission.call("cuda.compile_sm90", requests, timeout=COMPILE_TIMEOUT)
    if not isinstance(results, list) or len(results) != len(requests):
        raise AssertionError(f"compiling {info.name}: malformed answer: expected "
                             f"{len(requests)} results")
    check_compile(info, results, index)
