"""The GradScaler probes (``graders.probes.amp``) run with ``torch.amp.GradScaler("cpu")``."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch


class Plain(torch.optim.Optimizer):
    """The probes' Plain optimizer: p -= lr * grad; step() returns its call count."""

    def __init__(self, params: Any, lr: float = 0.1) -> None:
        super().__init__(params, {"lr": lr})
        self.calls = 0

    @torch.no_grad()
    def step(self) -> int:  # type: ignore[override]
        self.calls += 1
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.sub_(group["lr"] * p.grad)
        return self.calls


def _np(t: torch.Tensor | None) -> np.ndarray | None:
    return None if t is None else t.detach().numpy().copy()


def _found_inf(scaler: torch.amp.GradScaler, opt: torch.optim.Optimizer) -> float | None:
    per_device = scaler._found_inf_per_device(opt)
    if not per_device:
        return None
    return float(sum(float(v) for v in per_device.values()))


def _scaled(grad_value: np.ndarray, scale: float) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        return (grad_value * grad_value.dtype.type(scale)).astype(grad_value.dtype)


def _setup(run: dict[str, Any]) -> tuple[list[torch.Tensor], list[Plain]]:
    params = [torch.nn.Parameter(torch.tensor(np.asarray(v))) for v in run["params"]]
    opts = [Plain([p for p, owner in zip(params, run["owners"], strict=True) if owner == o],
                  lr=lr) for o, lr in enumerate(run["lrs"])]
    return params, opts


def _play(scaler: torch.amp.GradScaler, run: dict[str, Any], params: list[torch.Tensor],
          opts: list[Plain]) -> list[dict[str, Any]]:
    records = []
    for step in run["steps"]:
        loss = scaler.scale(torch.tensor(np.float32(step["loss"])))
        scale = scaler.get_scale()
        for p, g in zip(params, step["grads"], strict=True):
            p.grad = None if g is None else torch.tensor(_scaled(np.asarray(g), scale))
        per_opt = []
        for o, opt in enumerate(opts):
            mine = [p for p, owner in zip(params, run["owners"], strict=True) if owner == o]
            seen: dict[str, Any] = {"unscaled_early": None}
            if step["unscale_first"][o]:
                scaler.unscale_(opt)
                seen["unscaled_early"] = [_np(p.grad) for p in mine]
            calls = opt.calls
            seen["returned"] = scaler.step(opt)
            seen["stepped"] = opt.calls > calls
            seen["found_inf"] = _found_inf(scaler, opt)
            seen["grads"] = [_np(p.grad) for p in mine]
            per_opt.append(seen)
        scaler.update(step["new_scale"])
        records.append({
            "loss": _np(loss),
            "optimizers": per_opt,
            "scale": scaler.get_scale(),
            "tracker": scaler._get_growth_tracker(),
            "params": [_np(p) for p in params],
        })
    return records


def scaler_run(run: dict[str, Any]) -> dict[str, Any]:
    scaler = torch.amp.GradScaler("cpu", **run["config"])
    params, opts = _setup(run)
    return {"steps": _play(scaler, run, params, opts), "state_dict": scaler.state_dict()}


def state_dict_resume(run: dict[str, Any], split: int, other: dict[str, Any],
                      warm: bool) -> dict[str, Any]:
    first = torch.amp.GradScaler("cpu", **run["config"])
    initial = first.state_dict()
    params, opts = _setup(run)
    before = _play(first, {**run, "steps": run["steps"][:split]}, params, opts)
    saved = first.state_dict()
    second = torch.amp.GradScaler("cpu", **other)
    if warm:
        second.scale(torch.tensor(np.float32(1.0)))
    second.load_state_dict(saved)
    loaded = second.state_dict()
    getters = [second.get_scale(), second.get_growth_factor(), second.get_backoff_factor(),
               second.get_growth_interval()]
    after = _play(second, {**run, "steps": run["steps"][split:]}, params, opts)
    return {"initial": initial, "before": before, "saved": saved, "loaded": loaded,
            "getters": getters, "after": after, "final": second.state_dict()}


def _structure(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return {"type": type(value).__name__, "items": [_structure(v) for v in value]}
    return {"type": "Tensor", "value": _np(value), "dtype": str(value.dtype).removeprefix("torch.")}


def scale_outputs(init_scale: float, leaves: list[Any], nesting: list[int],
                  lr: float) -> dict[str, Any]:
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale)
    tensors = [torch.tensor(np.asarray(v)) for v in leaves]
    alone = [_structure(scaler.scale(t)) for t in tensors]
    it = iter(tensors)
    level0 = [next(it) for _ in range(nesting[0])]
    level1 = [next(it) for _ in range(nesting[1])]
    level2 = [next(it) for _ in range(nesting[2])]
    nested = _structure(scaler.scale([*level0, (*level1, level2)]))
    x = torch.nn.Parameter(torch.tensor(np.asarray(leaves[0], dtype=np.float32)))
    opt = Plain([x], lr=lr)
    scaled = scaler.scale((x * x).sum())
    graph = {"requires_grad": scaled.requires_grad, "has_grad_fn": scaled.grad_fn is not None,
             "dtype": str(scaled.dtype).removeprefix("torch.")}
    scaled.backward()
    scaled_grad = _np(x.grad)
    scaler.unscale_(opt)
    unscaled = {"grad": _np(x.grad), "same_object": True}
    returned = scaler.step(opt)
    scaler.update()
    return {"alone": alone, "nested": nested, "scaled_loss": _np(scaled), "graph": graph,
            "scaled_grad": scaled_grad, "unscaled": unscaled, "returned": returned,
            "param": _np(x), "scale_after": scaler.get_scale()}


def underflow_demo(w: Any, x: Any, k: float, lr: float, iterations: int,
                   growth_interval: int) -> dict[str, Any]:
    x16 = torch.tensor(np.asarray(x, dtype=np.float16))

    def loss_of(param: torch.Tensor) -> torch.Tensor:
        return (param.half() * x16).sum() * k

    p = torch.nn.Parameter(torch.tensor(np.asarray(w, dtype=np.float32)))
    opt = Plain([p], lr=lr)
    loss_of(p).backward()
    opt.step()
    without = {"grad": _np(p.grad), "param": _np(p)}

    p = torch.nn.Parameter(torch.tensor(np.asarray(w, dtype=np.float32)))
    opt = Plain([p], lr=lr)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16, growth_interval=growth_interval)
    with_scaler = []
    for _ in range(iterations):
        p.grad = None
        scale_used = scaler.get_scale()
        scaler.scale(loss_of(p)).backward()
        calls = opt.calls
        scaler.step(opt)
        found = _found_inf(scaler, opt)
        unscaled = _np(p.grad)
        scaler.update()
        with_scaler.append({"scale_used": scale_used, "found_inf": found,
                            "stepped": opt.calls > calls, "grad": unscaled,
                            "param": _np(p), "scale": scaler.get_scale()})
    return {"without": without, "with": with_scaler}


def _raised(fn: Any) -> dict[str, Any]:
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the exception is the expected observation
        return {"type": type(exc).__name__, "message": str(exc)}
    return {"type": None, "message": ""}


def errors(grad_value: float = 4.0, init_scale: float = 4.0) -> dict[str, Any]:
    """What ``graders.probes.amp.errors`` observes, in torch."""
    loss = torch.tensor(np.float32(1.0))

    def setup(**kwargs: Any) -> tuple[Any, Any, Any]:
        p = torch.nn.Parameter(torch.ones(2))
        p.grad = torch.full((2,), grad_value)
        return torch.amp.GradScaler("cpu", init_scale=init_scale, **kwargs), p, Plain([p], lr=0.1)

    out: dict[str, Any] = {}
    scaler, p, opt = setup()
    out["before_scale"] = {
        "unscale_": _raised(lambda: scaler.unscale_(opt)),
        "step": _raised(lambda: scaler.step(opt)),
        "update": _raised(lambda: scaler.update()),
    }
    scaler.scale(loss)
    out["update_without_step"] = _raised(lambda: scaler.update())
    out["closure"] = _raised(lambda: scaler.step(opt, closure=lambda: 0.0))
    scaler.unscale_(opt)
    out["unscale_twice"] = _raised(lambda: scaler.unscale_(opt))
    out["grad_after_unscale_twice"] = _np(p.grad)
    scaler.step(opt)
    out["unscale_after_step"] = _raised(lambda: scaler.unscale_(opt))
    out["step_twice"] = _raised(lambda: scaler.step(opt))
    out["steps_taken"] = opt.calls
    scaler.update()
    p.grad = torch.full((2,), grad_value)
    scaler.scale(loss)
    out["unscale_after_update"] = _raised(lambda: scaler.unscale_(opt))

    scaler, p, _ = setup()
    half = torch.nn.Parameter(torch.ones(2, dtype=torch.float16))
    half.grad = torch.full((2,), grad_value, dtype=torch.float16)
    opt = Plain([p, half], lr=0.1)
    scaler.scale(loss)
    out["fp16_unscale"] = _raised(lambda: scaler.unscale_(opt))
    out["fp16_other_grad"] = _np(p.grad)
    out["fp16_step"] = _raised(lambda: scaler.step(opt))
    out["fp16_steps_taken"] = opt.calls

    out["growth_factor_1"] = _raised(lambda: torch.amp.GradScaler("cpu", growth_factor=1.0))
    out["backoff_factor_1"] = _raised(lambda: torch.amp.GradScaler("cpu", backoff_factor=1.0))
    out["disabled_bad_factors"] = _raised(lambda: torch.amp.GradScaler(
        "cpu", growth_factor=0.5, backoff_factor=2.0, enabled=False))
    return out


def scaler_edges(keys: list[str] | None = None, grad_value: float = 4.0,
                 init_scale: float = 4.0, new_scale: float = 16.0) -> dict[str, Any]:
    """What ``graders.probes.amp.scaler_edges`` observes, in torch."""
    loss = torch.tensor(np.float32(1.0))
    p = torch.nn.Parameter(torch.ones(2))
    opt = Plain([p], lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale)
    scaler.scale(loss)
    out: dict[str, Any] = {"step_without_gradients": _raised(lambda: scaler.step(opt)),
                           "steps_taken": opt.calls}
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale)
    p.grad = torch.full((2,), grad_value)
    scaler.scale(loss)
    scaler.unscale_(opt)
    out["found_inf"] = [[str(f.dtype).removeprefix("torch."), list(f.shape), float(f)]
                        for f in scaler._found_inf_per_device(opt).values()]
    scaler.step(opt)
    out["two_elements"] = _raised(lambda: scaler.update(torch.tensor([2.0, 3.0])))
    out["requires_grad"] = _raised(lambda: scaler.update(torch.tensor(2.0, requires_grad=True)))
    out["zero_dim"] = _raised(lambda: scaler.update(torch.tensor(new_scale)))
    out["scale"] = scaler.get_scale()
    return out if keys is None else {k: out[k] for k in keys}


def disabled(grads: list[float] | None = None) -> dict[str, Any]:
    """What ``graders.probes.amp.disabled`` observes, in torch."""
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    p = torch.nn.Parameter(torch.ones(3))
    opt = Plain([p], lr=0.5)
    x = torch.arange(3, dtype=torch.float32)
    nested = [x, (x,)]
    out: dict[str, Any] = {
        "identity": scaler.scale(x) is x,
        "nested_identity": scaler.scale(nested) is nested,
        "is_enabled": scaler.is_enabled(),
    }
    p.grad = torch.tensor([2.0, np.inf, 4.0] if grads is None else grads)
    scaler.unscale_(opt)
    out["grad_after_unscale"] = _np(p.grad)
    out["returned"] = scaler.step(opt)
    out["steps_taken"] = opt.calls
    scaler.update()
    out["param"] = _np(p)
    out["scale"] = scaler.get_scale()
    out["tracker"] = scaler._get_growth_tracker()
    out["state_dict"] = scaler.state_dict()
    out["load"] = _raised(lambda: scaler.load_state_dict({}))
    return out
