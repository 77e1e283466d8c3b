"""Task 5.5: learning-rate schedulers against torch.optim.lr_scheduler: each group's lr
after construction and after every step(). The cosine-with-warmup schedule is compared
with torch's LambdaLR running the documented factor."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from graders.checks import assert_close
from graders.checks.structure import conform
from graders.oracle import optim as oracle
from graders.suites._seed import case_rng, grading_seed
from graders.suites._support import examples, task

# lrs are Python floats; a closed form (base_lr * gamma ** k) and PyTorch's chained
# products differ by a few float64 roundings, and a cosine near zero by ~1e-16 absolute
RTOL, ATOL = 1e-9, 1e-12

base_lrs = st.lists(st.floats(1e-4, 1.0), min_size=1, max_size=3)


def _check(submission, kind, args, lrs, n_steps):
    got = submission.call("optim.schedule", kind, args, lrs, n_steps)
    expected = oracle.schedule(kind, args, lrs, n_steps)
    conform(got, expected, what="optim.schedule")
    call = {"StepLR": "StepLR", "LambdaLR": "LambdaLR",
            "cosine": "get_cosine_schedule_with_warmup"}[kind]
    arguments = ", ".join(f"{k}={v!r}" for k, v in args.items())
    case = (f"opt = tt.optim.SGD(one group per lr in {lrs}); "
            f"sched = tt.optim.lr_scheduler.{call}(opt, {arguments})")
    for key, label in (("lrs", "group lrs"), ("last_lr", "sched.get_last_lr()")):
        for i, (g, e) in enumerate(zip(got[key], expected[key], strict=True)):
            when = "after construction" if i == 0 else f"after {i} sched.step() calls"
            assert_close(np.asarray(g), np.asarray(e), what=f"{label} {when}", rtol=RTOL,
                         atol=ATOL, case=case)


@task("5.5")
@settings(max_examples=examples(20))
@given(lrs=base_lrs, step_size=st.integers(1, 5), gamma=st.floats(0.05, 1.0),
       n_steps=st.integers(1, 20))
def test_step_lr(submission, lrs, step_size, gamma, n_steps):
    """StepLR: lr = base_lr * gamma ** (epoch // step_size)."""
    _check(submission, "StepLR", {"step_size": step_size, "gamma": gamma}, lrs, n_steps)


LAMBDA_EXAMPLE = [0.5, 0.1, 0.02]


@task("5.5")
@settings(max_examples=examples(10))
@given(lrs=base_lrs, per_group=st.booleans(), order=st.permutations(sorted(oracle.LAMBDAS)),
       n_steps=st.integers(1, 15))
@example(lrs=LAMBDA_EXAMPLE, per_group=True, order=sorted(oracle.LAMBDAS), n_steps=12)
def test_lambda_lr(submission, lrs, per_group, order, n_steps):
    """LambdaLR: lr = base_lr * lr_lambda(epoch), one function for all groups or one per
    group, each group its own (the functions are in graders/probes/_optim.py: LAMBDAS)."""
    if lrs is LAMBDA_EXAMPLE and grading_seed():  # the explicit example, drawn again
        rng = case_rng(0, "5.5 lambda example")
        lrs = [float(v) for v in rng.uniform(0.01, 1.0, 3).round(4)]
        order = [order[i] for i in rng.permutation(len(order))]
    lambdas = order[:len(lrs)] if per_group and len(lrs) > 1 else order[:1]
    _check(submission, "LambdaLR", {"lambdas": lambdas}, lrs, n_steps)


@task("5.5")
@settings(max_examples=examples(20))
@given(lrs=base_lrs, warmup=st.integers(0, 8), length=st.integers(0, 20),
       cycles=st.sampled_from([0.5, 0.5, 1.0, 0.25]), extra=st.integers(0, 5))
def test_cosine_with_warmup(submission, lrs, warmup, length, cycles, extra):
    """get_cosine_schedule_with_warmup: linear warmup from 0, then cosine decay to 0 at
    num_training_steps (the formula in its docstring), past the end too."""
    args = {"num_warmup_steps": warmup, "num_training_steps": warmup + length}
    if cycles != 0.5:
        args["num_cycles"] = cycles
    _check(submission, "cosine", args, lrs, warmup + length + extra)
