"""Probes for tasks 5.12-5.14: causal self-attention, the GPT model and end-to-end
training, with the weights the grader sends (taken from its PyTorch twin,
``graders.oracle.gpt``), by parameter name.

Models are built with Linear's and Embedding's ``reset_parameters`` switched off (every
weight is overwritten anyway), so these tasks do not need task 5.8's initialisation.
Parameters are found by their dotted names (attribute access), not through
``named_parameters``, except where the task itself uses it (configure_optimizers).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

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


def _at(module: Any, name: str) -> Any:
    """The tensor registered under the dotted ``name``."""
    for part in name.split("."):
        module = getattr(module, part)
    return module


def _load(module: Any, weights: dict[str, np.ndarray]) -> None:
    for name, value in weights.items():
        _at(module, name).data = np.array(value, copy=True)


def _grads(module: Any, names: list[str]) -> dict[str, np.ndarray | None]:
    return {name: grad(_at(module, name)) for name in names}


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
    inputs = tt.tensor(x).requires_grad_(True)
    out = module(inputs)
    out.backward(tt.tensor(grad_output))
    return {"output": array(out), "grads": _grads(module, list(weights)),
            "input_grad": grad(inputs)}


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
    logits, loss = model(tt.tensor(idx), tt.tensor(targets))
    loss.backward()
    plain_logits, plain_loss = model(tt.tensor(idx))
    return {"logits": array(logits), "loss": array(loss), "grads": _grads(model, list(weights)),
            "logits_without_targets": array(plain_logits),
            "loss_without_targets": None if plain_loss is None else array(plain_loss)}


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
    model = _gpt(tt, cfg, weights)
    opt = model.configure_optimizers(**options)
    names = {id(_at(model, name)): name for name in weights}
    return [{"type": type(opt).__name__,
             "params": [names.get(id(p), "<not a parameter of the model>")
                        for p in group["params"]],
             **{k: [float(x) for x in v] if isinstance(v, tuple) else v
                for k, v in group.items()
                if k in ("lr", "weight_decay", "betas", "eps", "amsgrad")}}
            for group in opt.param_groups]


@probe
def train(tt: Any, cfg: dict[str, Any], weights: dict[str, np.ndarray],
          batches: list[list[np.ndarray]], options: dict[str, Any]) -> dict[str, Any]:
    """From ``weights``, one step per batch of (idx, targets): zero_grad, forward,
    backward, step, with the model's own ``configure_optimizers(**options)``. The loss
    of each step (before its update) and every weight at the end."""
    model = _gpt(tt, cfg, weights)
    opt = model.configure_optimizers(**options)
    losses = []
    for idx, targets in batches:
        opt.zero_grad()
        _, loss = model(tt.tensor(idx), tt.tensor(targets))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"losses": np.array(losses),
            "params": {name: array(_at(model, name)) for name in weights}}
