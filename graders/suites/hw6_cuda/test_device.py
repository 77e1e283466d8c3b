"""Assignment 6, task 6.7: the cuda device. Tensors made with ``device="cuda"`` run each
operator through the assignment's kernels, forward and backward under tinytrain's
autograd: outputs and gradients against torch (float32), the outputs and gradients on the
device, and the kernels each operator must launch (an operator computed with NumPy
launches none). Then the fused Adam step on device parameters, and assignment 5's GPT
trained on the device against its PyTorch twin (integration: it runs the whole stack)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graders.checks import assert_close, assert_conforms, assert_equal
from graders.kerneltable.checks import device_kernels, need_triton
from graders.kerneltable.device import (
    DEVICE_OPS,
    DEVICE_TOLERANCE,
    DeviceOpInfo,
    grad_output,
    said,
)
from graders.oracle import cuda as oracle
from graders.oracle import gpt as gpt_oracle
from graders.strategies.cuda import Values, fixed
from graders.suites._seed import case_rng, case_seed, grading_seed, seeded_values
from graders.suites._support import examples, task

PARAMS = [pytest.param(op, id=op.name, marks=task(op.task)) for op in DEVICE_OPS]
DEVICE = "cuda:0"
TRAIN_TIMEOUT = 50.0  # a GPT step under the interpreter runs about a hundred launches


def check_launched(launched: Any, kernels: tuple[str, ...], what: str, case: str) -> None:
    if not isinstance(launched, list) or not all(isinstance(k, str) for k in launched):
        raise AssertionError(f"{what}: malformed answer: launched must list kernel names")
    missing = [k for k in kernels if k not in launched]
    if missing:
        raise AssertionError(
            f"{what} on the cuda device never launched {missing[0]} (it launched "
            f"{launched or 'nothing'}): the device must compute with the assignment's "
            f"kernels\n  case: {case}")


@pytest.mark.parametrize("op", PARAMS)
def test_device_op(submission, op):
    """The operator on device tensors, forward and backward, against torch; outputs and
    gradients on the device; the operator's kernels launched."""
    need_triton(submission)

    @settings(max_examples=examples(op.examples))
    @given(st.data())
    def drawn(data):
        v = Values(data)
        inputs, kwargs, case = op.draw(v)
        case += said(inputs)
        grad = grad_output(v, oracle.device_output_shape(op.name, inputs, kwargs))
        check_device_op(submission, op, inputs, kwargs, grad, case)

    drawn()


def check_device_op(submission: Any, op: DeviceOpInfo, inputs: list[dict[str, Any]],
                    kwargs: dict[str, Any], grad: np.ndarray, case: str) -> None:
    """One call of ``op`` on the device against torch: output, gradients, their devices
    and the kernels launched."""
    expected = oracle.device_op(op.name, inputs, kwargs, grad)
    got = submission.call("cuda.device_op", op.name, inputs, kwargs, grad,
                          kernels=device_kernels(submission))
    n_grads = len(expected["grads"])
    assert_conforms(got, {"output": expected["output"], "device": "",
                          "grads": [np.empty(g.shape) for g in expected["grads"]],
                          "grad_devices": [""] * n_grads, "launched": None}, what=op.name)
    check_launched(got["launched"], op.kernels, op.name, case)
    written = got.get("inputs_written")
    if not isinstance(written, list) or not all(isinstance(k, int) for k in written):
        raise AssertionError(f"{op.name}: malformed answer: no record of the inputs' memory")
    if written:
        raise AssertionError(
            f"{op.name} on the cuda device wrote into the storage of its input {written[0]} "
            "(forward or backward): an operator must leave its inputs unchanged\n"
            f"  case: {case}")
    assert_equal(got["device"], DEVICE, what=f"{op.name}: the output's device", case=case)
    assert_equal(list(got["grad_devices"]), [DEVICE] * n_grads,
                 what=f"{op.name}: the devices of the inputs' .grad", case=case)
    rtol, atol = DEVICE_TOLERANCE
    assert_close(got["output"], expected["output"], what=f"{op.name} on the cuda device",
                 rtol=rtol, atol=atol, case=case)
    grad_atol = atol if op.grad_atol is None else op.grad_atol(inputs, grad)
    for k, (g, e) in enumerate(zip(got["grads"], expected["grads"])):
        assert_close(g, e, what=f"{op.name} on the cuda device: gradient of input {k}",
                     rtol=rtol, atol=grad_atol, case=case)


OPS = {op.name: op for op in DEVICE_OPS}


@task("6.7")
def test_device_cross_entropy_mean_over_the_targets_not_ignored(submission):
    """F.cross_entropy(reduction="mean") on the device, with an ignored target: the loss
    and the logits' gradient are divided by the number of targets not ignored (3 of 4),
    as torch does (the drawn cases need not draw "mean")."""
    need_triton(submission)
    rng = case_rng(7, "6.7 cross-entropy mean")
    logits = (3 * rng.standard_normal((4, 5))).astype(np.float32)
    targets = np.array([1, 4, -100, 0], np.int64)
    if grading_seed():  # other targets, one of them ignored
        targets = rng.integers(0, 5, 4)
        targets[rng.integers(4)] = -100
    inputs = [{"array": logits, "grad": True}, {"array": targets, "grad": False}]
    grad = np.array(1.5 if grading_seed() == 0 else rng.uniform(0.5, 2), np.float32)
    check_device_op(submission, OPS["cross_entropy"], inputs, {"reduction": "mean"}, grad,
                    f"F.cross_entropy(logits (4, 5), targets {targets.tolist()}, "
                    f"reduction='mean'), backward with a gradient of {float(grad):.6g}")


@task("6.7")
def test_device_gelu_of_a_scalar(submission):
    """F.gelu of a 0-d device tensor, forward and backward (torch takes 0-d inputs; a
    kernel takes rows of at least one element)."""
    need_triton(submission)
    x, g = seeded_values([-0.75, 2.0], "6.7 gelu scalar")
    inputs = [{"array": np.array(x, np.float32), "grad": True}]
    check_device_op(submission, OPS["gelu"], inputs, {"approximate": "none"},
                    np.array(g, np.float32), f"F.gelu(x of shape () = {x}), backward "
                    f"with a gradient of {g}")


@task("6.7")
@pytest.mark.parametrize("decoupled", [False, True], ids=["Adam", "AdamW"])
def test_adam_on_the_device(submission, decoupled):
    """tt.optim.Adam / AdamW over device parameters: three steps against torch's, by the
    fused kernel."""
    need_triton(submission)
    v = fixed(3)
    shapes = [(5, 7), (7,), (1,)]
    params = [v.normal(f"p{i}", s, "float32") for i, s in enumerate(shapes)]
    grads = [[v.normal(f"g{i}", s, "float32") for i, s in enumerate(shapes)] for _ in range(3)]
    options = {"lr": 0.01, "betas": [0.9, 0.99], "eps": 1e-8, "weight_decay": 0.1,
               "decoupled": decoupled}
    got = submission.call("cuda.device_adam", params, grads, options,
                          kernels=device_kernels(submission))
    name = "AdamW" if decoupled else "Adam"
    case = f"tt.optim.{name}(3 device parameters {shapes}, lr=0.01, betas=(0.9, 0.99), " \
           "weight_decay=0.1), 3 steps"
    expected = _torch_adam(params, grads, options)
    assert_conforms(got, {"params": [[np.empty(s) for s in shapes] for _ in grads],
                          "devices": [""] * len(shapes), "launched": None}, what=name)
    check_launched(got["launched"], ("adam_kernel",), f"tt.optim.{name}.step", case)
    assert_equal(list(got["devices"]), [DEVICE] * len(shapes),
                 what=f"{name}: the parameters' device", case=case)
    for step, (g_step, e_step) in enumerate(zip(got["params"], expected)):
        for k, (g, e) in enumerate(zip(g_step, e_step)):
            assert_close(g, e, what=f"{name}: parameter {k} after step {step + 1}", case=case)


def _torch_adam(params: list[np.ndarray], grads: list[list[np.ndarray]],
                options: dict[str, Any]) -> list[list[np.ndarray]]:
    tensors = [torch.nn.Parameter(torch.from_numpy(p.copy())) for p in params]
    cls = torch.optim.AdamW if options["decoupled"] else torch.optim.Adam
    opt = cls(tensors, lr=options["lr"], betas=tuple(options["betas"]), eps=options["eps"],
              weight_decay=options["weight_decay"], foreach=False)
    history = []
    for step in grads:
        for t, g in zip(tensors, step):
            t.grad = torch.from_numpy(g.copy())
        opt.step()
        history.append([t.detach().numpy().copy() for t in tensors])
    return history


# the GPT on the device: float32 on both sides, 2 AdamW steps. Each op's kernels round in
# another order than torch's CPU ops (a few float32 units, see DEVICE_TOLERANCE); measured
# on the reference, the losses agree to float32 precision and the weights within 4e-7
# after two steps. The tolerances below are 100 times that, and 10 times below what a
# wrong device op does (it moves the loss by 1e-3 or more). No biases:
# the key projection's bias has an exactly zero gradient (softmax ignores a constant
# added to a row of scores), and Adam turns the rounding noise left there into steps of
# lr in a random direction on either side.
GPT_CONFIG = gpt_oracle.config(vocab_size=11, block_size=4, n_layer=1, n_head=2, n_embd=16,
                               bias=False)
GPT_OPTIONS = {"weight_decay": 0.1, "learning_rate": 1e-2, "betas": [0.9, 0.95]}
GPT_LOSS_TOLERANCE, GPT_WEIGHT_TOLERANCE = (1e-4, 1e-5), (1e-4, 1e-4)


@task("6.7")
def test_gpt_trains_on_the_device(submission):
    """Assignment 5's GPT, moved with model.to("cuda"), trained for two AdamW steps on the
    device: every loss and every weight as its PyTorch twin's (float32), the weights and
    their gradients on the device, and the kernels of every task launched."""
    need_triton(submission)
    model = gpt_oracle.GPT(GPT_CONFIG)
    weights = gpt_oracle.random_weights(model, case_seed(0, "6.7 gpt weights"), torch.float32)
    rng = case_rng(4, "6.7 gpt batches")
    batches = [[idx, (idx + 1) % GPT_CONFIG["vocab_size"]]
               for idx in (rng.integers(0, GPT_CONFIG["vocab_size"], (2, 4)) for _ in range(2))]
    expected = gpt_oracle.train(model, batches, GPT_OPTIONS)
    got = submission.call("cuda.device_train", GPT_CONFIG, weights, batches, GPT_OPTIONS,
                          kernels=device_kernels(submission), timeout=TRAIN_TIMEOUT)
    case = (f"{gpt_oracle.describe(GPT_CONFIG)} in float32, model.to('cuda'), 2 steps of "
            f"configure_optimizers(weight_decay=0.1, learning_rate=1e-2, betas=(0.9, 0.95))")
    assert_conforms(got, {"losses": expected["losses"],
                          "params": {k: np.empty(v.shape) for k, v in weights.items()},
                          "devices": None, "grad_devices": None, "launched": None},
                    what="training on the device")
    check_launched(got["launched"], ("matmul_kernel", "bias_gelu_kernel",
                                     "bias_gelu_backward_kernel", "softmax_kernel",
                                     "softmax_backward_kernel", "layer_norm_kernel",
                                     "layer_norm_backward_kernel", "cross_entropy_kernel",
                                     "adam_kernel"), "the GPT's training step", case)
    assert_equal(got["devices"], [DEVICE], what="the devices of the weights", case=case)
    assert_equal(got["grad_devices"], [DEVICE], what="the devices of the weights' .grad",
                 case=case)
    assert_close(np.asarray(got["losses"], np.float64), expected["losses"],
                 what="the loss of each step on the device", rtol=GPT_LOSS_TOLERANCE[0],
                 atol=GPT_LOSS_TOLERANCE[1], case=case)
    for name, value in expected["params"].items():
        if name in got["params"]:
            assert_close(got["params"][name], value, what=f"{name} after 2 steps",
                         rtol=GPT_WEIGHT_TOLERANCE[0], atol=GPT_WEIGHT_TOLERANCE[1], case=case)


@task("6.7")
@pytest.mark.parametrize("frozen", ["weight", "x"])
def test_device_linear_with_an_input_that_needs_no_grad(submission, frozen):
    """F.linear and matmul on the device where the weight (a frozen layer, matmul's second
    operand) or x (the first) does not require grad: the inputs that do get torch's
    gradients."""
    need_triton(submission)
    rng = case_rng(6, "6.7 frozen linear", frozen)
    for op, names, shapes in (("linear", ("x", "weight", "bias"), ((2, 3, 4), (5, 4), (5,))),
                              ("matmul", ("x", "weight"), ((2, 3, 4), (4, 5)))):
        arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        inputs = [{"array": a, "grad": name != frozen} for name, a in zip(names, arrays)]
        grad = rng.standard_normal((2, 3, 5)).astype(np.float32)
        expected = oracle.device_op(op, inputs, {}, grad)
        got = submission.call("cuda.device_op", op, inputs, {}, grad,
                              kernels=device_kernels(submission))
        assert_conforms(got, {"output": expected["output"], "device": "",
                              "grads": [np.empty(g.shape) for g in expected["grads"]],
                              "grad_devices": [""] * (len(names) - 1), "launched": None},
                        what=op)
        case = (f"F.linear(x (2, 3, 4), weight (5, 4), bias (5,)) with {frozen}.requires_grad "
                "False" if op == "linear" else
                f"x (2, 3, 4) @ weight (4, 5) with {frozen}.requires_grad False")
        rtol, atol = DEVICE_TOLERANCE
        graded = [name for name in names if name != frozen]
        for name, g, e in zip(graded, got["grads"], expected["grads"], strict=True):
            assert_close(g, e, what=f"{op} on the cuda device: {name}.grad", rtol=rtol,
                         atol=atol, case=case)
