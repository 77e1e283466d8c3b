"""Tasks 5.8, 5.9 and 5.11: layers against torch.nn with identical weights (copied
across), forward outputs and the gradient of every parameter and input; PyTorch's default
initialisations, checked by their bounds and statistics (tinytrain's generator is not
torch's, so the values differ; the distributions must not)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graders.checks import assert_close, assert_equal
from graders.checks.layers import assert_layer_matches
from graders.checks.structure import Kind, Shaped, conform, loose
from graders.optable import OPS
from graders.oracle import layers as oracle
from graders.strategies.layers import (
    ACTIVATIONS,
    LOSSES,
    activation_specs,
    embedding_specs,
    layer_norm_specs,
    linear_specs,
    loss_specs,
)
from graders.suites._seed import case_rng, case_seed, grading_seed
from graders.suites._support import examples, task

LAYER_NORM = next(op for op in OPS if op.name == "layer_norm")
SIGMAS = 6  # statistical checks allow 6 standard errors: a correct init fails ~1 in 5e8


def _check_run(submission: Any, spec: dict[str, Any],
               tolerances: dict[str, tuple[float, float]] | None = None) -> None:
    got = submission.call("layers.run", spec)
    expected = oracle.run("run", spec)
    conform(got, {**loose(expected), "param_grads": Kind(dict),
                  "input_grads": [Kind(None, np.ndarray)] * len(expected["input_grads"])},
            what="layers.run")
    assert_layer_matches(got, expected, spec, tolerances)


def _check_uniform(values: np.ndarray, bound: float, what: str) -> None:
    """``values`` look like n samples of U(-bound, bound): inside the bounds, reaching
    close to them, with the uniform's mean (0) and variance (bound**2 / 3)."""
    flat = values.astype(np.float64).ravel()
    n = flat.size
    if n == 0:
        return
    if bound == 0:
        assert_close(flat, np.zeros(n), what=f"{what}: U(0, 0) gives zeros", rtol=0, atol=0)
        return
    worst = float(np.abs(flat).max())
    if worst > bound * (1 + 1e-6):
        raise AssertionError(f"{what}: a value {worst:.6g} lies outside U(-{bound:.6g}, "
                             f"{bound:.6g})")
    if n >= 300 and worst < 0.95 * bound:
        raise AssertionError(f"{what}: {n} draws of U(-{bound:.6g}, {bound:.6g}) never come "
                             f"near the bound (largest |value| {worst:.6g}): the bound is "
                             "too small")
    u = flat / bound  # ~ U(-1, 1): mean 0, variance 1/3, variance of u**2 is 1/5 - 1/9
    mean_tol = SIGMAS * math.sqrt(1 / 3 / n)
    var_tol = SIGMAS * math.sqrt((1 / 5 - 1 / 9) / n)
    if abs(u.mean()) > mean_tol or abs((u * u).mean() - 1 / 3) > var_tol:
        raise AssertionError(
            f"{what}: {n} draws should look like U(-{bound:.6g}, {bound:.6g}); their mean "
            f"is {flat.mean():.4g} (expected 0 +- {mean_tol * bound:.3g}) and their mean "
            f"square {(flat ** 2).mean():.4g} (expected {bound ** 2 / 3:.4g} +- "
            f"{var_tol * bound ** 2:.3g})")


def _init_seeds(*key: Any) -> list[int]:
    """The seeds [s, s, other] of a seeded_init request (0, 0, 1 at grading seed 0)."""
    s = case_seed(0, "5.8 init", *key) % 2**31
    other = case_seed(1, "5.8 init other", *key) % 2**31
    return [s, s, other if other != s else s + 1]


def _check_seeded(runs: list[dict[str, Any]], what: str, seeds: list[int]) -> None:
    """runs come from seeds [s, s, other]: the same seed must give the same values, another
    seed other values."""
    for name, entry in runs[0].items():
        if entry is None or entry[0].size == 0:
            continue
        same, other = runs[1][name][0], runs[2][name][0]
        assert_close(same, entry[0], what=f"{what}.{name} built twice after "
                     f"tt.manual_seed({seeds[0]}) (the init must draw from tinytrain's "
                     "generator)", rtol=0, atol=0)
        if np.array_equal(other, entry[0]) and np.unique(entry[0]).size > 1:
            raise AssertionError(f"{what}.{name}: tt.manual_seed({seeds[0]}) and "
                                 f"tt.manual_seed({seeds[2]}) give identical values (the init "
                                 "ignores tinytrain's generator)")


def _torch_parameters(kind: str, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    module = getattr(torch.nn, kind)(*args, **kwargs)
    return {name: None if p is None else [list(p.shape), str(p.dtype).removeprefix("torch.")]
            for name, p in module._parameters.items()}


def _conform_init(runs: Any, kind: str, args: list[Any], kwargs: dict[str, Any]) -> None:
    """seeded_init's answer: per seed, each of torch's parameters as [values, dtype]."""
    params = {name: None if entry is None else [Shaped(entry[0]), Kind(str)]
              for name, entry in _torch_parameters(kind, args, kwargs).items()}
    conform(runs, [params] * 3, what="layers.seeded_init")


def _shapes(run: dict[str, Any]) -> dict[str, Any]:
    return {name: None if e is None else [list(e[0].shape), e[1]] for name, e in run.items()}


# ----- 5.8 Linear and Embedding --------------------------------------------------------
LINEAR_INITS = [([48, 64], {}), ([1000, 3], {}), ([3, 700], {}), ([20, 30], {"bias": False}),
                ([0, 4], {})]


@task("5.8")
@pytest.mark.parametrize(("args", "kwargs"), LINEAR_INITS,
                         ids=[f"Linear{tuple(a)}{k or ''}" for a, k in LINEAR_INITS])
def test_linear_initialisation(submission, args, kwargs):
    """Linear's weight ~ kaiming_uniform_(a=sqrt(5)) = U(-1/sqrt(in), 1/sqrt(in)) and its
    bias ~ the same uniform (zeros when in_features is 0), float32, drawn from tinytrain's
    generator (so tt.manual_seed repeats them)."""
    seeds = _init_seeds("Linear", args, kwargs)
    runs = submission.call("layers.seeded_init", "Linear", args, kwargs, seeds)
    _conform_init(runs, "Linear", args, kwargs)
    what = f"tt.nn.Linear({', '.join(map(str, args))}{', bias=False' if kwargs else ''})"
    assert_equal(_shapes(runs[0]), _torch_parameters("Linear", args, kwargs),
                 what=f"{what}: parameters {{name: [shape, dtype]}}")
    bound = 1 / math.sqrt(args[0]) if args[0] > 0 else 0.0
    for name, entry in runs[0].items():
        if entry is not None:
            _check_uniform(entry[0], bound, f"{what}.{name}")
    _check_seeded(runs, what, seeds)


KAIMING = [
    ([60, 50], {}),
    ([60, 50], {"a": math.sqrt(5)}),
    ([40, 80], {"mode": "fan_out"}),
    ([50, 40], {"nonlinearity": "relu"}),
    ([30, 8, 3], {"a": 0.2}),
    ([64, 48], {"nonlinearity": "tanh", "mode": "fan_out"}),
]


@task("5.8")
@pytest.mark.parametrize(("shape", "kwargs"), KAIMING,
                         ids=[f"{tuple(s)}{k or ''}" for s, k in KAIMING])
def test_kaiming_uniform(submission, shape, kwargs):
    """tt.nn.init.kaiming_uniform_ draws U(-b, b) with b = gain * sqrt(3 / fan), gain =
    calculate_gain(nonlinearity, a), fan = fan_in or fan_out (``mode``), as torch's."""
    seed = case_seed(0, "5.8 kaiming", shape, kwargs) % 2**31
    values = submission.call("layers.kaiming_uniform", shape, kwargs, seed)
    conform(values, Shaped(shape), what="layers.kaiming_uniform")
    reference = torch.empty(shape)
    fan = torch.nn.init._calculate_correct_fan(reference, kwargs.get("mode", "fan_in"))
    gain = torch.nn.init.calculate_gain(kwargs.get("nonlinearity", "leaky_relu"),
                                        kwargs.get("a", 0))
    what = f"tt.nn.init.kaiming_uniform_(tt.zeros{tuple(shape)}, " + \
        ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) + ")"
    assert_equal(list(values.shape), list(shape), what=f"{what}: shape")
    _check_uniform(values, gain * math.sqrt(3.0 / fan), what)


@task("5.8")
@settings(max_examples=examples(25))
@given(spec=linear_specs())
def test_linear_matches_torch(submission, spec):
    """nn.Linear with torch's weights: output, weight and bias gradients, input gradient."""
    _check_run(submission, spec)


# padding_idx 0 too: the falsy value of the option (a row to zero all the same)
EMBEDDING_INITS = [([300, 40], {}), ([50, 8], {"padding_idx": 3}),
                   ([60, 7], {"padding_idx": -2}), ([40, 6], {"padding_idx": 0})]


@task("5.8")
@pytest.mark.parametrize(("args", "kwargs"), EMBEDDING_INITS,
                         ids=[f"Embedding{tuple(a)}{k or ''}" for a, k in EMBEDDING_INITS])
def test_embedding_initialisation(submission, args, kwargs):
    """Embedding's weight ~ N(0, 1) (float32), its padding row (if any; a negative
    padding_idx counts from the end) zeros; drawn from tinytrain's generator."""
    seeds = _init_seeds("Embedding", args, kwargs)
    runs = submission.call("layers.seeded_init", "Embedding", args, kwargs, seeds)
    _conform_init(runs, "Embedding", args, kwargs)
    what = f"tt.nn.Embedding({', '.join(map(str, args))}" + \
        "".join(f", {k}={v}" for k, v in kwargs.items()) + ")"
    assert_equal(_shapes(runs[0]), _torch_parameters("Embedding", args, kwargs),
                 what=f"{what}: parameters {{name: [shape, dtype]}}")
    weight = runs[0]["weight"][0].astype(np.float64)
    rows = np.ones(args[0], dtype=bool)
    if "padding_idx" in kwargs:
        pad = kwargs["padding_idx"] % args[0]
        assert_close(weight[pad], np.zeros(args[1]), rtol=0, atol=0,
                     what=f"{what}.weight[{pad}] (the padding row starts as zeros)")
        rows[pad] = False
    sample = weight[rows].ravel()
    n = sample.size
    mean_tol, std_tol = SIGMAS / math.sqrt(n), SIGMAS / math.sqrt(2 * n)
    if abs(sample.mean()) > mean_tol or abs(sample.std() - 1) > std_tol:
        raise AssertionError(f"{what}.weight: {n} draws should look like N(0, 1); their mean "
                             f"is {sample.mean():.4g} (expected 0 +- {mean_tol:.3g}) and their "
                             f"std {sample.std():.4g} (expected 1 +- {std_tol:.3g})")
    _check_seeded(runs, what, seeds)


@task("5.8")
@settings(max_examples=examples(25))
@given(spec=embedding_specs())
def test_embedding_matches_torch(submission, spec):
    """nn.Embedding with torch's weight: output and weight gradient (rows picked several
    times add up their gradients; the padding row gets none)."""
    _check_run(submission, spec)


# ----- 5.9 LayerNorm ---------------------------------------------------------------------
@task("5.9")
@settings(max_examples=examples(25))
@given(spec=layer_norm_specs())
def test_layer_norm_matches_torch(submission, spec):
    """nn.LayerNorm (int or tuple normalized_shape, with or without elementwise_affine and
    bias, eps): its initial parameters (ones and zeros), then, with other weights, output
    and the gradients of weight, bias and input."""
    initial = {k: v for k, v in spec.items() if k in ("kind", "args", "kwargs")}
    got = submission.call("layers.initial_parameters", initial)
    expected = oracle.run("initial_parameters", initial)
    conform(got, expected, what="layers.initial_parameters")
    for name, value in expected.items():
        assert_close(got.get(name), value, what=f"initial {name} of {spec['kind']}",
                     case=str(initial))
    # float32 is ill-conditioned where a row varies little: the op table says why
    _check_run(submission, spec, LAYER_NORM.tolerances)


# ----- 5.11 activation and loss modules -----------------------------------------------
@task("5.11")
@pytest.mark.parametrize(("kind", "options"), ACTIVATIONS,
                         ids=[f"{k}({', '.join(f'{n}={v!r}' for n, v in o.items())})"
                              for k, o in ACTIVATIONS])
@settings(max_examples=examples(6))
@given(data=st.data())
def test_activation_module(submission, kind, options, data):
    """The activation module (with these options) against torch.nn: output and input
    gradient."""
    _check_run(submission, data.draw(activation_specs(kind, options)))


@task("5.11")
@pytest.mark.parametrize(("kind", "feature"), LOSSES,
                         ids=[f"{k}({f})" if f else k for k, f in LOSSES])
@settings(max_examples=examples(12))
@given(data=st.data())
def test_loss_module(submission, kind, feature, data):
    """The loss module against torch.nn, every reduction (for CrossEntropyLoss with
    ignore_index: ignored targets count for nothing; label_smoothing): the loss and the
    gradient of the logits (and of MSELoss' target)."""
    _check_run(submission, data.draw(loss_specs(kind, feature)))


# options that change where the result goes: (module, torch's function of the input)
INPLACE_OPTIONS = {"ReLU": lambda t: torch.relu(t)}


@task("5.11")
@pytest.mark.parametrize("kind", list(INPLACE_OPTIONS))
def test_inplace_option(submission, kind):
    """``inplace=True`` writes the result into the input and returns the input itself (as
    torch.nn's); ``inplace=False`` (the default) leaves the input alone and returns a new
    tensor. (The in-place machinery of task 3.1 is stubbed out here: only where the
    module puts its result is graded.)"""
    x = np.array([[-1.5, 0.0, 2.0], [3.0, -0.5, 1.0]], dtype=np.float32)
    if grading_seed():  # other values, a zero and both signs kept (the kink and both sides)
        rng = case_rng(0, "5.11 inplace", kind)
        x = (rng.uniform(0.25, 3, x.shape) * [[-1, 0, 1], [1, -1, 1]]).astype(np.float32)
    got = submission.call("layers.inplace_option", kind, x)
    mode = {"returns_input": Kind(bool), "input": Shaped(x.shape), "output": Shaped(x.shape)}
    conform(got, {"True": mode, "False": mode}, what="layers.inplace_option")
    for inplace in (True, False):
        t = torch.tensor(x)
        module = getattr(torch.nn, kind)(inplace=inplace)
        y = module(t)
        what = f"tt.nn.{kind}(inplace={inplace})(x)"
        assert_equal(got[str(inplace)]["returns_input"], y is t,
                     what=f"{what} returns x itself", case=f"x = {x.tolist()}")
        assert_close(got[str(inplace)]["output"], y.numpy(), what=f"{what}: output")
        assert_close(got[str(inplace)]["input"], t.numpy(),
                     what=f"{what}: x afterwards ({'overwritten' if inplace else 'unchanged'})")


# Logits far apart: exp overflows or underflows, so a module that is not written stably
# (log(softmax(x)), exp without subtracting the max) gives inf or NaN where torch does not.
EXTREME = np.array([[0.0, 200.0, -3.0], [-1e4, 1e4, 0.0], [1e4, 1e4 - 1.0, -1e4],
                    [-80.0, -85.0, -90.0]])
EXTREME_MODULES = [("LogSoftmax", {"dim": 1}), ("LogSoftmax", {"dim": 0}), ("Softmax", {"dim": 1}),
                   ("CrossEntropyLoss", {}), ("CrossEntropyLoss", {"reduction": "none"}),
                   ("CrossEntropyLoss", {"label_smoothing": 0.2}), ("Sigmoid", {}), ("Tanh", {})]


@task("5.11")
@pytest.mark.parametrize(("kind", "options"), EXTREME_MODULES,
                         ids=[f"{k}({', '.join(f'{n}={v!r}' for n, v in o.items())})"
                              for k, o in EXTREME_MODULES])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_module_on_extreme_logits(submission, kind, options, dtype):
    """The module (not only its functional op) is numerically stable: on logits 200 and
    2e4 apart its output and input gradient are torch's (finite), as a stable
    log-softmax gives -200 for [0, 200] where log(softmax) gives -inf."""
    rng = case_rng(0, "5.11 extreme", kind, options, dtype)
    # at other seeds than 0: the rows shuffled, each row's columns permuted, and each row
    # shifted by a drawn offset (the same gaps: as extreme)
    x = EXTREME.astype(dtype)
    target = np.array([0, 0, 1, 2], dtype=np.int64)
    if grading_seed():
        rows = rng.permutation(4)
        cols = np.array([rng.permutation(3) for _ in range(4)])
        x = (EXTREME[rows][np.arange(4)[:, None], cols] +
             rng.uniform(-50, 50, (4, 1))).astype(dtype)
        target = rng.integers(0, 3, 4)
    inputs, grads = [x], [True]
    if kind == "CrossEntropyLoss":
        inputs.append(target)
        grads.append(False)
    out_shape = () if kind == "CrossEntropyLoss" and options.get("reduction") != "none" \
        else (4,) if kind == "CrossEntropyLoss" else x.shape
    grad_output = np.linspace(-1.0, 1.0, int(np.prod(out_shape))).reshape(out_shape)
    if grading_seed():
        grad_output = rng.uniform(-1, 1, out_shape)
    spec = {"kind": kind, "kwargs": options, "inputs": inputs, "grads": grads,
            "grad_output": grad_output.astype(dtype) if out_shape else None}
    _check_run(submission, spec)


@task("5.8")
def test_kaiming_uniform_draws_from_the_generator_given(submission):
    """kaiming_uniform_(tensor, generator=g) draws from g (as torch's): the same seed of g
    gives the same values whatever the global seed, and the global generator is left
    where it was."""
    g, first, other = (case_seed(legacy, "5.8 generator", legacy) % 2**31 for legacy in (1, 0, 5))
    other = other if other != first else first + 1
    got = submission.call("layers.kaiming_uniform_with_generator", [3, 4], [g, first, other])
    conform(got, {"drawn": [Shaped([3, 4]), Shaped([3, 4])], "global_untouched": True},
            what="layers.kaiming_uniform_with_generator")

    def torch_run(seed):
        torch.manual_seed(seed)
        t = torch.empty(3, 4)
        torch.nn.init.kaiming_uniform_(t, generator=torch.Generator().manual_seed(g))
        return t, torch.rand(2)

    (drawn, after), (second, _) = torch_run(first), torch_run(other)
    torch.manual_seed(first)
    what = (f"tt.nn.init.kaiming_uniform_(tt.zeros(3, 4), generator=tt.Generator()"
            f".manual_seed({g})) after tt.manual_seed({first}) and after "
            f"tt.manual_seed({other})")
    assert_equal(bool(np.array_equal(got["drawn"][0], got["drawn"][1])),
                 bool(torch.equal(drawn, second)), what=f"{what}: the same values")
    assert_equal(got["global_untouched"], bool(torch.equal(after, torch.rand(2))),
                 what=f"{what}: the global generator left alone")
    bound = torch.nn.init.calculate_gain("leaky_relu", 0) * math.sqrt(3.0 / 4)  # fan_in 4
    assert_equal(bool(np.abs(got["drawn"][0]).max() <= bound), True,
                 what=f"{what}: every value inside U(-{bound:.4g}, {bound:.4g})")
