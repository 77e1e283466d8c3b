"""Probes for tasks 5.8-5.11: layers (Linear, Embedding, LayerNorm, Dropout, activation
and loss modules), their initialisation and Dropout's statistics.

The layer scenarios of ``_layers`` run on the submission; the other probes return raw
draws (weights after ``tt.manual_seed``, dropout masks) for the graders to judge.
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace
from typing import Any

import numpy as np

from . import _layers, probe
from ._observe import array, grad


def lib(tt: Any) -> SimpleNamespace:
    """The adapters ``_layers`` needs, for tinytrain."""

    def tensor(value: np.ndarray, requires_grad: bool) -> Any:
        t = tt.tensor(np.asarray(value))
        return t.requires_grad_(True) if requires_grad else t

    def set_data(param: Any, value: np.ndarray) -> None:
        param.data = np.array(value, copy=True)

    def backward(out: Any, grad_output: np.ndarray | None) -> None:
        out.backward(None if grad_output is None else tt.tensor(np.asarray(grad_output)))

    return SimpleNamespace(nn=tt.nn, tensor=tensor, set_data=set_data, backward=backward,
                           array=array, grad=grad)


@probe
def run(tt: Any, spec: dict[str, Any]) -> dict[str, Any]:
    return _layers.run(lib(tt), spec)


@probe
def initial_parameters(tt: Any, spec: dict[str, Any]) -> dict[str, Any]:
    return _layers.initial_parameters(lib(tt), spec)


@probe
def seeded_init(tt: Any, kind: str, args: list[Any], kwargs: dict[str, Any],
                seeds: list[int]) -> list[dict[str, Any]]:
    """For each seed: ``tt.manual_seed(seed)``, build ``tt.nn.<kind>(*args, **kwargs)``
    and return its parameters (and their dtypes)."""
    out = []
    for seed in seeds:
        tt.manual_seed(seed)
        module = getattr(tt.nn, kind)(*args, **kwargs)
        out.append({name: None if p is None else [array(p), p.dtype.name]
                    for name, p in module._parameters.items()})
    return out


@probe
def kaiming_uniform(tt: Any, shape: list[int], kwargs: dict[str, Any],
                    seed: int) -> np.ndarray:
    """``tt.nn.init.kaiming_uniform_(tensor, **kwargs)`` on a float64 tensor of
    ``shape`` after ``tt.manual_seed(seed)``; the values it drew."""
    tt.manual_seed(seed)
    tensor = tt.zeros(*shape, dtype=tt.float64)
    returned = tt.nn.init.kaiming_uniform_(tensor, **kwargs)
    if returned is not tensor:
        raise AssertionError("kaiming_uniform_ must return the tensor it filled")
    return array(tensor)


@probe
def dropout_train_eval(tt: Any, p: float, x: np.ndarray, grad_output: np.ndarray,
                       seed: int) -> dict[str, Any]:
    """``tt.nn.Dropout(p)`` on ``x``: in training mode (forward and backward), then after
    ``.eval()`` (the layer's own), then after ``.train()`` again; and the functional form
    with ``training=False``."""
    tt.manual_seed(seed)
    layer = tt.nn.Dropout(p)
    observed: dict[str, Any] = {}
    for label in ("train", "eval", "train again"):
        if label == "eval":
            layer.eval()
        elif label == "train again":
            layer.train()
        t = tt.tensor(x).requires_grad_(True)
        out = layer(t)
        out.backward(tt.tensor(grad_output))
        observed[label] = {"output": array(out), "grad": grad(t),
                           "returns_input": out is t, "training": bool(layer.training)}
    t = tt.tensor(x)
    observed["functional eval returns input"] = tt.nn.functional.dropout(t, p, False) is t
    return observed


@probe
def dropout_masks(tt: Any, p: float, shape: list[int], seeds: list[int],
                  calls: int) -> list[list[np.ndarray]]:
    """For each seed: ``tt.manual_seed(seed)``, then ``calls`` calls of
    ``tt.nn.functional.dropout(ones, p)``; the outputs."""
    out = []
    for seed in seeds:
        tt.manual_seed(seed)
        ones = tt.ones(*shape, dtype=tt.float64)
        out.append([array(tt.nn.functional.dropout(ones, p, True)) for _ in range(calls)])
    return out


class _PlainInplace:
    """While active, in-place Functions run their forward and return their target, and
    nothing else (no checks, version or history: task 3.1's part), so an in-place module
    option is graded without assignment 3."""

    def __init__(self, tt: Any) -> None:
        self.module = importlib.import_module(f"{tt.__name__}.autograd.inplace")

    def __enter__(self) -> None:
        self.saved = self.module.apply_inplace

        def apply_inplace(cls: Any, args: Any, kwargs: Any) -> Any:
            cls.forward(cls._backward_cls(), *args, **kwargs)
            return args[0]

        self.module.apply_inplace = apply_inplace

    def __exit__(self, *exc: Any) -> None:
        self.module.apply_inplace = self.saved


@probe
def inplace_option(tt: Any, kind: str, x: np.ndarray) -> dict[str, Any]:
    """``tt.nn.<kind>(inplace=...)`` on a tensor that does not require grad: whether the
    module returns its input itself, and the input's and the output's values after the
    call, for inplace=True and inplace=False."""
    out: dict[str, Any] = {}
    for inplace in (True, False):
        t = tt.tensor(np.array(x, copy=True))
        with _PlainInplace(tt):
            y = getattr(tt.nn, kind)(inplace=inplace)(t)
        out[str(inplace)] = {"returns_input": y is t, "input": array(t), "output": array(y)}
    return out


@probe
def kaiming_uniform_with_generator(tt: Any, shape: list[int],
                                   seeds: list[int] = (1, 0, 5)) -> dict[str, Any]:
    """``kaiming_uniform_(tensor, generator=tt.Generator().manual_seed(g))`` after two
    different global seeds (``seeds``: g, then the two global ones); and whether the global
    generator was left alone (the next global draw after ``tt.manual_seed(first)`` and the
    init equals one without the init)."""
    g, *globals_ = seeds
    drawn, after = [], []
    for seed in globals_:
        tt.manual_seed(seed)
        tensor = tt.zeros(*shape, dtype=tt.float64)
        tt.nn.init.kaiming_uniform_(tensor, generator=tt.Generator().manual_seed(g))
        drawn.append(array(tensor))
        after.append(array(tt.rand(4, dtype=tt.float64)))
    tt.manual_seed(globals_[0])
    plain = array(tt.rand(4, dtype=tt.float64))
    return {"drawn": drawn, "global_untouched": bool(np.array_equal(after[0], plain))}
