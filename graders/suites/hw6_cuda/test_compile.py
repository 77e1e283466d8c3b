"""Assignment 6: every graded kernel compiles for sm_90 (H100/H200) without a GPU, in a
child process of the worker, with the types the table gives; compile errors are shown with
their line. The matmul and attention kernels must use tensor-core instructions (wgmma or
mma) for float16, and no TF32 for float32 (the course asks for input_precision="ieee"),
the attention backward's float32 builds included."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from graders.kerneltable import KERNELS
from graders.kerneltable.checks import COMPILE_TIMEOUT, batch, check_compile, need_triton
from graders.probes._cuda_ast import KernelSourceError, kernel_source
from graders.suites._support import task

PARAMS = [pytest.param(k, id=k.name, marks=task(k.task)) for k in KERNELS]

# the table compiles the attention backward kernels in float16 only (their tensor cores);
# their float32 builds are compiled here, for TF32: a float32 tl.dot without
# input_precision="ieee" (dq += tl.dot(ds, k)) gives right values under the interpreter,
# which ignores the precision, and TF32 products (10-bit mantissa) on a GPU, far outside
# the float32 FlashAttention tolerance. They join the task's one compile child: its call
# took 6.7 s instead of 6.1 to 6.4 s on the reference (load average 3 to 4).
BACKWARD_FP32 = [replace(k, compile_dtypes=("float32",), ieee=True) for k in KERNELS
                 if k.name in ("flash_attention_backward_dkdv_kernel",
                               "flash_attention_backward_dq_kernel")]

COMPILED = [*KERNELS, *BACKWARD_FP32]


def task_requests(submission: Any, task_id: str) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The compile requests of every kernel build of a task, each with the kernel's checked
    source, deduplicated: the worker compiles them in one child process and remembers the
    results for the task's tests. A kernel whose source breaks the rules is left out (its
    own test reports why)."""
    requests = []
    for k in COMPILED:
        if k.task != task_id:
            continue
        try:
            source = kernel_source(submission, k.module, k.name)
        except KernelSourceError:
            continue
        requests += [{**r, "source": source} for r in k.compile_requests()]
    return batch(requests)


def _compile_and_check(submission: Any, info: Any) -> None:
    """Compile the task's builds (once per task: the worker remembers them) and check
    ``info``'s."""
    need_triton(submission)
    source = kernel_source(submission, info.module, info.name)  # its rules, or the failure
    requests, index = task_requests(submission, info.task)
    results = submission.call("cuda.compile_sm90", requests, timeout=COMPILE_TIMEOUT)
    if not isinstance(results, list) or len(results) != len(requests):
        raise AssertionError(f"compiling {info.name}: malformed answer: expected "
                             f"{len(requests)} results")
    check_compile(info, results, index, source)


@pytest.mark.parametrize("info", PARAMS)
def test_compiles_for_sm90(submission, info):
    """The kernel compiles for sm_90 (and uses tensor cores where it must)."""
    _compile_and_check(submission, info)


@task("6.5")
@pytest.mark.parametrize("info", BACKWARD_FP32, ids=[k.name for k in BACKWARD_FP32])
def test_attention_backward_float32_without_tf32(submission, info):
    """The float32 build of an attention backward kernel compiles for sm_90 without TF32
    tensor-core instructions."""
    _compile_and_check(submission, info)
