"""Task 5.10: Dropout. Its masks come from tinytrain's generator (not torch's), so
training mode is checked by statistics and by consistency (kept elements scaled by
1 / (1 - p), the gradient through the same mask); eval mode must be the identity.
p = 1 is deterministic and compared with torch in test_layer_ops.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from graders.checks import assert_close, assert_equal
from graders.checks.structure import Kind, Shaped, conform
from graders.suites._seed import case_rng, case_seed
from graders.suites._support import task

SIGMAS = 6  # a correct dropout fails the zeroed-fraction check ~1 in 5e8 runs


def _inputs(seed: int, shape: tuple[int, ...], *key: object) -> tuple[np.ndarray, np.ndarray]:
    rng = case_rng(seed, "5.10 inputs", shape, *key)  # seed 0: today's values
    x = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)  # never 0
    return x, rng.uniform(-1.0, 1.0, shape)


def _template(shape):
    """dropout_train_eval's answer."""
    mode = {"output": Shaped(shape), "grad": Kind(None, np.ndarray), "returns_input": Kind(bool),
            "training": Kind(bool)}
    return {"train": mode, "eval": mode, "train again": mode,
            "functional eval returns input": Kind(bool)}


@task("5.10")
@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_in_training(submission, p):
    """In training mode each element is zeroed with probability p (the zeroed fraction
    of 20000 elements lies within 6 standard errors of p), the others are scaled by
    1 / (1 - p), and the gradient flows through the same mask with the same scale."""
    x, g = _inputs(1, (200, 100), p)
    got = submission.call("layers.dropout_train_eval", p, x, g,
                          case_seed(0, "5.10 training", p) % 2**31)
    conform(got, _template(x.shape), what="layers.dropout_train_eval")
    got = got["train"]
    what = f"tt.nn.Dropout({p}) in training mode on a float64 (200, 100) input without zeros"
    out = got["output"]
    kept = out != 0
    fraction = 1 - kept.mean()
    tol = SIGMAS * math.sqrt(p * (1 - p) / x.size)
    if abs(fraction - p) > tol:
        raise AssertionError(f"{what}: {fraction:.4f} of the elements are zeroed; expected "
                             f"p = {p} +- {tol:.4f} (each element is dropped with "
                             "probability p)")
    expected = np.where(kept, x / (1 - p), 0.0)
    assert_close(out, expected, what=f"{what}: output (kept elements are x / (1 - p))")
    assert_close(got["grad"], np.where(kept, g / (1 - p), 0.0),
                 what=f"{what}: input gradient (grad / (1 - p) where the element was kept, "
                      "0 where it was dropped)")


@task("5.10")
@pytest.mark.parametrize("p", [0.3, 1.0])
def test_dropout_train_versus_eval(submission, p):
    """layer.eval() makes Dropout the identity (it returns its input, and the gradient
    passes unchanged), layer.train() turns dropping back on; F.dropout(x, p, False)
    returns x itself."""
    x, g = _inputs(2, (40, 50), p)
    got = submission.call("layers.dropout_train_eval", p, x, g,
                          case_seed(3, "5.10 eval", p) % 2**31)
    conform(got, _template(x.shape), what="layers.dropout_train_eval")
    what = f"tt.nn.Dropout({p})"
    for label in ("train", "train again"):
        assert_equal(got[label]["training"], True, what=f"{what}.training ({label})")
        if not (got[label]["output"] == 0).any():
            raise AssertionError(f"{what} in training mode ({label}) dropped nothing out of "
                                 f"{x.size} elements")
    observed = got["eval"]
    assert_equal(observed["training"], False, what=f"{what}.training after layer.eval()")
    assert_close(observed["output"], x, what=f"{what} after layer.eval(): output (the identity)")
    assert_close(observed["grad"], g, what=f"{what} after layer.eval(): input gradient "
                 "(passes unchanged)")
    assert_equal(observed["returns_input"], True,
                 what=f"{what} after layer.eval() returns its input tensor itself (as torch)")
    assert_equal(got["functional eval returns input"], True,
                 what="tt.nn.functional.dropout(x, p, training=False) is x")


@task("5.10")
def test_dropout_uses_tinytrains_generator(submission):
    """Masks come from tinytrain's global generator: the same tt.manual_seed gives the
    same masks, successive calls give new ones, another seed other ones."""
    seed = case_seed(7, "5.10 masks") % 2**31
    other = case_seed(8, "5.10 masks other") % 2**31
    other = other if other != seed else seed + 1
    runs = submission.call("layers.dropout_masks", 0.5, [30, 20], [seed, seed, other], 2)
    conform(runs, [[Shaped((30, 20))] * 2] * 3, what="layers.dropout_masks")
    what = "tt.nn.functional.dropout(tt.ones(30, 20, dtype=tt.float64), 0.5)"
    for k in range(2):
        assert_close(runs[1][k], runs[0][k], rtol=0, atol=0,
                     what=f"{what}, call {k + 1} after tt.manual_seed({seed}), twice")
    for label, a, b in (("two successive calls", runs[0][0], runs[0][1]),
                        (f"tt.manual_seed({seed}) and tt.manual_seed({other})", runs[0][0],
                         runs[2][0])):
        if np.array_equal(a, b):
            raise AssertionError(f"{what}: {label} give the same mask")
    for k, out in enumerate(runs[0]):
        assert_close(np.unique(out), np.array([0.0, 2.0]),
                     what=f"{what}: the values of call {k + 1} (0 or 1 / (1 - p) = 2)")
