"""Task 1.3: grad modes (no_grad, enable_grad, set_grad_enabled, inference_mode)."""

from __future__ import annotations

from hypothesis import example, given, settings

from graders.checks import assert_equal, assert_raises_like
from graders.oracle.grad_modes import run_script
from graders.strategies.grad_modes import KEY_SCRIPTS, describe, scripts
from graders.suites._support import examples, task

CHECK_HELP = ("where check() prints tt.is_grad_enabled() and whether "
              "(x * 2).grad_fn is set for x requiring grad")


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
    got = submission.call("autograd.grad_mode_script", script)
    expected = run_script(script)
    assert_equal(len(got), len(expected), what="number of checks reached")
    program = describe(script)
    for i, (g, e) in enumerate(zip(got, expected, strict=False)):
        assert_equal(g, e, what=f"check #{i + 1} [is_grad_enabled, records]",
                     case=f"{CHECK_HELP}:\n{program}")


@task("1.3")
def test_modes_restored_when_block_raises(submission):
    """Leaving a block by an exception restores the previous mode."""
    got = submission.call("autograd.grad_mode_restored_after_exception")
    for kind, state in got.items():
        assert_equal(state, [True, False],
                     what="[is_grad_enabled, is_inference_mode_enabled] after an exception "
                          f"in {kind}")


@task("1.3")
def test_decorators(submission):
    """no_grad(), enable_grad(), set_grad_enabled(False) work as function decorators."""
    got = submission.call("autograd.grad_mode_decorators")
    expected = {
        "no_grad": False, "after_no_grad": True, "set_false": False, "after_set_false": True,
        "decorating_changed_mode": False, "set_false_twice": False,
        "enable_inside_no_grad": True, "after_enable": False,
    }
    for key, value in expected.items():
        assert_equal(got[key], value, what=key.replace("_", " "))


@task("1.3")
def test_grad_mode_is_per_thread(submission):
    """no_grad in another thread does not switch off recording in this one."""
    got = submission.call("autograd.grad_mode_threads")
    assert_equal(got, {"other": False, "main": True, "main_records": True},
                 what="grad mode seen by each thread")


@task("1.3")
def test_inference_mode_and_inference_tensors(submission):
    """Tensors made in inference_mode are inference tensors with PyTorch's restrictions."""
    got = submission.call("autograd.inference_mode_tensors")
    expected = {
        "enabled_inside": True, "grad_inside": False, "recorded_inside": False,
        "is_inference": True, "output_is_inference": True, "nested_false": [False, True],
        "nested_false_tensor_is_inference": False, "enabled_after": False,
        "normal_is_inference": False,
    }
    for key, value in expected.items():
        assert_equal(got[key], value, what=key.replace("_", " "))
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
    got = submission.call("autograd.eval_keeps_autograd")
    assert_equal(got, {"training": False, "eval_records": True, "eval_requires_grad": True,
                       "no_grad_records": False}, what="recording in eval mode and under no_grad")
