"""Expected behaviour for tasks 4.4 and 4.5: APEX's opt levels and the layer-wise policy.

APEX is not installed (and needs CUDA); its recipes are short, so the oracle spells them
out with torch tensors: the Net of ``graders.probes.opt_levels`` in the level's dtypes,
float32 math rounded once per op (as the probe's Functions and torch's kernels do),
APEX's dynamic loss scaler, master weights at O2 and the Plain optimizer.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..probes import _modules
from .modules import LIB

LEVELS = {  # cast_model_type, master weights, dynamic loss scale
    "O0": (torch.float32, False, False),
    "O1": (None, False, True),
    "O2": (torch.float16, True, True),
    "O3": (torch.float16, False, False),
}
INIT_SCALE = 2.0**16
MAX_SCALE = 2.0**24


class ApexScaler:
    """APEX's LossScaler: a static scale, or a dynamic one (``loss_scale="dynamic"``)."""

    def __init__(self, loss_scale: float | str, init_scale: float = INIT_SCALE,
                 scale_factor: float = 2.0, scale_window: int = 2000,
                 min_loss_scale: float | None = None, max_loss_scale: float = MAX_SCALE) -> None:
        self.dynamic = loss_scale == "dynamic"
        self.scale = min(max_loss_scale, init_scale) if self.dynamic else float(loss_scale)
        self.factor, self.window = scale_factor, scale_window
        self.min_scale, self.max_scale = min_loss_scale, max_loss_scale
        self.clean = 0

    def update(self, overflow: bool) -> None:
        if not self.dynamic:
            return
        if overflow:
            self.scale /= self.factor
            if self.min_scale is not None:
                self.scale = max(self.min_scale, self.scale)
            self.clean = 0
            return
        self.clean += 1
        if self.clean == self.window:
            self.scale, self.clean = min(self.max_scale, self.scale * self.factor), 0


def loss_scaler_run(config: dict[str, Any], overflows: list[bool]) -> list[float]:
    """The scale of ``LossScaler(**config)`` at the start and after each update."""
    scaler = ApexScaler(**config)
    seen = [scaler.scale]
    for overflow in overflows:
        scaler.update(overflow)
        seen.append(scaler.scale)
    return seen


def _linear32(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (x.float() @ w.float() + b.float()).to(x.dtype)


def _forward(params: list[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """The Net on ``x``, each linear on its inputs cast to x's dtype (a no-op except at
    O1, where x is float16 and the parameters float32)."""
    w1, b1, w2, b2 = (p.to(x.dtype) for p in params)
    return _linear32(torch.relu(_linear32(x, w1, b1)), w2, b2)


def train_run(level: str, weights: dict[str, Any], batches: list[Any],
              lr: float, loss_scale: float | None = None) -> list[dict[str, Any]]:
    """What ``probes.opt_levels.train_run`` must observe (``loss_scale``: a static scale
    instead of the level's). At O1 the parameters stay float32 and each linear casts its
    inputs to float16 (autocast's policy for linear); the casts' backward brings the
    gradients back to float32."""
    cast_type, master, dynamic = LEVELS[level]
    if loss_scale is not None:
        dynamic = False
    params = [torch.tensor(np.asarray(weights[n])) for n in ("w1", "b1", "w2", "b2")]
    if cast_type is not None:
        params = [p.to(cast_type) for p in params]
    params = [p.requires_grad_() for p in params]
    held = [p.detach().float().requires_grad_() for p in params] if master else params
    compute = torch.float16 if level == "O1" else params[0].dtype
    scaler = ApexScaler("dynamic" if dynamic else (loss_scale or 1.0))
    records = []
    for x, y in batches:
        scale = scaler.scale
        out = _forward(params, torch.tensor(np.asarray(x)).to(compute)).float()
        loss = ((out - torch.tensor(np.asarray(y)).float()) ** 2).mean()
        (loss * scale).backward()
        grads = [p.grad for p in params]
        overflow = dynamic and any(not torch.isfinite(g).all() for g in grads if g is not None)
        inv = torch.tensor(1.0 / scale, dtype=torch.float32)
        unscaled = [None if g is None else g.float() * inv for g in grads]
        if master:
            for h, g in zip(held, unscaled):
                h.grad = g
        elif scale != 1.0:
            for p, g in zip(params, unscaled):
                if g is not None:
                    p.grad = g.to(p.dtype)
        held_grads = [None if h.grad is None else h.grad.detach().numpy().copy() for h in held]
        model_grads = [None if p.grad is None else p.grad.detach().numpy().copy() for p in params]
        if not overflow:
            with torch.no_grad():
                for h in held:
                    if h.grad is not None:
                        h -= torch.tensor(lr, dtype=h.dtype) * h.grad
                if master:
                    for p, h in zip(params, held):
                        p.copy_(h.to(p.dtype))
        records.append({
            "loss": float(loss.detach()), "scale_used": scale, "stepped": not overflow,
            "optimizer_grads": held_grads, "model_grads": model_grads,
            "params": [p.detach().numpy().copy() for p in params],
            "optimizer_values": [h.detach().numpy().copy() for h in held],
        })
        scaler.update(overflow)
        for p in params + held:
            p.grad = None
    return records


# ----- 4.5 ---------------------------------------------------------------------------
def resolved_levels(spec: dict[str, Any], rules: dict[str, str]) -> dict[str, str | None]:
    """Each module's level: its own rule by qualified name, else by class name, else its
    parent's (names and classes from torch.nn's named_modules on the same tree)."""
    model = _modules.build(LIB, spec)
    levels: dict[str, str | None] = {}
    for name, module in model.named_modules():
        parent = name.rpartition(".")[0] if name else None
        inherited = levels.get(parent) if parent is not None else None
        levels[name] = rules.get(name, rules.get(type(module).__name__, inherited))
    return levels


def layer_policy_run(spec: dict[str, Any], rules: dict[str, str],
                     outer_autocast: bool) -> dict[str, Any]:
    """What each recording block of ``probes.opt_levels.layer_policy_run`` must see: a
    module whose level differs from its parent's casts its inputs (O0: float32, O3:
    float16; O1 none) and its outputs to float32 (O0, O3), and runs with autocast on
    (O1) or off (O0, O3); other modules run as their caller does (and hand back what
    they computed, uncast). ``returned``: the dtype each call hands its parent."""
    levels = resolved_levels(spec, rules)
    model = _modules.build(LIB, spec)
    children = {name: [f"{name}.{c}" if name else c for c, _ in m.named_children()]
                for name, m in model.named_modules()}
    seen: dict[str, Any] = {}
    returned: dict[str, list[str]] = {}

    def call(name: str, dtype: str, autocast_on: bool) -> str:
        level = levels[name]
        parent = name.rpartition(".")[0] if name else None
        wrapped = level is not None and (parent is None or levels[parent] != level)
        if wrapped and level == "O1":
            autocast_on = True
        elif wrapped:
            autocast_on = False
            dtype = "float16" if level == "O3" else "float32"
        own = "float16" if level == "O3" else "float32"
        has_w = any(n == "w" for n, _ in model.get_submodule(name).named_parameters(
            recurse=False))
        seen.setdefault(name, []).append([autocast_on, dtype, own if has_w else None])
        for child in children[name]:
            dtype = call(child, dtype, autocast_on)
            returned.setdefault(child, []).append(dtype)
        return "float32" if wrapped and level != "O1" else dtype

    out = call("", "float32", outer_autocast)
    params, values = {}, {}
    for name, module in model.named_modules():
        for p, tensor in module.named_parameters(recurse=False):
            # cast once, from its float32 values, for its own module's level only
            own = np.float16 if levels[name] == "O3" else np.float32
            params[f"{name}.{p}"] = np.dtype(own).name
            values[f"{name}.{p}"] = tensor.detach().numpy().astype(np.float32).astype(own)
    return {"seen": seen, "returned": returned, "param_dtypes": params,
            "param_values": values, "output_dtype": out}


def layer_policy_params(spec: dict[str, Any], rules: dict[str, str]) -> dict[str, np.ndarray]:
    """The parameters of ``probes.opt_levels.layer_policy_params``: each module casts its
    own parameters (``parameters(recurse=False)``), once, from their float32 values, to its
    level's dtype (O3: float16, else float32); a module nested in one at another level is
    not cast by its ancestors."""
    levels = resolved_levels(spec, rules)
    model = _modules.build(LIB, spec)
    for name, module in model.named_modules():
        if levels[name] is None:
            continue
        dtype = torch.float16 if levels[name] == "O3" else torch.float32
        for param in module.parameters(recurse=False):
            param.data = param.data.to(dtype)
    return {f"{name}.{p}": t.detach().numpy().copy() for name, module in model.named_modules()
            for p, t in module.named_parameters(recurse=False)}
