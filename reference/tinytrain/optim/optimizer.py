"""Optimizer: parameter groups, per-parameter state, zero_grad and state_dict."""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..tensor import Tensor


class Optimizer:
    """Base class of optimizers.

    ``params`` is an iterable of tensors, or of dicts (parameter groups: ``{"params":
    [...], "lr": ...}``) whose missing hyperparameters come from ``defaults``.
    ``self.state[param]`` is a dict of per-parameter state, created on first use.
    Subclasses implement ``step()``, updating ``param.data`` with NumPy (outside autograd,
    so nothing is recorded).
    """

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable "
                            f"of Tensors or dicts, but got {type(params).__name__}")
        self.defaults = defaults
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own hyperparameters (fine-tuning a layer
        with a smaller lr ...); unset ones take the optimizer's defaults."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        for param in params:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params "
                                f"is {type(param).__name__}")
            if not param.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        group = dict(param_group, params=params)
        for name, default in self.defaults.items():
            group.setdefault(name, default)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def step(self) -> None:
        """Update every parameter that has a gradient (one optimization step)."""
        raise NotImplementedError(f"{type(self).__name__} must define step")

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to None (the default, which also frees
        the memory), or to zeros in place with ``set_to_none=False``."""
        # BEGIN SOLUTION 5.2
        for group in self.param_groups:
            for param in group["params"]:
                grad = param._grad
                if grad is None:
                    continue
                if set_to_none:
                    param.grad = None
                else:
                    if grad.grad_fn is not None:
                        grad = param._grad = grad._alias()
                    else:
                        grad.requires_grad_(False)
                    grad.data[...] = 0
                    grad._bump_version()
        # END SOLUTION

    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: state}, "param_groups": [group, ...]}``: parameters are
        replaced by their position (counting across groups, in order), so the dict can be
        loaded into another optimizer over other tensors of the same shapes. A group
        keeps its hyperparameters and gets ``"params": [indices]``; ``"state"`` has an
        entry only for parameters that have state."""
        # BEGIN SOLUTION 5.2
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for param in group["params"]:
                index.setdefault(id(param), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {index[id(p)]: s for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}
        # END SOLUTION

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Take hyperparameters and state from ``state_dict`` (see ``state_dict``); this
        optimizer keeps its own parameters. State tensors are copied, floating point ones
        cast to their parameter's dtype, except ``"step"``."""
        # BEGIN SOLUTION 5.2
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"])
               for g, s in zip(self.param_groups, saved_groups, strict=True)):
            raise ValueError("loaded state dict contains a parameter group that doesn't "
                             "match the size of optimizer's group")
        params = {s: p for g, sg in zip(self.param_groups, saved_groups, strict=True)
                  for s, p in zip(sg["params"], g["params"], strict=True)}

        def cast(param: Tensor, key: str, value: Any) -> Any:
            if not isinstance(value, Tensor):
                return copy.deepcopy(value)
            array = np.array(value.data, copy=True)
            if key != "step" and array.dtype.kind == "f" and param.dtype.is_floating_point:
                array = array.astype(param.data.dtype)
            return Tensor(array)

        self.state = defaultdict(dict)
        for index, saved in state_dict["state"].items():
            param = params[index]
            self.state[param] = {k: cast(param, k, v) for k, v in saved.items()}
        for group, saved in zip(self.param_groups, saved_groups, strict=True):
            saved["params"] = group["params"]
        self.param_groups = saved_groups
        # END SOLUTION

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {k}: {group[k]}" for k in sorted(group) if k != "params")
            lines.append("")
        return "\n".join(lines[:-1] if len(lines) > 1 else lines) + "\n)"
