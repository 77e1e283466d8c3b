"""Task 1.3: grad modes (no_grad, enable_grad, set_grad_enabled, inference_mode)."""

from __future__ import annotations

import contextlib

import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from graders.checks import (
    assert_conforms,
    assert_equal,
    assert_raises_like,
    running_example,
)
from graders.oracle.grad_modes import run_script
from graders.strategies.grad_modes import KEY_SCRIPTS, describe, scripts
from graders.strategies.programs import functions_source
from graders.suites._seed import case_rng, grading_seed, seeded_values
from graders.suites._support import examples, task

CHECK_HELP = ("where check() prints tt.is_grad_enabled() and whether an op on inputs "
              "requiring grad records a grad_fn")
CHECK_CODE = f"""import numpy as np
import tinytrain as tt

{functions_source(["mul"])}


def check():  # [is_grad_enabled, records]: what the grader observes at each check
    a = tt.tensor([1.0], dtype=tt.float64, requires_grad=True)
    b = tt.tensor([2.0], dtype=tt.float64, requires_grad=True)
    print([tt.is_grad_enabled(), Mul.apply(a, b).grad_fn is not None])


"""


def _with_key_scripts(test):
    for script in reversed(KEY_SCRIPTS):
        test = example(script=script)(test)
    return test


@task("1.3")
@settings(max_examples=examples(30))
@given(script=scripts())
@_with_key_scripts
def test_nested_modes_match_torch(submission, script):
    """Nested no_grad/enable_grad/set_grad_enabled/inference_mode blocks match torch."""
    program = describe(script)
    with running_example(f"{CHECK_HELP}:\n{program}"):
        got = submission.call("autograd.grad_mode_script", script)
    expected = run_script(script)
    assert_conforms(got, expected, what="the checks reached")
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        assert_equal(g, e, what=f"check #{i + 1} [is_grad_enabled, records]",
                     case=CHECK_HELP, reproducer=CHECK_CODE + describe(script))


@task("1.3")
def test_modes_restored_when_block_raises(submission):
    """Leaving a block by an exception restores the previous mode."""
    order = ["no_grad", "set_grad_enabled", "inference_mode"]
    if grading_seed():
        order = [order[i] for i in case_rng(0, "1.3 restored order").permutation(3)]
    got = submission.call("autograd.grad_mode_restored_after_exception", order)
    expected = {"no_grad": [True, False], "set_grad_enabled": [True, False],
                "inference_mode": [True, False]}
    assert_conforms(got, expected, what="the observation")
    for kind, state in expected.items():
        assert_equal(got[kind], state,
                     what="[is_grad_enabled, is_inference_mode_enabled] after an exception "
                          f"inside `with tt.{kind}(...)`")


_CONTEXTS = [["no_grad", None], ["enable_grad", None], ["set_grad_enabled", False],
             ["set_grad_enabled", True], ["inference_mode", True], ["inference_mode", False]]


def _torch_context(kind, arg):
    if kind in ("no_grad", "enable_grad"):
        return getattr(torch, kind)()
    return getattr(torch, kind)(arg)


def _torch_nested_exception(contexts, catch_at):
    def mode():
        return [torch.is_grad_enabled(), torch.is_inference_mode_enabled()]

    seen = []

    def enter(depth):
        if depth == len(contexts):
            raise KeyError("boom")
        with _torch_context(*contexts[depth]):
            if depth + 1 == catch_at:
                try:
                    enter(depth + 1)
                except KeyError:
                    seen.append(mode())
            else:
                enter(depth + 1)

    try:
        enter(0)
    except KeyError:
        seen.append(mode())
    return [seen[0], mode()]


def _describe_nesting(contexts, catch_at):
    parts = []
    for i, (kind, arg) in enumerate(contexts):
        parts.append(f"with tt.{kind}({'' if arg is None else arg}):")
        if i + 1 == catch_at:
            parts.append("try:")
    parts.append("raise KeyError  (caught " + (f"inside block {catch_at})" if catch_at
                                                  else "outside every block)"))
    return " ".join(parts)


@task("1.3")
@settings(max_examples=examples(12))
@given(cases=st.lists(
    st.lists(st.sampled_from(_CONTEXTS), min_size=1, max_size=3).flatmap(
        lambda ctxs: st.tuples(st.just(ctxs), st.integers(0, len(ctxs) - 1))),
    min_size=1, max_size=4))
@example(cases=[(ctxs, at) for inner in _CONTEXTS for outer in (["no_grad", None],
                                                               ["inference_mode", True])
                for ctxs, at in (([outer, inner], 0), ([outer, inner], 1))])
def test_every_mode_restored_when_nested_blocks_raise(submission, cases):
    """Every grad-mode context (no_grad, enable_grad, set_grad_enabled, inference_mode),
    nested, left through an exception restores the mode it found: where the exception is
    caught and after all blocks, as torch."""
    cases = [[list(map(list, ctxs)), at] for ctxs, at in cases]
    got = submission.call("autograd.grad_mode_nested_exceptions", cases)
    expected = [_torch_nested_exception(ctxs, at) for ctxs, at in cases]
    assert_conforms(got, [[[True, True], [True, True]]] * len(cases), what="the observation")
    for g, e, (ctxs, at) in zip(got, expected, cases, strict=True):
        case = _describe_nesting(ctxs, at)
        assert_equal(g[0], e[0], what="[is_grad_enabled, is_inference_mode_enabled] where the "
                     "exception is caught (after an exception inside nested grad-mode blocks)",
                     case=case)
        assert_equal(g[1], e[1], what="[is_grad_enabled, is_inference_mode_enabled] after "
                     "every block (after an exception inside nested grad-mode blocks)", case=case)


DECORATOR_CODE = """import tinytrain as tt

@tt.no_grad()
def under_no_grad(): return tt.is_grad_enabled()

@tt.enable_grad()
def under_enable_grad(): return tt.is_grad_enabled()

@tt.set_grad_enabled(False)
def under_set_false(): return tt.is_grad_enabled()

print(under_no_grad(), tt.is_grad_enabled(), under_set_false(), tt.is_grad_enabled())
with tt.no_grad():
    print(under_enable_grad(), tt.is_grad_enabled())"""

# key: (torch's value, what it is)
DECORATOR_CHECKS = {
    "no_grad": (False, "tt.is_grad_enabled() inside a function decorated with @tt.no_grad()"),
    "after_no_grad": (True, "tt.is_grad_enabled() after calling a function decorated with "
                            "@tt.no_grad() (the decorator must restore the mode)"),
    "set_false": (False, "tt.is_grad_enabled() inside a function decorated with "
                         "@tt.set_grad_enabled(False)"),
    "after_set_false": (True, "tt.is_grad_enabled() after calling a function decorated with "
                              "@tt.set_grad_enabled(False)"),
    "decorating_changed_mode": (False, "whether decorating a function with "
                                       "@tt.set_grad_enabled(False) changed the grad mode "
                                       "(only calling the function may)"),
    "set_false_twice": (False, "tt.is_grad_enabled() inside the second call of a function "
                               "decorated with @tt.set_grad_enabled(False)"),
    "no_grad_records": (False, "whether an op on a tensor that requires grad records inside a "
                               "function decorated with @tt.no_grad()"),
    "enable_records_inside_no_grad": (True, "whether an op on a tensor that requires grad "
                                            "records inside a function decorated with "
                                            "@tt.enable_grad(), called inside `with "
                                            "tt.no_grad()`"),
    "enable_inside_no_grad": (True, "tt.is_grad_enabled() inside a function decorated with "
                                    "@tt.enable_grad(), called inside `with tt.no_grad()`"),
    "after_enable": (False, "tt.is_grad_enabled() after calling a function decorated with "
                            "@tt.enable_grad() inside `with tt.no_grad()`"),
}


@task("1.3")
def test_decorators(submission):
    """no_grad(), enable_grad(), set_grad_enabled(False) work as function decorators."""
    with running_example(None, DECORATOR_CODE):
        got = submission.call("autograd.grad_mode_decorators",
                              seeded_values([1.0, 2.0], "1.3 decorators"))
    expected = {key: value for key, (value, _) in DECORATOR_CHECKS.items()}
    assert_conforms(got, expected, what="the observation")
    for key, (value, what) in DECORATOR_CHECKS.items():
        assert_equal(got[key], value, what=what, reproducer=DECORATOR_CODE)


@task("1.3")
def test_grad_mode_is_per_thread(submission):
    """no_grad in another thread does not switch off recording in this one."""
    got = submission.call("autograd.grad_mode_threads", seeded_values([1.0, 2.0], "1.3 threads"))
    assert_conforms(got, {"other": True, "main": True, "main_records": True},
                    what="the observation")
    assert_equal(got, {"other": False, "main": True, "main_records": True},
                 what="grad mode seen by each thread")


INFERENCE_CHECKS = {
    "enabled_inside": "tt.is_inference_mode_enabled() inside `with tt.inference_mode()`",
    "grad_inside": "tt.is_grad_enabled() inside `with tt.inference_mode()`",
    "recorded_inside": "whether x * t (x requiring grad) records a grad_fn inside "
                       "`with tt.inference_mode()`",
    "is_inference": "t.is_inference() for t = tt.tensor(...) made inside inference_mode",
    "output_is_inference": "y.is_inference() for y = x * t computed inside inference_mode",
    "nested_false": "[tt.is_inference_mode_enabled(), tt.is_grad_enabled()] inside "
                    "`with tt.inference_mode(False)` nested in `with tt.inference_mode()`",
    "nested_false_tensor_is_inference": "is_inference() of a tensor made inside "
                                        "tt.inference_mode(False) nested in inference_mode",
    "enabled_after": "tt.is_inference_mode_enabled() after leaving inference_mode",
    "normal_is_inference": "is_inference() of a tensor made outside inference_mode",
}


@task("1.3")
def test_inference_mode_and_inference_tensors(submission):
    """Tensors made in inference_mode are inference tensors with PyTorch's restrictions."""
    got = submission.call("autograd.inference_mode_tensors",
                          seeded_values([1.0, 2.0, 3.0, 4.0, 1.0], "1.3 inference"))
    expected = {
        "enabled_inside": True, "grad_inside": False, "recorded_inside": False,
        "is_inference": True, "output_is_inference": True, "nested_false": [False, True],
        "nested_false_tensor_is_inference": False, "enabled_after": False,
        "normal_is_inference": False,
    }
    raised = {"type": None, "message": ""}
    assert_conforms(got, {**expected, "save_outside": raised, "add_outside": raised,
                          "requires_grad_outside": raised}, what="the observation")
    for key, value in expected.items():
        assert_equal(got[key], value, what=INFERENCE_CHECKS[key])
    assert_raises_like(got["save_outside"], "RuntimeError",
                       what="saving an inference tensor for backward outside inference_mode",
                       contains=("Inference tensors cannot be saved for backward",))
    assert_raises_like(got["add_outside"], None,
                       what="an op that saves nothing, on an inference tensor")
    assert_raises_like(got["requires_grad_outside"], "RuntimeError",
                       what="requires_grad_() on an inference tensor outside inference_mode",
                       contains=("inference tensor outside InferenceMode is not allowed",))


@task("1.3")
def test_eval_does_not_disable_autograd(submission):
    """module.eval() only switches layer behaviour; no_grad is what stops recording."""
    got = submission.call("autograd.eval_keeps_autograd",
                          seeded_values([2.0, 3.0, 1.0, 1.0], "1.3 eval"))
    assert_conforms(got, {"training": True, "eval_records": True, "eval_requires_grad": True,
                          "no_grad_records": True}, what="the observation")
    assert_equal(got, {"training": False, "eval_records": True, "eval_requires_grad": True,
                       "no_grad_records": False}, what="recording in eval mode and under no_grad")


@task("1.3")
def test_mode_queries_return_bools(submission):
    """is_grad_enabled() and is_inference_mode_enabled() return a bool (as torch's) outside
    any context and inside each grad-mode context manager."""
    contexts = {
        "none": contextlib.nullcontext, "no_grad": torch.no_grad,
        "enable_grad": torch.enable_grad,
        "set_grad_enabled(False)": lambda: torch.set_grad_enabled(False),
        "set_grad_enabled(True)": lambda: torch.set_grad_enabled(True),
        "inference_mode()": torch.inference_mode,
        "inference_mode(False)": lambda: torch.inference_mode(False),
    }
    order = list(contexts)
    if grading_seed():
        order = [order[i] for i in case_rng(0, "1.3 query order").permutation(len(order))]
    got = submission.call("autograd.grad_mode_query_types", order)
    expected = {}
    for name, make in contexts.items():
        with make():
            expected[name] = [[type(v).__name__, v]
                              for v in (torch.is_grad_enabled(), torch.is_inference_mode_enabled())]
    assert_conforms(got, {k: [["", True], ["", True]] for k in expected}, what="the observation")
    for context, values in expected.items():
        assert_equal(got[context], values,
                     what=f"inside {context}: [type, value] of is_grad_enabled() and of "
                          "is_inference_mode_enabled()")
