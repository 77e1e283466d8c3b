"""Neural-network building blocks (``tt.nn``)."""

from . import functional
from .module import Module
from .parameter import Parameter

__all__ = ["Module", "Parameter", "functional"]
