"""In-place programs (``graders.strategies.inplace``) run in PyTorch."""

from __future__ import annotations

import contextlib
import re
from typing import Any

import numpy as np
import torch

VERSIONS = re.compile(r"is at version (\d+); expected version (\d+) instead")


def _step(step: dict[str, Any], values: list[torch.Tensor]) -> torch.Tensor:
    op = step["op"]
    args = [values[i] for i in step["args"]]
    if op in ("sin", "exp"):
        return getattr(args[0], op)()
    if op == "square":
        return args[0].pow(2)
    if op == "scale":
        return args[0] * float(step["k"])
    if op == "add":
        return args[0] + args[1]
    if op == "mul":
        return args[0] * args[1]
    if op == "narrow":
        return args[0].narrow(0, *step["key"])
    if op == "select":
        return args[0].select(0, step["key"][0])
    if op == "t":
        return args[0].t()
    target = args[0]
    operand = args[1] if len(args) > 1 else step.get("k")
    if op == "setitem":
        key = step["key"]
        target[key[1] if key[0] == "index" else slice(key[1], key[2])] = operand
        return target
    if op in ("add_", "sub_"):
        return getattr(target, op)(operand, alpha=step.get("alpha", 1))
    if op in ("mul_", "div_", "copy_", "fill_"):
        return getattr(target, op)(operand)
    if op == "clamp_":
        return target.clamp_(*step["bounds"])
    return getattr(target, op)()


def run(program: dict[str, Any], weights: list[float], hooks: Any = None) -> dict[str, Any]:
    """What torch does with the program: like ``graders.probes.inplace.run_program``."""
    values = [torch.tensor(np.asarray(v), requires_grad=bool(rg)) for v, rg in program["leaves"]]
    out: dict[str, Any] = {"raised_at": None, "step_error": None, "backward_error": None,
                           "grads": None, "versions": None}
    with hooks if hooks is not None else contextlib.nullcontext():
        for i, step in enumerate(program["steps"]):
            try:
                with torch.no_grad() if step.get("no_grad") else contextlib.nullcontext():
                    values.append(_step(step, values))
                # torch regenerates a view's grad_fn after its base changed lazily, when it
                # is read; its leaf check for in-place ops reads the stale one, so writing
                # into a view of a base that has just been rebased can be refused as "a
                # leaf". Reading every grad_fn here gives the documented semantics, which
                # tinytrain implements eagerly.
                for v in values:
                    _ = v.grad_fn
            except RuntimeError as exc:
                out["raised_at"], out["step_error"] = i, {"type": "RuntimeError",
                                                          "message": str(exc)}
                return out
    out["versions"] = [v._version for v in values]
    out["requires_grad"] = [v.requires_grad for v in values]
    out["is_leaf"] = [v.is_leaf for v in values]
    if hooks is not None:
        return out
    loss = sum((v * w).sum() for v, w in zip(values, weights))
    try:
        loss.backward()
        out["backward_error"] = {"type": None, "message": ""}
        n = len(program["leaves"])
        out["grads"] = [None if v.grad is None else v.grad.numpy() for v in values[:n]]
    except RuntimeError as exc:
        out["backward_error"] = {"type": "RuntimeError", "message": str(exc)}
    return out


def stale_saved_versions(program: dict[str, Any]) -> set[tuple[int, int]]:
    """(current version, version at save) of every tensor torch saved for backward that
    was written in place afterwards: the version errors a correct backward may raise.
    (Which one it raises first depends on the order backward visits the nodes, which is
    the student's choice; any of them is right.)"""
    saved: list[tuple[torch.Tensor, int]] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved.append((t, t._version))
        return t

    run(program, [], hooks=torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t))
    return {(t._version, v) for t, v in saved if t._version != v}


def versions_in(message: str) -> tuple[int, int] | None:
    """(current, expected) from a version error message."""
    match = VERSIONS.search(message)
    return (int(match[1]), int(match[2])) if match else None
