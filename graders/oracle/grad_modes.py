"""Grad-mode scripts (see ``graders.probes.autograd.grad_mode_script``) run in PyTorch."""

from __future__ import annotations

from typing import Any

import torch


def _context(kind: str, arg: Any) -> Any:
    if kind == "no_grad":
        return torch.no_grad()
    if kind == "enable_grad":
        return torch.enable_grad()
    if kind == "set_grad_enabled":
        return torch.set_grad_enabled(bool(arg))
    if kind == "inference_mode":
        return torch.inference_mode(bool(arg))
    raise ValueError(kind)


def run_script(script: list[list[Any]]) -> list[list[bool]]:
    """At each "check": [is_grad_enabled(), whether x * y records]. Restores the mode."""
    seen: list[list[bool]] = []
    x = torch.ones(1, requires_grad=True)

    def run(steps: list[list[Any]]) -> None:
        for step in steps:
            if step[0] == "check":
                seen.append([torch.is_grad_enabled(), (x * 2.0).grad_fn is not None])
            elif step[0] == "call_set":
                torch.set_grad_enabled(bool(step[1]))
            else:
                with _context(step[0], step[1]):
                    run(step[2])

    before = torch.is_grad_enabled()
    try:
        run(script)
    finally:
        torch.set_grad_enabled(before)
    return seen
