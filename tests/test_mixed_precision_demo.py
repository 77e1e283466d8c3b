"""The course's demonstration, on the reference: small float16 gradients underflow to
zero without loss scaling, and survive with dynamic loss scaling (APEX O3 against O2)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from .conftest import REFERENCE

TRUE_GRAD = 1e-8  # below float16's smallest subnormal, 2**-24 (about 6e-8)


@pytest.fixture(scope="module")
def tt():
    sys.path.insert(0, str(REFERENCE))
    try:
        import tinytrain
    finally:
        sys.path.remove(str(REFERENCE))
    return tinytrain


def _gradients(tt, opt_level: str) -> np.ndarray:
    """d/dw of TRUE_GRAD * sum(x * w) with x = 1: TRUE_GRAD for every weight, as the
    optimizer sees it after the APEX loop's unscaling."""

    class Scale(tt.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = tt.nn.Parameter(tt.ones(4))

        def forward(self, x):
            return x * self.w

    model = Scale()
    model, optimizer = tt.amp.initialize(model, tt.optim.SGD(model.parameters(), lr=1.0),
                                         opt_level=opt_level)
    loss = model(tt.ones(4)).sum() * TRUE_GRAD
    with tt.amp.scale_loss(loss, optimizer) as scaled:
        scaled.backward()
    return np.asarray([p.grad.numpy() for g in optimizer.param_groups for p in g["params"]])


def test_small_float16_gradients_underflow_without_loss_scaling(tt):
    assert np.all(_gradients(tt, "O3") == 0)  # O3: float16 weights, loss scale 1


def test_dynamic_loss_scaling_keeps_them(tt):
    grads = _gradients(tt, "O2")  # O2: loss scale 2**16, float32 master gradients
    # 1e-8 * 2**16 is held in float16 (about 3 significant digits), then unscaled
    np.testing.assert_allclose(grads, TRUE_GRAD, rtol=1e-3)
