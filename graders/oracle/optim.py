"""The optimizer and scheduler probes (``graders.probes.optim``) run with torch.optim."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import torch

_KINDS = {"SGD": torch.optim.SGD, "Adam": torch.optim.Adam, "AdamW": torch.optim.AdamW}


def _params(groups: list[dict[str, Any]]) -> tuple[list[torch.Tensor], list[dict[str, Any]]]:
    flat, param_groups = [], []
    for group in groups:
        params = [torch.nn.Parameter(torch.tensor(np.asarray(v))) for v in group["params"]]
        flat.extend(params)
        param_groups.append({"params": params, **group.get("options", {})})
    return flat, param_groups


def _value(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().numpy().copy()
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    return repr(value)


def _state(opt: torch.optim.Optimizer, param: torch.Tensor) -> dict[str, Any]:
    return {k: _value(v) for k, v in opt.state.get(param, {}).items()}


def _run(opt: torch.optim.Optimizer, params: list[torch.Tensor],
         grads: list[list[Any]]) -> list[list[Any]]:
    seen = []
    for step in grads:
        for p, g in zip(params, step, strict=True):
            p.grad = None if g is None else torch.tensor(np.asarray(g))
        pointers = [p.data_ptr() for p in params]
        opt.step()
        seen.append([{"param": p.detach().numpy().copy(), "state": _state(opt, p),
                      "grad": None if p.grad is None else p.grad.numpy().copy(),
                      "in_place": p.data_ptr() == ptr}
                     for p, ptr in zip(params, pointers, strict=True)])
    return seen


def steps(kind: str, options: dict[str, Any], groups: list[dict[str, Any]],
          grads: list[list[Any]]) -> list[list[Any]]:
    """What ``optim.steps`` records, from torch's single-tensor (foreach=False) path."""
    params, param_groups = _params(groups)
    opt = _KINDS[kind](param_groups, foreach=False, **options)
    return _run(opt, params, grads)


class Toy(torch.optim.Optimizer):
    """The probes' Toy optimizer (``graders.probes.optim.toy_class``) in torch."""

    def __init__(self, params: Any, lr: float = 0.1, decay: float = 0.5) -> None:
        super().__init__(params, {"lr": lr, "decay": decay})

    @torch.no_grad()
    def step(self) -> None:  # type: ignore[override]
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = torch.tensor(0.0)
                    state["trace"] = torch.zeros_like(p)
                state["step"] += 1
                state["trace"].mul_(group["decay"]).add_(p.grad)
                p.sub_(group["lr"] * state["trace"])


def toy_state_dict(groups: list[dict[str, Any]], grads: list[list[Any]],
                   extra_group: dict[str, Any] | None) -> dict[str, Any]:
    params, param_groups = _params(groups)
    opt = Toy(param_groups, lr=0.1, decay=0.5)
    _run(opt, params, grads)
    if extra_group is not None:
        _, [group] = _params([extra_group])
        opt.add_param_group(group)
    sd = opt.state_dict()
    return {
        "state_keys": [[type(k).__name__, str(k)] for k in sd["state"]],
        "state": {str(k): {n: _value(v) for n, v in s.items()} for k, s in sd["state"].items()},
        "param_groups": [{k: list(v) if k == "params" else _value(v) for k, v in g.items()}
                         for g in sd["param_groups"]],
    }


def toy_resume(groups: list[dict[str, Any]], before: list[list[Any]], after: list[list[Any]],
               float64: bool) -> dict[str, Any]:
    params, param_groups = _params(groups)
    first = Toy(param_groups, lr=0.1, decay=0.5)
    _run(first, params, before)
    saved = first.state_dict()
    dtype = torch.float64 if float64 else torch.float32
    copies, copy_groups = [], []
    for group in first.param_groups:
        new = [torch.nn.Parameter(p.detach().clone().to(dtype)) for p in group["params"]]
        copies.extend(new)
        copy_groups.append({"params": new})
    second = Toy(copy_groups, lr=0.7, decay=0.9)
    second.load_state_dict(saved)
    loaded = {
        "hyper": [[g["lr"], g["decay"]] for g in second.param_groups],
        "state": [_state(second, p) for p in copies],
        "state_dtypes": [{k: str(v.dtype).removeprefix("torch.") for k, v in
                          second.state.get(p, {}).items()} for p in copies],
    }
    return {"loaded": loaded, "steps": _run(second, copies, after)}


# ----- schedulers -------------------------------------------------------------------
LAMBDAS = {
    "exp": lambda epoch: 0.9**epoch,
    "inverse": lambda epoch: 1.0 / (1.0 + epoch),
    "linear": lambda epoch: max(0.0, 1.0 - epoch / 10.0),
}


def cosine_with_warmup(num_warmup_steps: int, num_training_steps: int,
                       num_cycles: float = 0.5) -> Any:
    """The factor of ``tt.optim.lr_scheduler.get_cosine_schedule_with_warmup`` (its
    documented formula, Hugging Face's recipe)."""

    def factor(step: int) -> float:
        if step < num_warmup_steps:
            return float(step) / float(max(1, num_warmup_steps))
        progress = float(step - num_warmup_steps) / float(
            max(1, num_training_steps - num_warmup_steps))
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * float(num_cycles) * 2.0 * progress)))

    return factor


def schedule(kind: str, args: dict[str, Any], base_lrs: list[float],
             n_steps: int) -> dict[str, Any]:
    groups = [{"params": [torch.nn.Parameter(torch.zeros(1))], "lr": lr} for lr in base_lrs]
    opt = torch.optim.SGD(groups, lr=1.0)
    sched_mod = torch.optim.lr_scheduler
    if kind == "StepLR":
        sched = sched_mod.StepLR(opt, **args)
    elif kind == "LambdaLR":
        fns = [LAMBDAS[name] for name in args["lambdas"]]
        sched = sched_mod.LambdaLR(opt, fns if len(fns) > 1 else fns[0])
    else:
        sched = sched_mod.LambdaLR(opt, cosine_with_warmup(**args))
    lrs, last = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "lr_scheduler.step() before optimizer.step()"
        for i in range(n_steps + 1):
            if i:
                sched.step()
            lrs.append([float(g["lr"]) for g in opt.param_groups])
            last.append([float(v) for v in sched.get_last_lr()])
    return {"lrs": lrs, "last_lr": last}


def state_dtypes(kind: str, options: dict[str, Any], dtype: str,
                 param: list[float] | None = None,
                 grads: list[float] | None = None) -> dict[str, Any]:
    """What ``optim.state_dtypes`` observes, with torch (foreach=False)."""
    torch_dtype = getattr(torch, dtype)
    start = torch.linspace(-1.0, 1.0, 4, dtype=torch.float64) if param is None else \
        torch.tensor(param, dtype=torch.float64)
    p = torch.nn.Parameter(start.to(torch_dtype))
    opt = _KINDS[kind]([p], foreach=False, **options)
    for value in (0.5, -0.25) if grads is None else grads:
        p.grad = torch.full((4,), value, dtype=torch_dtype)
        opt.step()
    name = lambda t: str(t.dtype).removeprefix("torch.")  # noqa: E731
    return {"param": name(p), "state": {k: name(v) for k, v in opt.state[p].items()}}


def state_dtypes_numpy_options(kind: str, options: dict[str, Any], dtype: str,
                               **values: Any) -> dict[str, Any]:
    """What ``optim.state_dtypes_numpy_options`` observes: the float options as NumPy
    float64 scalars."""
    options = {k: np.float64(v) if isinstance(v, float) else v for k, v in options.items()}
    return state_dtypes(kind, options, dtype, **values)
