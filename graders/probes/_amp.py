"""GradScaler scenarios (task 4.3) written once against PyTorch's ``torch.amp`` API (as
``_modules``): the probes run them with the submission's tinytrain, the oracle with torch.

The scaler drives ``lib.Plain``, a small optimizer (p -= lr * grad; ``step()`` returns how
many times it has run, so a skipped step shows): the probes build theirs on the
submission's ``tt.optim.Optimizer`` base class, so this task does not depend on SGD (5.3).
Gradients are set on ``.grad`` directly, except where a test is about
``scale(loss).backward()``; those losses (``lib.square_sum``, ``lib.half_loss``) use the
probes' own Functions on the tinytrain side. The adapters in ``lib``:

- ``scaler(**kwargs)``: ``GradScaler("cpu", **kwargs)``; ``Plain(params, lr)``;
- ``param(values)``, ``tensor(values, requires_grad=False)``, ``set_grad(p, values | None)``;
- ``array(t)``, ``grad(p)`` (values or None), ``grad_object(p)``, ``is_tensor(x)``,
  ``dtype(t)`` (a name such as "float32"), ``shape(t)``, ``item(t)`` (a float);
- ``square_sum(x)``: sum(x * x); ``half_loss(p, x16, k)``: k * sum(half(p) * x16);
- ``raised(fn)``: what ``fn`` raised, as ``{"type", "message"}``.

Nothing here imports torch or the submission.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def found_inf(lib: Any, scaler: Any, opt: Any) -> float | None:
    """The sum of the found_inf flags recorded for ``opt`` (None when none recorded)."""
    per_device = scaler._found_inf_per_device(opt)
    if not per_device:
        return None
    return float(sum(lib.item(v) for v in per_device.values()))


def scaled(grad_value: np.ndarray, scale: float) -> np.ndarray:
    """A true gradient times the scale, in the gradient's dtype (what a scaled backward
    gives); overflows to inf as float32 does."""
    with np.errstate(over="ignore", invalid="ignore"):
        return (grad_value * grad_value.dtype.type(scale)).astype(grad_value.dtype)


def _returned(value: Any) -> Any:
    return value if isinstance(value, (int, type(None))) else repr(value)


def play(lib: Any, scaler: Any, run: dict[str, Any], params: list[Any],
         opts: list[Any]) -> list[dict[str, Any]]:
    """Play ``run["steps"]`` (graders.strategies.amp.runs) and record every iteration."""
    records = []
    for step in run["steps"]:
        loss = scaler.scale(lib.tensor(np.float32(step["loss"])))
        scale = scaler.get_scale()
        for p, g in zip(params, step["grads"], strict=True):
            lib.set_grad(p, None if g is None else scaled(np.asarray(g), scale))
        per_opt = []
        for o, opt in enumerate(opts):
            mine = [p for p, owner in zip(params, run["owners"], strict=True) if owner == o]
            seen: dict[str, Any] = {"unscaled_early": None}
            if step["unscale_first"][o]:
                scaler.unscale_(opt)
                seen["unscaled_early"] = [lib.grad(p) for p in mine]
            calls = opt.calls
            returned = scaler.step(opt)
            seen["stepped"] = opt.calls > calls
            seen["returned"] = _returned(returned)
            seen["found_inf"] = found_inf(lib, scaler, opt)
            seen["grads"] = [lib.grad(p) for p in mine]
            per_opt.append(seen)
        scaler.update(step["new_scale"])
        records.append({
            "loss": lib.array(loss),
            "optimizers": per_opt,
            "scale": scaler.get_scale(),
            "tracker": scaler._get_growth_tracker(),
            "params": [lib.array(p) for p in params],
        })
    return records


def setup(lib: Any, run: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """The run's parameters and one Plain optimizer per owner."""
    params = [lib.param(np.asarray(v)) for v in run["params"]]
    opts = [lib.Plain([p for p, owner in zip(params, run["owners"], strict=True) if owner == o],
                      lr=lr) for o, lr in enumerate(run["lrs"])]
    return params, opts


def scaler_run(lib: Any, run: dict[str, Any]) -> dict[str, Any]:
    """Play a run with ``GradScaler("cpu", **run["config"])``: per iteration, scale a
    loss, set each .grad to its true gradient times get_scale(), optionally unscale_ each
    optimizer, step each, update; record what the scaler and optimizers did."""
    scaler = lib.scaler(**run["config"])
    params, opts = setup(lib, run)
    return {"steps": play(lib, scaler, run, params, opts), "state_dict": scaler.state_dict()}


def state_dict_resume(lib: Any, run: dict[str, Any], split: int, other: dict[str, Any],
                      warm: bool) -> dict[str, Any]:
    """state_dict() of a new scaler, then after the run's first ``split`` iterations; that
    dict loaded into a second scaler (built with ``other``; when ``warm``, it has already
    scaled a loss) which plays the remaining iterations over the same parameters."""
    first = lib.scaler(**run["config"])
    initial = first.state_dict()
    params, opts = setup(lib, run)
    before = play(lib, first, {**run, "steps": run["steps"][:split]}, params, opts)
    saved = first.state_dict()
    second = lib.scaler(**other)
    if warm:
        second.scale(lib.tensor(np.float32(1.0)))
    second.load_state_dict(saved)
    loaded = second.state_dict()
    getters = [second.get_scale(), second.get_growth_factor(), second.get_backoff_factor(),
               second.get_growth_interval()]
    after = play(lib, second, {**run, "steps": run["steps"][split:]}, params, opts)
    return {"initial": initial, "before": before, "saved": saved, "loaded": loaded,
            "getters": getters, "after": after, "final": second.state_dict(),
            "empty": lib.raised(lambda: second.load_state_dict({}))}


def structure(lib: Any, value: Any) -> Any:
    """Container types and leaf values of what scale() returned."""
    if isinstance(value, (list, tuple)):
        return {"type": type(value).__name__, "items": [structure(lib, v) for v in value]}
    if lib.is_tensor(value):
        return {"type": "Tensor", "value": lib.array(value), "dtype": lib.dtype(value)}
    return {"type": type(value).__name__}


def scale_outputs(lib: Any, init_scale: float, leaves: list[Any], nesting: list[int],
                  lr: float) -> dict[str, Any]:
    """``scaler.scale`` of each leaf array alone and of the leaves nested as
    [a, (b, [c, ...])] (``nesting`` says how many go at each level); scale() of non-tensors;
    then a scaled loss.backward() and a step: loss = sum(x * x),
    ``scaler.scale(loss).backward()``, ``scaler.unscale_(opt)``, ``scaler.step(opt)``,
    ``scaler.update()``."""
    scaler = lib.scaler(init_scale=init_scale)
    tensors = [lib.tensor(np.asarray(v)) for v in leaves]
    alone = [structure(lib, scaler.scale(t)) for t in tensors]
    it = iter(tensors)
    level0 = [next(it) for _ in range(nesting[0])]
    level1 = [next(it) for _ in range(nesting[1])]
    level2 = [next(it) for _ in range(nesting[2])]
    nested = structure(lib, scaler.scale([*level0, (*level1, level2)]))
    errors = {
        "float": lib.raised(lambda: scaler.scale(3.0)),
        "list_with_float": lib.raised(lambda: scaler.scale([tensors[0], 3.0])),
    }
    x = lib.param(np.asarray(leaves[0], dtype=np.float32))
    opt = lib.Plain([x], lr=lr)
    loss = scaler.scale(lib.square_sum(x))
    graph = {"requires_grad": bool(loss.requires_grad),
             "has_grad_fn": loss.grad_fn is not None, "dtype": lib.dtype(loss)}
    loss.backward()
    grad_object = lib.grad_object(x)
    scaled_grad = lib.grad(x)
    scaler.unscale_(opt)
    unscaled = {"grad": lib.grad(x), "same_object": lib.grad_object(x) is grad_object}
    returned = scaler.step(opt)
    scaler.update()
    return {"alone": alone, "nested": nested, "errors": errors, "scaled_loss": lib.array(loss),
            "graph": graph, "scaled_grad": scaled_grad, "unscaled": unscaled,
            "returned": returned, "param": lib.array(x), "scale_after": scaler.get_scale()}


def errors(lib: Any, grad_value: float = 4.0, init_scale: float = 4.0) -> dict[str, Any]:
    """Each misuse of GradScaler, observed as exception type and message."""
    raised = lib.raised
    loss = lib.tensor(np.float32(1.0))

    def make(**kwargs: Any) -> tuple[Any, Any, Any]:
        p = lib.param(np.ones(2, np.float32))
        lib.set_grad(p, np.full(2, grad_value, np.float32))
        return lib.scaler(init_scale=init_scale, **kwargs), p, lib.Plain([p], lr=0.1)

    out: dict[str, Any] = {}
    scaler, p, opt = make()
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
    out["grad_after_unscale_twice"] = lib.grad(p)
    scaler.step(opt)
    out["unscale_after_step"] = raised(lambda: scaler.unscale_(opt))
    out["step_twice"] = raised(lambda: scaler.step(opt))
    out["steps_taken"] = opt.calls
    scaler.update()
    lib.set_grad(p, np.full(2, grad_value, np.float32))
    scaler.scale(loss)
    out["unscale_after_update"] = raised(lambda: scaler.unscale_(opt))

    scaler, p, _ = make()
    half = lib.param(np.ones(2, np.float16))
    lib.set_grad(half, np.full(2, grad_value, np.float16))
    opt = lib.Plain([p, half], lr=0.1)
    scaler.scale(loss)
    out["fp16_unscale"] = raised(lambda: scaler.unscale_(opt))
    out["fp16_other_grad"] = lib.grad(p)
    out["fp16_step"] = raised(lambda: scaler.step(opt))
    out["fp16_steps_taken"] = opt.calls

    out["growth_factor_1"] = raised(lambda: lib.scaler(growth_factor=1.0))
    out["backoff_factor_1"] = raised(lambda: lib.scaler(backoff_factor=1.0))
    out["disabled_bad_factors"] = raised(
        lambda: lib.scaler(growth_factor=0.5, backoff_factor=2.0, enabled=False))
    return out


def scaler_edges(lib: Any, keys: list[str] | None = None, grad_value: float = 4.0,
                 init_scale: float = 4.0, new_scale: float = 16.0) -> dict[str, Any]:
    """step() with no gradient recorded, the found_inf flags unscale_ records, and
    update(new_scale) with tensors (a 0-d one; two elements; one that requires grad);
    ``keys``: only those of the observation (what the asking test reads)."""
    raised = lib.raised
    loss = lib.tensor(np.float32(1.0))
    p = lib.param(np.ones(2, np.float32))
    opt = lib.Plain([p], lr=0.1)
    scaler = lib.scaler(init_scale=init_scale)
    scaler.scale(loss)
    out: dict[str, Any] = {"step_without_gradients": raised(lambda: scaler.step(opt)),
                           "steps_taken": opt.calls}
    scaler = lib.scaler(init_scale=init_scale)
    lib.set_grad(p, np.full(2, grad_value, np.float32))
    scaler.scale(loss)
    scaler.unscale_(opt)
    out["found_inf"] = [[lib.dtype(f), list(lib.shape(f)), lib.item(f)]
                        for f in scaler._found_inf_per_device(opt).values()]
    scaler.step(opt)
    out["two_elements"] = raised(
        lambda: scaler.update(lib.tensor(np.array([2.0, 3.0], np.float32))))
    out["requires_grad"] = raised(
        lambda: scaler.update(lib.tensor(np.float32(2.0), requires_grad=True)))
    out["zero_dim"] = raised(lambda: scaler.update(lib.tensor(np.float32(new_scale))))
    out["scale"] = scaler.get_scale()
    return out if keys is None else {k: out[k] for k in keys}


def disabled(lib: Any, grads: list[float] | None = None) -> dict[str, Any]:
    """``GradScaler(enabled=False)`` through a whole iteration whose gradients hold inf."""
    scaler = lib.scaler(enabled=False)
    p = lib.param(np.ones(3, np.float32))
    opt = lib.Plain([p], lr=0.5)
    x = lib.tensor(np.arange(3, dtype=np.float32))
    nested = [x, (x,)]
    out: dict[str, Any] = {
        "identity": scaler.scale(x) is x,
        "nested_identity": scaler.scale(nested) is nested,
        "is_enabled": scaler.is_enabled(),
    }
    lib.set_grad(p, np.array([2.0, np.inf, 4.0] if grads is None else grads, np.float32))
    scaler.unscale_(opt)
    out["grad_after_unscale"] = lib.grad(p)
    out["returned"] = scaler.step(opt)
    out["steps_taken"] = opt.calls
    scaler.update()
    out["param"] = lib.array(p)
    out["scale"] = scaler.get_scale()
    out["tracker"] = scaler._get_growth_tracker()
    out["state_dict"] = scaler.state_dict()
    out["load"] = lib.raised(lambda: scaler.load_state_dict({}))
    return out


def underflow_demo(lib: Any, w: Any, x: Any, k: float, lr: float, iterations: int,
                   growth_interval: int) -> dict[str, Any]:
    """The fp16 loss ``k * sum(half(w) * x)`` (x float16, k tiny): one plain backward and
    step, then ``iterations`` of scale(loss).backward(), step, update with a GradScaler
    (init_scale 2**16)."""
    x16 = lib.tensor(np.asarray(x, dtype=np.float16))
    p = lib.param(np.asarray(w, dtype=np.float32))
    opt = lib.Plain([p], lr=lr)
    lib.half_loss(p, x16, k).backward()
    opt.step()
    without = {"grad": lib.grad(p), "param": lib.array(p)}

    p = lib.param(np.asarray(w, dtype=np.float32))
    opt = lib.Plain([p], lr=lr)
    scaler = lib.scaler(init_scale=2.0**16, growth_interval=growth_interval)
    with_scaler = []
    for _ in range(iterations):
        lib.set_grad(p, None)
        scale_used = scaler.get_scale()
        scaler.scale(lib.half_loss(p, x16, k)).backward()
        calls = opt.calls
        scaler.step(opt)
        found = found_inf(lib, scaler, opt)
        unscaled = lib.grad(p)
        scaler.update()
        with_scaler.append({"scale_used": scale_used, "found_inf": found,
                            "stepped": opt.calls > calls, "grad": unscaled,
                            "param": lib.array(p), "scale": scaler.get_scale()})
    return {"without": without, "with": with_scaler}
