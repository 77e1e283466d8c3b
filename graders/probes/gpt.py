"""Probes for tasks 5.12-5.14: causal self-attention, the GPT model and end-to-end
training, with the weights the grader sends (taken from its PyTorch twin,
``graders.oracle.gpt``), by parameter name.

The scenarios the oracle runs too are in ``_gpt`` (written once against PyTorch's API).
Models are built with Linear's and Embedding's ``reset_parameters`` switched off (every
weight is overwritten anyway), so these tasks do not need task 5.8's initialisation.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np

from . import _gpt as scenarios
from . import probe
from ._observe import array, grad


def _build(tt: Any, make: Callable[[], Any]) -> Any:
    """``make()`` with Linear and Embedding initialisation turned off."""
    classes = (tt.nn.Linear, tt.nn.Embedding)
    saved = [cls.__dict__.get("reset_parameters") for cls in classes]
    for cls in classes:
        cls.reset_parameters = lambda self: None
    try:
        return make()
    finally:
        for cls, method in zip(classes, saved, strict=True):
            if method is None:
                del cls.reset_parameters
            else:
                cls.reset_parameters = method


def _lib(tt: Any) -> SimpleNamespace:
    """The adapter ``_gpt``'s scenarios expect."""
    return SimpleNamespace(
        tensor=lambda values, requires_grad=False: (
            tt.tensor(values).requires_grad_(True) if requires_grad else tt.tensor(values)),
        array=array, grad=grad)


_at = scenarios.at  # the other probes find weights by name with it too


def _load(module: Any, weights: dict[str, np.ndarray]) -> None:
    for name, value in weights.items():
        _at(module, name).data = np.array(value, copy=True)


def _attention(tt: Any, cfg: dict[str, Any], weights: dict[str, np.ndarray]) -> Any:
    config = tt.models.GPTConfig(**cfg)
    module = _build(tt, lambda: tt.models.CausalSelfAttention(config))
    _load(module, weights)
    return module


def _gpt(tt: Any, cfg: dict[str, Any], weights: dict[str, np.ndarray]) -> Any:
    config = tt.models.GPTConfig(**cfg)
    model = _build(tt, lambda: tt.models.GPT(config))
    _load(model, weights)
    return model


@probe
def attention(tt: Any, cfg: dict[str, Any], weights: dict[str, np.ndarray], x: np.ndarray,
              grad_output: np.ndarray) -> dict[str, Any]:
    """CausalSelfAttention(GPTConfig(**cfg)) with ``weights``: the output for ``x`` and,
    after backward with ``grad_output``, the gradients of every weight and of ``x``."""
    module = _attention(tt, cfg, weights)
    return scenarios.attention(_lib(tt), module, list(weights), x, grad_output)


@probe
def attention_causality(tt: Any, cfg: dict[str, Any], weights: dict[str, np.ndarray],
                        x: np.ndarray, x_changed: np.ndarray, t: int) -> dict[str, Any]:
    """Outputs for ``x`` and for ``x_changed`` (which differs from ``x`` at positions
    >= t only), and the gradient of ``out[:, :t].sum()`` with respect to ``x``."""
    module = _attention(tt, cfg, weights)
    inputs = tt.tensor(x).requires_grad_(True)
    out = module(inputs)
    out[:, :t].sum().backward()
    with tt.no_grad():
        changed = module(tt.tensor(x_changed))
    return {"output": array(out), "output_changed": array(changed),
            "input_grad": grad(inputs)}


@probe
def gpt_forward(tt: Any, cfg: dict[str, Any], weights: dict[str, np.ndarray],
                idx: np.ndarray, targets: np.ndarray) -> dict[str, Any]:
    """GPT(GPTConfig(**cfg)) with ``weights``: logits and loss for ``idx`` and
    ``targets``, the gradient of the loss for every weight, and the logits without
    targets (loss None)."""
    model = _gpt(tt, cfg, weights)
    return scenarios.gpt_forward(_lib(tt), model, list(weights), idx, targets)


@probe
def gpt_logits(tt: Any, cfg: dict[str, Any], weights: dict[str, np.ndarray],
               batches: list[np.ndarray]) -> list[np.ndarray]:
    """The logits for each batch of token indices (without gradients)."""
    model = _gpt(tt, cfg, weights)
    with tt.no_grad():
        return [array(model(tt.tensor(idx))[0]) for idx in batches]


@probe
def param_groups(tt: Any, cfg: dict[str, Any], weights: dict[str, np.ndarray],
                 options: dict[str, Any]) -> list[dict[str, Any]]:
    """``model.configure_optimizers(**options)``: its type and, per parameter group, the
    names of its parameters (in order) and its hyperparameters."""
    return scenarios.param_groups(_gpt(tt, cfg, weights), list(weights), options)


@probe
def train(tt: Any, cfg: dict[str, Any], weights: dict[str, np.ndarray],
          batches: list[list[np.ndarray]], options: dict[str, Any]) -> dict[str, Any]:
    """From ``weights``, one step per batch of (idx, targets): zero_grad, forward,
    backward, step, with the model's own ``configure_optimizers(**options)``. The loss
    of each step (before its update) and every weight at the end."""
    return scenarios.train(_lib(tt), _gpt(tt, cfg, weights), list(weights), batches, options)

