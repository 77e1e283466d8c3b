"""Automatic differentiation: Function, the backward engine, grad modes, graph hooks."""

from . import graph
from .engine import backward
from .function import Function
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .node import AccumulateGrad, BackwardNode

__all__ = [
    "AccumulateGrad",
    "BackwardNode",
    "Function",
    "backward",
    "enable_grad",
    "graph",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "no_grad",
    "set_grad_enabled",
]
