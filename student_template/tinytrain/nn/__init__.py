"""Neural-network building blocks (``tt.nn``)."""

from . import functional
from .container import ModuleDict, ModuleList, Sequential
from .module import Module
from .parameter import Parameter

__all__ = ["Module", "ModuleDict", "ModuleList", "Parameter", "Sequential", "functional"]
