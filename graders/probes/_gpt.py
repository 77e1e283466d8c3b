"""GPT scenarios (tasks 5.12-5.14) written once against PyTorch's API (as ``_modules``):
the probes run them on the submission's ``tt.models`` GPT, the oracle on its torch twin
(``graders.oracle.gpt``), each built with the same weights.

``names`` are the dotted names of the weights (nanoGPT's, the same on both sides; a
tied weight once); a weight is found by attribute access (``at``), not through
``named_parameters``, except where the task itself uses it (``configure_optimizers``).
The adapters in ``lib``: ``tensor(values, requires_grad=False)`` (a copy),
``array(t)`` (values, copied out), ``grad(p)`` (values or None).

Nothing here imports torch or the submission.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def at(module: Any, name: str) -> Any:
    """The tensor registered under the dotted ``name``."""
    for part in name.split("."):
        module = getattr(module, part)
    return module


def _grads(lib: Any, module: Any, names: list[str]) -> dict[str, np.ndarray | None]:
    return {name: lib.grad(at(module, name)) for name in names}


def attention(lib: Any, module: Any, names: list[str], x: np.ndarray,
              grad_output: np.ndarray) -> dict[str, Any]:
    """A CausalSelfAttention's output for ``x`` and, after backward with ``grad_output``,
    the gradients of every weight and of ``x``."""
    inputs = lib.tensor(x, requires_grad=True)
    out = module(inputs)
    out.backward(lib.tensor(grad_output))
    return {"output": lib.array(out), "grads": _grads(lib, module, names),
            "input_grad": lib.grad(inputs)}


def gpt_forward(lib: Any, model: Any, names: list[str], idx: np.ndarray,
                targets: np.ndarray) -> dict[str, Any]:
    """A GPT's logits and loss for ``idx`` and ``targets``, the gradient of the loss for
    every weight, and the logits without targets (loss None)."""
    logits, loss = model(lib.tensor(idx), lib.tensor(targets))
    loss.backward()
    plain_logits, plain_loss = model(lib.tensor(idx))
    return {"logits": lib.array(logits), "loss": lib.array(loss),
            "grads": _grads(lib, model, names),
            "logits_without_targets": lib.array(plain_logits),
            "loss_without_targets": None if plain_loss is None else lib.array(plain_loss)}


def param_groups(model: Any, names: list[str], options: dict[str, Any]) -> list[dict[str, Any]]:
    """``model.configure_optimizers(**options)``: its type and, per parameter group, the
    names of its parameters (in order) and its hyperparameters."""
    opt = model.configure_optimizers(**options)
    by_id = {id(at(model, name)): name for name in names}
    return [{"type": type(opt).__name__,
             "params": [by_id.get(id(p), "<not a parameter of the model>")
                        for p in group["params"]],
             **{k: [float(x) for x in v] if isinstance(v, tuple) else v
                for k, v in group.items()
                if k in ("lr", "weight_decay", "betas", "eps", "amsgrad")}}
            for group in opt.param_groups]


def train(lib: Any, model: Any, names: list[str], batches: list[list[np.ndarray]],
          options: dict[str, Any]) -> dict[str, Any]:
    """One step per batch of (idx, targets): zero_grad, forward, backward, step, with the
    model's own ``configure_optimizers(**options)``. The loss of each step (before its
    update) and every weight at the end."""
    opt = model.configure_optimizers(**options)
    losses = []
    for idx, targets in batches:
        opt.zero_grad()
        _, loss = model(lib.tensor(idx), lib.tensor(targets))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"losses": np.array(losses),
            "params": {name: lib.array(at(model, name)) for name in names}}
