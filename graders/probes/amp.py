"""Probes for task 4.3: ``tt.amp.GradScaler``, through the scenarios of ``_amp`` (written
once; the oracle runs them with torch).

The scaler drives ``Plain``, a small optimizer of the probes' own (p -= lr * grad) built
on the submission's ``tt.optim.Optimizer`` base class, so that this task does not depend
on SGD (task 5.3). The graphs of ``scale(loss).backward()`` use the probes' own Functions
(and the engine of assignment 1), not the student's operators.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from . import _amp, probe
from ._functions import functions
from ._observe import array, grad, raised


def plain_class(tt: Any) -> type:
    """``Plain(params, lr)``: p -= lr * p.grad for every parameter with a gradient;
    ``step()`` returns how many times it has run (so a skipped step shows)."""

    class Plain(tt.optim.Optimizer):
        def __init__(self, params: Any, lr: float = 0.1) -> None:
            super().__init__(params, {"lr": lr})
            self.calls = 0

        def step(self) -> int:
            self.calls += 1
            for group in self.param_groups:
                for p in group["params"]:
                    if p._grad is not None:
                        p.data -= group["lr"] * p._grad.data
                        p._bump_version()
            return self.calls

    return Plain


def _cast_half(tt: Any) -> type:
    class CastHalf(tt.autograd.Function):
        """float32 -> float16; the engine casts the gradient back to float32."""

        @staticmethod
        def forward(ctx: Any, a: Any) -> np.ndarray:
            return a.data.astype(np.float16)

        @staticmethod
        def backward(ctx: Any, grad_out: np.ndarray) -> np.ndarray:
            return grad_out

    return CastHalf


def _lib(tt: Any) -> SimpleNamespace:
    """The adapters ``_amp`` needs, for tinytrain."""
    fns = functions(tt)
    cast = _cast_half(tt)

    def tensor(values: Any, requires_grad: bool = False) -> Any:
        return tt.tensor(values, requires_grad=True) if requires_grad else tt.tensor(values)

    def set_grad(p: Any, values: np.ndarray | None) -> None:
        p.grad = None if values is None else tt.tensor(values)

    return SimpleNamespace(
        scaler=lambda **kwargs: tt.amp.GradScaler("cpu", **kwargs),
        Plain=plain_class(tt),
        param=lambda values: tt.nn.Parameter(tt.tensor(np.asarray(values))),
        tensor=tensor,
        set_grad=set_grad,
        array=array,
        grad=grad,
        grad_object=lambda p: p._grad,
        # duck-typed: any object with a NumPy ``.data`` is the submission's tensor
        is_tensor=lambda x: hasattr(x, "data") and isinstance(x.data, np.ndarray),
        dtype=lambda t: str(t.data.dtype),
        shape=lambda t: tuple(t.data.shape),
        item=lambda t: float(np.asarray(getattr(t, "data", t))),
        square_sum=lambda x: fns.sum.apply(fns.square.apply(x)),
        half_loss=lambda p, x16, k: fns.scale.apply(
            fns.sum.apply(fns.mul.apply(cast.apply(p), x16)), k),
        raised=raised,
    )


@probe
def scaler_run(tt: Any, run: dict[str, Any]) -> dict[str, Any]:
    """``_amp.scaler_run``: a run played with ``tt.amp.GradScaler("cpu", **run["config"])``."""
    return _amp.scaler_run(_lib(tt), run)


@probe
def state_dict_resume(tt: Any, run: dict[str, Any], split: int, other: dict[str, Any],
                      warm: bool) -> dict[str, Any]:
    """``_amp.state_dict_resume``: state_dict() saved mid-run, loaded into a second scaler."""
    return _amp.state_dict_resume(_lib(tt), run, split, other, warm)


@probe
def scale_outputs(tt: Any, init_scale: float, leaves: list[Any], nesting: list[int],
                  lr: float) -> dict[str, Any]:
    """``_amp.scale_outputs``: scale() of tensors and nestings, then a scaled backward."""
    return _amp.scale_outputs(_lib(tt), init_scale, leaves, nesting, lr)


@probe
def errors(tt: Any, grad_value: float = 4.0, init_scale: float = 4.0) -> dict[str, Any]:
    """``_amp.errors``: each misuse of GradScaler."""
    return _amp.errors(_lib(tt), grad_value, init_scale)


@probe
def scaler_edges(tt: Any, keys: list[str] | None = None, grad_value: float = 4.0,
                 init_scale: float = 4.0, new_scale: float = 16.0) -> dict[str, Any]:
    """``_amp.scaler_edges``: step() without gradients, found_inf, update(new_scale)."""
    return _amp.scaler_edges(_lib(tt), keys, grad_value, init_scale, new_scale)


@probe
def disabled(tt: Any, grads: list[float] | None = None) -> dict[str, Any]:
    """``_amp.disabled``: ``GradScaler(enabled=False)`` through a whole iteration."""
    return _amp.disabled(_lib(tt), grads)


@probe
def underflow_demo(tt: Any, w: Any, x: Any, k: float, lr: float, iterations: int,
                   growth_interval: int) -> dict[str, Any]:
    """``_amp.underflow_demo``: an fp16 loss that underflows, with and without a scaler."""
    return _amp.underflow_demo(_lib(tt), w, x, k, lr, iterations, growth_interval)
