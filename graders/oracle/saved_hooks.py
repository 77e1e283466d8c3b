"""Saved-tensor hook calls of a graph program (``graders.strategies.programs``) in torch,
as ``graders.probes.saved_hooks.hook_calls`` reports them."""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import torch

_OPS = {
    "add": torch.add,
    "mul": torch.mul,
    "sin": torch.sin,
    "exp": torch.exp,
    "square": lambda t: t.pow(2),  # saves its input once, as the probe's square does
    "sum": torch.sum,
}


def hook_calls(program: dict[str, Any], inner_ops: int = 0, calls: int = 1) -> dict[str, Any]:
    events: list[Any] = []

    def pair(name: str) -> Any:
        """A factory of hook contexts sharing one logging (pack, unpack) pair."""
        kept: list[torch.Tensor] = []

        def pack(t: torch.Tensor) -> int:
            events.append([name, "pack", len(kept), t.detach().numpy().copy(),
                           torch.is_grad_enabled()])
            kept.append(t)
            return len(kept) - 1

        def unpack(token: int) -> torch.Tensor:
            events.append([name, "unpack", token, None, torch.is_grad_enabled()])
            return kept[token]

        return lambda: torch.autograd.graph.saved_tensors_hooks(pack, unpack)

    outer, inner = pair("outer"), pair("inner")
    values = [torch.tensor(np.asarray(v), requires_grad=bool(rg)) for v, rg in program["leaves"]]
    with outer():
        for i, (op, *args) in enumerate(program["ops"]):
            with inner() if i < inner_ops else contextlib.nullcontext():
                if op == "scale":
                    values.append(values[args[0]] * float(args[1]))
                else:
                    values.append(_OPS[op](*(values[a] for a in args)))
    forward_events = len(events)
    for k in range(calls):
        values[-1].backward(retain_graph=k < calls - 1)
    n = len(program["leaves"])
    return {"events": events, "forward_events": forward_events,
            "grads": [None if v.grad is None else v.grad.numpy() for v in values[:n]]}
