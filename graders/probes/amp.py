"""Probes for task 4.3: ``tt.amp.GradScaler``.

The scaler drives ``Plain``, a small optimizer of the probes' own (p -= lr * grad) built
on the submission's ``tt.optim.Optimizer`` base class, so that this task does not depend
on SGD (task 5.3). Gradients are set on ``.grad`` directly, except where a test is about
``scale(loss).backward()``; those graphs use the probes' own Functions (and the engine of
assignment 1), not the student's operators.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import probe
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


def _param(tt: Any, value: Any) -> Any:
    return tt.nn.Parameter(tt.tensor(np.asarray(value)))


def _found_inf(scaler: Any, opt: Any) -> float | None:
    """The sum of the found_inf flags recorded for ``opt`` (None when none recorded)."""
    per_device = scaler._found_inf_per_device(opt)
    if not per_device:
        return None
    return float(sum(float(np.asarray(getattr(v, "data", v))) for v in per_device.values()))


def _scaled(grad_value: np.ndarray, scale: float) -> np.ndarray:
    """A true gradient times the scale, in the gradient's dtype (what a scaled backward
    gives); overflows to inf as float32 does."""
    with np.errstate(over="ignore", invalid="ignore"):
        return (grad_value * grad_value.dtype.type(scale)).astype(grad_value.dtype)


def _play(tt: Any, scaler: Any, run: dict[str, Any], params: list[Any],
          opts: list[Any]) -> list[dict[str, Any]]:
    """Play ``run["steps"]`` (graders.strategies.amp.runs) and record every iteration."""
    records = []
    for step in run["steps"]:
        loss = scaler.scale(tt.tensor(np.float32(step["loss"])))
        scale = scaler.get_scale()
        for p, g in zip(params, step["grads"], strict=True):
            p.grad = None if g is None else tt.tensor(_scaled(np.asarray(g), scale))
        per_opt = []
        for o, opt in enumerate(opts):
            mine = [p for p, owner in zip(params, run["owners"], strict=True) if owner == o]
            seen: dict[str, Any] = {"unscaled_early": None}
            if step["unscale_first"][o]:
                scaler.unscale_(opt)
                seen["unscaled_early"] = [grad(p) for p in mine]
            calls = opt.calls
            returned = scaler.step(opt)
            seen["stepped"] = opt.calls > calls
            seen["returned"] = returned if isinstance(returned, (int, type(None))) else repr(returned)
            seen["found_inf"] = _found_inf(scaler, opt)
            seen["grads"] = [grad(p) for p in mine]
            per_opt.append(seen)
        scaler.update(step["new_scale"])
        records.append({
            "loss": array(loss),
            "optimizers": per_opt,
            "scale": scaler.get_scale(),
            "tracker": scaler._get_growth_tracker(),
            "params": [array(p) for p in params],
        })
    return records


def _setup(tt: Any, run: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    params = [_param(tt, v) for v in run["params"]]
    plain = plain_class(tt)
    opts = [plain([p for p, owner in zip(params, run["owners"], strict=True) if owner == o],
                  lr=lr) for o, lr in enumerate(run["lrs"])]
    return params, opts


@probe
def scaler_run(tt: Any, run: dict[str, Any]) -> dict[str, Any]:
    """Play a run with ``tt.amp.GradScaler("cpu", **run["config"])``: per iteration, scale a
    loss, set each .grad to its true gradient times get_scale(), optionally unscale_ each
    optimizer, step each, update; record what the scaler and optimizers did."""
    scaler = tt.amp.GradScaler("cpu", **run["config"])
    params, opts = _setup(tt, run)
    return {"steps": _play(tt, scaler, run, params, opts), "state_dict": scaler.state_dict()}


@probe
def state_dict_resume(tt: Any, run: dict[str, Any], split: int, other: dict[str, Any],
                      warm: bool) -> dict[str, Any]:
    """state_dict() of a new scaler, then after the run's first ``split`` iterations; that
    dict loaded into a second scaler (built with ``other``; when ``warm``, it has already
    scaled a loss) which plays the remaining iterations over the same parameters."""
    first = tt.amp.GradScaler("cpu", **run["config"])
    initial = first.state_dict()
    params, opts = _setup(tt, run)
    before = _play(tt, first, {**run, "steps": run["steps"][:split]}, params, opts)
    saved = first.state_dict()
    second = tt.amp.GradScaler("cpu", **other)
    if warm:
        second.scale(tt.tensor(np.float32(1.0)))
    second.load_state_dict(saved)
    loaded = second.state_dict()
    getters = [second.get_scale(), second.get_growth_factor(), second.get_backoff_factor(),
               second.get_growth_interval()]
    after = _play(tt, second, {**run, "steps": run["steps"][split:]}, params, opts)
    return {"initial": initial, "before": before, "saved": saved, "loaded": loaded,
            "getters": getters, "after": after, "final": second.state_dict(),
            "empty": raised(lambda: second.load_state_dict({}))}


def _structure(value: Any) -> Any:
    """Container types and leaf values of what scale() returned."""
    if isinstance(value, (list, tuple)):
        return {"type": type(value).__name__, "items": [_structure(v) for v in value]}
    if hasattr(value, "data") and isinstance(value.data, np.ndarray):
        return {"type": "Tensor", "value": array(value), "dtype": str(value.data.dtype)}
    return {"type": type(value).__name__}


@probe
def scale_outputs(tt: Any, init_scale: float, leaves: list[Any], nesting: list[int],
                  lr: float) -> dict[str, Any]:
    """``scaler.scale`` of each leaf array alone and of the leaves nested as
    [a, (b, [c, ...])] (``nesting`` says how many go at each level); scale() of non-tensors;
    then a scaled loss.backward() and a step: loss = sum(x * x) from the probes' own
    Functions, ``scaler.scale(loss).backward()``, ``scaler.unscale_(opt)``,
    ``scaler.step(opt)``, ``scaler.update()``."""
    scaler = tt.amp.GradScaler("cpu", init_scale=init_scale)
    tensors = [tt.tensor(np.asarray(v)) for v in leaves]
    alone = [_structure(scaler.scale(t)) for t in tensors]
    it = iter(tensors)
    level0 = [next(it) for _ in range(nesting[0])]
    level1 = [next(it) for _ in range(nesting[1])]
    level2 = [next(it) for _ in range(nesting[2])]
    nested = _structure(scaler.scale([*level0, (*level1, level2)]))
    errors = {
        "float": raised(lambda: scaler.scale(3.0)),
        "list_with_float": raised(lambda: scaler.scale([tensors[0], 3.0])),
    }
    fns = functions(tt)
    x = _param(tt, np.asarray(leaves[0], dtype=np.float32))
    opt = plain_class(tt)([x], lr=lr)
    loss = fns.sum.apply(fns.square.apply(x))
    scaled = scaler.scale(loss)
    graph = {"requires_grad": bool(scaled.requires_grad),
             "has_grad_fn": scaled.grad_fn is not None, "dtype": str(scaled.data.dtype)}
    scaled.backward()
    grad_object = x._grad
    scaled_grad = grad(x)
    scaler.unscale_(opt)
    unscaled = {"grad": grad(x), "same_object": x._grad is grad_object}
    returned = scaler.step(opt)
    scaler.update()
    return {"alone": alone, "nested": nested, "errors": errors, "scaled_loss": array(scaled),
            "graph": graph, "scaled_grad": scaled_grad, "unscaled": unscaled,
            "returned": returned, "param": array(x), "scale_after": scaler.get_scale()}


@probe
def errors(tt: Any, grad_value: float = 4.0, init_scale: float = 4.0) -> dict[str, Any]:
    """Each misuse of GradScaler, observed as exception type and message."""
    plain = plain_class(tt)
    scaler_cls = tt.amp.GradScaler
    loss = tt.tensor(np.float32(1.0))

    def setup(**kwargs: Any) -> tuple[Any, Any, Any]:
        p = _param(tt, np.ones(2, np.float32))
        p.grad = tt.tensor(np.full(2, grad_value, np.float32))
        return scaler_cls("cpu", init_scale=init_scale, **kwargs), p, plain([p], lr=0.1)

    out: dict[str, Any] = {}
    scaler, p, opt = setup()
    out["before_scale"] = {
        "unscale_": raised(lambda: scaler.unscale_(opt)),
        "step": raised(lambda: scaler.step(opt)),
        "update": raised(lambda: scaler.update()),
    }
    scaler.scale(loss)
    out["update_without_step"] = raised(lambda: scaler.update())
    out["closure"] = raised(lambda: scaler.step(opt, closure=lambda: 0.0))
    scaler.unscale_(opt)
    out["unscale_twice"] = raised(lambda: scaler.unscale_(opt))
    out["grad_after_unscale_twice"] = grad(p)
    scaler.step(opt)
    out["unscale_after_step"] = raised(lambda: scaler.unscale_(opt))
    out["step_twice"] = raised(lambda: scaler.step(opt))
    out["steps_taken"] = opt.calls
    scaler.update()
    p.grad = tt.tensor(np.full(2, grad_value, np.float32))
    scaler.scale(loss)
    out["unscale_after_update"] = raised(lambda: scaler.unscale_(opt))

    scaler, p, _ = setup()
    half = _param(tt, np.ones(2, np.float16))
    half.grad = tt.tensor(np.full(2, grad_value, np.float16))
    opt = plain([p, half], lr=0.1)
    scaler.scale(loss)
    out["fp16_unscale"] = raised(lambda: scaler.unscale_(opt))
    out["fp16_other_grad"] = grad(p)
    out["fp16_step"] = raised(lambda: scaler.step(opt))
    out["fp16_steps_taken"] = opt.calls

    out["growth_factor_1"] = raised(lambda: scaler_cls("cpu", growth_factor=1.0))
    out["backoff_factor_1"] = raised(lambda: scaler_cls("cpu", backoff_factor=1.0))
    out["disabled_bad_factors"] = raised(
        lambda: scaler_cls("cpu", growth_factor=0.5, backoff_factor=2.0, enabled=False))
    return out


@probe
def scaler_edges(tt: Any, keys: list[str] | None = None, grad_value: float = 4.0,
                 init_scale: float = 4.0, new_scale: float = 16.0) -> dict[str, Any]:
    """step() with no gradient recorded, the found_inf flags unscale_ records, and
    update(new_scale) with tensors (a 0-d one; two elements; one that requires grad);
    ``keys``: only those of the observation (what the asking test reads)."""
    plain = plain_class(tt)
    loss = tt.tensor(np.float32(1.0))
    p = _param(tt, np.ones(2, np.float32))
    opt = plain([p], lr=0.1)
    scaler = tt.amp.GradScaler("cpu", init_scale=init_scale)
    scaler.scale(loss)
    out: dict[str, Any] = {"step_without_gradients": raised(lambda: scaler.step(opt)),
                           "steps_taken": opt.calls}
    scaler = tt.amp.GradScaler("cpu", init_scale=init_scale)
    p.grad = tt.tensor(np.full(2, grad_value, np.float32))
    scaler.scale(loss)
    scaler.unscale_(opt)
    out["found_inf"] = [[str(f.data.dtype), list(f.data.shape), float(f.data)]
                        for f in scaler._found_inf_per_device(opt).values()]
    scaler.step(opt)
    out["two_elements"] = raised(
        lambda: scaler.update(tt.tensor(np.array([2.0, 3.0], np.float32))))
    out["requires_grad"] = raised(
        lambda: scaler.update(tt.tensor(np.float32(2.0), requires_grad=True)))
    out["zero_dim"] = raised(lambda: scaler.update(tt.tensor(np.float32(new_scale))))
    out["scale"] = scaler.get_scale()
    return out if keys is None else {k: out[k] for k in keys}


@probe
def disabled(tt: Any, grads: list[float] | None = None) -> dict[str, Any]:
    """``GradScaler(enabled=False)`` through a whole iteration whose gradients hold inf."""
    scaler = tt.amp.GradScaler("cpu", enabled=False)
    p = _param(tt, np.ones(3, np.float32))
    opt = plain_class(tt)([p], lr=0.5)
    x = tt.tensor(np.arange(3, dtype=np.float32))
    nested = [x, (x,)]
    out: dict[str, Any] = {
        "identity": scaler.scale(x) is x,
        "nested_identity": scaler.scale(nested) is nested,
        "is_enabled": scaler.is_enabled(),
    }
    p.grad = tt.tensor(np.array([2.0, np.inf, 4.0] if grads is None else grads, np.float32))
    scaler.unscale_(opt)
    out["grad_after_unscale"] = grad(p)
    out["returned"] = scaler.step(opt)
    out["steps_taken"] = opt.calls
    scaler.update()
    out["param"] = array(p)
    out["scale"] = scaler.get_scale()
    out["tracker"] = scaler._get_growth_tracker()
    out["state_dict"] = scaler.state_dict()
    out["load"] = raised(lambda: scaler.load_state_dict({}))
    return out


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


@probe
def underflow_demo(tt: Any, w: Any, x: Any, k: float, lr: float, iterations: int,
                   growth_interval: int) -> dict[str, Any]:
    """The fp16 loss ``k * sum(half(w) * x)`` (x float16, k tiny): one plain backward and
    step, then ``iterations`` of scale(loss).backward(), step, update with a GradScaler
    (init_scale 2**16)."""
    fns = functions(tt)
    cast = _cast_half(tt)
    x16 = tt.tensor(np.asarray(x, dtype=np.float16))

    def loss_of(param: Any) -> Any:
        return fns.scale.apply(fns.sum.apply(fns.mul.apply(cast.apply(param), x16)), k)

    plain = plain_class(tt)
    p = _param(tt, np.asarray(w, dtype=np.float32))
    opt = plain([p], lr=lr)
    loss_of(p).backward()
    opt.step()
    without = {"grad": grad(p), "param": array(p)}

    p = _param(tt, np.asarray(w, dtype=np.float32))
    opt = plain([p], lr=lr)
    scaler = tt.amp.GradScaler("cpu", init_scale=2.0**16, growth_interval=growth_interval)
    with_scaler = []
    for _ in range(iterations):
        p.grad = None
        scale_used = scaler.get_scale()
        scaler.scale(loss_of(p)).backward()
        calls = opt.calls
        scaler.step(opt)
        found = _found_inf(scaler, opt)
        unscaled = grad(p)
        scaler.update()
        with_scaler.append({"scale_used": scale_used, "found_inf": found,
                            "stepped": opt.calls > calls, "grad": unscaled,
                            "param": array(p), "scale": scaler.get_scale()})
    return {"without": without, "with": with_scaler}
