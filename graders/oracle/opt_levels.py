"""Expected behaviour for tasks 4.4 and 4.5: APEX's opt levels and the layer-wise policy.

4.4: the training loop and the scaler's run are the scenarios of
``graders.probes._opt_levels`` (written once; the probes run them with the submission),
run here with torch through ``LIB``. APEX is not installed (and needs CUDA); its recipes
are short, so what the loop drives is spelled out here with torch tensors, an
independent oracle, not a twin: ``initialize`` (the level's dtypes and casts, float32
masters at O2), ``scale_loss`` (unscaling in float32, a step skipped after an overflow),
APEX's loss scaler, on the probes' Net (float32 math rounded once per op, as the probe's
Functions and torch's kernels do) and the Plain optimizer.

4.5 stays independent too: torch has no layer-wise policy, so its rule (levels by name,
class or parent; casts where the level changes) is computed here, on the module trees of
``probes._modules`` that both sides build.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from ..probes import _modules, _opt_levels
from .modules import LIB as MODULES_LIB

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

    def loss_scale(self) -> float:
        return self.scale

    def update_scale(self, overflow: bool) -> None:
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


def _linear32(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (x.float() @ w.float() + b.float()).to(x.dtype)


class Net(torch.nn.Module):
    """The probes' Net in torch; each linear casts its parameters to x's dtype (a no-op
    except at O1, where x is float16 and the parameters float32: autocast's policy for
    linear)."""

    def __init__(self, weights: dict[str, Any]) -> None:
        super().__init__()
        for name in ("w1", "b1", "w2", "b2"):
            setattr(self, name, torch.nn.Parameter(torch.tensor(np.asarray(weights[name]))))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w1, b1, w2, b2 = (p.to(x.dtype) for p in (self.w1, self.b1, self.w2, self.b2))
        return _linear32(torch.relu(_linear32(x, w1, b1)), w2, b2)


class Plain:
    """The probes' Plain optimizer: p -= lr * grad; ``calls`` counts its steps. Only the
    ``param_groups`` of torch.optim.Optimizer: building one imports torch._dynamo (1-3 s),
    which the grading of this task would pay for nothing else."""

    def __init__(self, params: Any, lr: float) -> None:
        self.param_groups = [{"params": list(params), "lr": lr}]
        self.calls = 0

    @torch.no_grad()
    def step(self) -> None:
        self.calls += 1
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.sub_(group["lr"] * p.grad)


class AmpOptimizer:
    """What APEX's ``initialize`` returns: the optimizer (holding the float32 masters at
    O2), its loss scaler, and a step skipped once after an overflow that, at O2, copies
    the masters back into the model."""

    def __init__(self, optimizer: Any, scaler: ApexScaler, params: list[torch.Tensor],
                 masters: list[torch.Tensor] | None) -> None:
        self.optimizer, self.param_groups, self.loss_scaler = (
            optimizer, optimizer.param_groups, scaler)
        self.params, self.masters, self.skip = params, masters, False

    def step(self) -> None:
        if self.skip:
            self.skip = False
            return
        self.optimizer.step()
        if self.masters is not None:
            with torch.no_grad():
                for p, h in zip(self.params, self.masters, strict=True):
                    p.copy_(h.to(p.dtype))

    def zero_grad(self) -> None:
        for p in self.params + (self.masters or []):
            p.grad = None


def initialize(model: torch.nn.Module, optimizer: Any, opt_level: str,
               loss_scale: float | None = None) -> tuple[torch.nn.Module, AmpOptimizer]:
    """APEX's recipe for ``opt_level``: cast the model, cast its inputs (float16 except at
    O0; at O1 as autocast does for the Net's linears) and at O2/O3 its output to float32,
    put float32 masters in the optimizer at O2; ``loss_scale``: a static scale instead
    of the level's."""
    cast_type, master, dynamic = LEVELS[opt_level]
    scaler = ApexScaler(("dynamic" if dynamic else 1.0) if loss_scale is None else loss_scale)
    if cast_type is not None:
        model.to(cast_type)
    forward, compute = model.forward, torch.float32 if opt_level == "O0" else torch.float16
    if opt_level == "O1":
        model.forward = lambda x: forward(x.to(compute))
    else:
        model.forward = lambda x: forward(x.to(compute)).float()
    params = [p for g in optimizer.param_groups for p in g["params"]]
    masters = None
    if master:
        masters = [p.detach().float().requires_grad_() for p in params]
        copies = iter(masters)
        for group in optimizer.param_groups:
            group["params"] = [next(copies) for _ in group["params"]]
    return model, AmpOptimizer(optimizer, scaler, params, masters)


@contextmanager
def scale_loss(loss: torch.Tensor, optimizer: AmpOptimizer) -> Iterator[torch.Tensor]:
    """APEX's scale_loss: the loss times the scale; on exit every gradient is unscaled in
    float32 (into the masters' .grad at O2, in place otherwise unless the scale is 1), an
    overflow (dynamic scale only) skips the next step, and the scale is updated."""
    scale = optimizer.loss_scaler.loss_scale()
    yield loss * scale
    grads = [p.grad for p in optimizer.params]
    overflow = optimizer.loss_scaler.dynamic and any(
        not torch.isfinite(g).all() for g in grads if g is not None)
    inv = torch.tensor(1.0 / scale, dtype=torch.float32)
    unscaled = [None if g is None else g.float() * inv for g in grads]
    if optimizer.masters is not None:
        for h, g in zip(optimizer.masters, unscaled, strict=True):
            h.grad = g
    elif scale != 1.0:
        for p, g in zip(optimizer.params, unscaled, strict=True):
            if g is not None:
                p.grad = g.to(p.dtype)
    optimizer.skip = overflow
    optimizer.loss_scaler.update_scale(overflow)


def _np(t: torch.Tensor | None) -> np.ndarray | None:
    return None if t is None else t.detach().numpy().copy()


LIB = SimpleNamespace(
    Net=Net, mse=lambda out, y: ((out.float() - y.float()) ** 2).mean(), Plain=Plain,
    initialize=initialize, scale_loss=scale_loss, LossScaler=ApexScaler,
    tensor=lambda values: torch.tensor(np.asarray(values)),
    array=_np, grad=lambda p: _np(p.grad), item=lambda t: float(t.detach()),
)


def train_run(level: str, weights: dict[str, Any], batches: list[Any],
              lr: float, loss_scale: float | None = None) -> list[dict[str, Any]]:
    """What ``probes.opt_levels.train_run`` must observe: ``_opt_levels.train_run`` on
    the torch Net with this module's APEX (``loss_scale``: a static scale instead of the
    level's)."""
    return _opt_levels.train_run(LIB, level, weights, batches, lr, loss_scale)


def loss_scaler_run(config: dict[str, Any], overflows: list[bool]) -> list[float]:
    """The scale of ``LossScaler(**config)`` at the start and after each update."""
    return _opt_levels.loss_scaler_run(LIB, config, overflows)


# ----- 4.5 ---------------------------------------------------------------------------
def resolved_levels(spec: dict[str, Any], rules: dict[str, str]) -> dict[str, str | None]:
    """Each module's level: its own rule by qualified name, else by class name, else its
    parent's (names and classes from torch.nn's named_modules on the same tree)."""
    model = _modules.build(MODULES_LIB, spec)
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
    model = _modules.build(MODULES_LIB, spec)
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
    model = _modules.build(MODULES_LIB, spec)
    for name, module in model.named_modules():
        if levels[name] is None:
            continue
        dtype = torch.float16 if levels[name] == "O3" else torch.float32
        for param in module.parameters(recurse=False):
            param.data = param.data.to(dtype)
    return {f"{name}.{p}": t.detach().numpy().copy() for name, module in model.named_modules()
            for p, t in module.named_parameters(recurse=False)}
