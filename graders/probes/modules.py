"""Probes for task 5.1 (Module): the scenarios of ``_modules`` run on the submission."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from . import _modules, probe
from ._observe import array


def lib(tt: Any) -> SimpleNamespace:
    """The adapters ``_modules`` needs, for tinytrain."""

    def set_grad(p: Any, values: np.ndarray) -> None:
        p.grad = tt.tensor(values)

    def grad(p: Any) -> np.ndarray | None:
        g = p._grad
        return None if g is None else array(g)

    def add_inplace(p: Any, value: float) -> None:
        p.data += value

    return SimpleNamespace(
        nn=tt.nn,
        tensor=lambda values: tt.tensor(np.asarray(values)),
        array=array,
        same_storage=lambda a, b: bool(np.shares_memory(a.data, b.data)),
        add_inplace=add_inplace,
        set_grad=set_grad,
        grad=grad,
        grad_object=lambda p: p._grad,
        shape=lambda t: tuple(t.shape),
        float64=tt.float64,
        dtype=lambda t: t.dtype.name,
        dtype_of_grad=lambda p: None if p._grad is None else p._grad.dtype.name,
    )


@probe
def structure(tt: Any, spec: dict[str, Any]) -> dict[str, Any]:
    return _modules.structure(lib(tt), spec)


@probe
def state_dict_view(tt: Any, spec: dict[str, Any]) -> dict[str, Any]:
    return _modules.state_dict_view(lib(tt), spec)


@probe
def load_round_trip(tt: Any, spec_a: dict[str, Any], spec_b: dict[str, Any]) -> dict[str, Any]:
    return _modules.load_round_trip(lib(tt), spec_a, spec_b)


@probe
def load_errors(tt: Any, spec: dict[str, Any], edits: list[list[Any]],
                strict: bool) -> dict[str, Any]:
    return _modules.load_errors(lib(tt), spec, edits, strict)


@probe
def train_eval(tt: Any, spec: dict[str, Any], script: list[list[str]]) -> dict[str, Any]:
    return _modules.train_eval(lib(tt), spec, script)


@probe
def zero_grad(tt: Any, spec: dict[str, Any]) -> dict[str, Any]:
    return _modules.zero_grad(lib(tt), spec)


@probe
def versions(tt: Any, spec_a: dict[str, Any], spec_b: dict[str, Any]) -> dict[str, Any]:
    return _modules.versions(lib(tt), spec_a, spec_b)


@probe
def to_float64(tt: Any, spec: dict[str, Any]) -> dict[str, Any]:
    return _modules.to_float64(lib(tt), spec)


@probe
def apply_order(tt: Any, spec: dict[str, Any]) -> list[str]:
    return _modules.apply_order(lib(tt), spec)


@probe
def containers(tt: Any, params: Any = None) -> dict[str, Any]:
    return _modules.containers(lib(tt), params)


@probe
def registration(tt: Any, fill: Any = None) -> dict[str, Any]:
    return _modules.registration(lib(tt), fill)


@probe
def cycle(tt: Any, fill: Any = None) -> dict[str, Any]:
    return _modules.cycle(lib(tt), fill)
