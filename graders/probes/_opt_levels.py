"""APEX scenarios (task 4.4) written once against APEX's API (as ``_modules`` is against
PyTorch's): the probes run them with the submission's ``tt.amp``, the oracle with its
own model of APEX's recipes in torch (``graders.oracle.opt_levels``: APEX is not
installed, so that model is the independent part, and it stays in the oracle).

The model is ``lib.Net(weights)`` (x @ w1 + b1 -> relu -> @ w2 + b2, each op in float32
rounded once to its input's dtype), the loss ``lib.mse(out, y)`` (in float32), the
optimizer ``lib.Plain(params, lr)`` (p -= lr * grad; ``.calls`` counts its steps, so a
skipped step shows). The adapters in ``lib``: ``initialize(model, optimizer, opt_level,
[loss_scale])``, ``scale_loss(loss, optimizer)`` (a context manager), ``LossScaler(**config)``
(``loss_scale()``, ``update_scale(overflow)``); ``tensor(values)`` (a copy), ``array(t)``
(values, copied out), ``grad(p)`` (values or None), ``item(t)`` (a float).

Nothing here imports torch or the submission.
"""

from __future__ import annotations

from typing import Any


def train_run(lib: Any, level: str, weights: dict[str, Any], batches: list[Any], lr: float,
              loss_scale: float | None = None) -> list[dict[str, Any]]:
    """Train a Net at ``level`` (with ``loss_scale`` given to initialize, when not None)
    on ``batches`` ([x, y] pairs) with the APEX loop; after every step record the loss,
    the loss scale, the parameters and what the optimizer holds (the masters at O2), and
    the model's gradients after ``scale_loss`` (at O2 the scaled float16 ones: unscaling
    writes into the masters' .grad only)."""
    model = lib.Net(weights)
    opt = lib.Plain(model.parameters(), lr=lr)
    if loss_scale is None:
        model, opt = lib.initialize(model, opt, opt_level=level)
    else:
        model, opt = lib.initialize(model, opt, opt_level=level, loss_scale=loss_scale)
    records = []
    for x, y in batches:
        loss = lib.mse(model(lib.tensor(x)), lib.tensor(y))
        scale = float(opt.loss_scaler.loss_scale())
        with lib.scale_loss(loss, opt) as scaled:
            scaled.backward()
        grads = [lib.grad(p) for g in opt.param_groups for p in g["params"]]
        model_grads = [lib.grad(p) for p in model.parameters()]
        calls = opt.optimizer.calls
        opt.step()
        records.append({
            "loss": lib.item(loss),
            "scale_used": scale,
            "stepped": opt.optimizer.calls > calls,
            "optimizer_grads": grads, "model_grads": model_grads,
            "params": [lib.array(p) for p in model.parameters()],
            "optimizer_values": [lib.array(p) for g in opt.param_groups for p in g["params"]],
        })
        opt.zero_grad()
    return records


def loss_scaler_run(lib: Any, config: dict[str, Any], overflows: list[bool]) -> list[float]:
    """The loss scale of ``LossScaler(**config)`` at the start and after each
    ``update_scale(overflow)``."""
    scaler = lib.LossScaler(**config)
    seen = [float(scaler.loss_scale())]
    for overflow in overflows:
        scaler.update_scale(bool(overflow))
        seen.append(float(scaler.loss_scale()))
    return seen
