"""Activation modules: each wraps the operator of the same name in ``tt.nn.functional``
(task 5.11)."""

from __future__ import annotations

import warnings

from ..tensor import Tensor
from . import functional as F  # noqa: N812 - PyTorch's usual name
from .module import Module


class ReLU(Module):
    """``max(x, 0)``; ``inplace=True`` writes into the input (``relu_``)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        raise NotImplementedError("task 5.11: Activation and loss modules")

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    """``x`` where positive, else ``negative_slope * x``."""

    def __init__(self, negative_slope: float = 0.01) -> None:
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, input: Tensor) -> Tensor:
        raise NotImplementedError("task 5.11: Activation and loss modules")

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


class GELU(Module):
    """``x * Phi(x)``, or its tanh approximation with ``approximate="tanh"``."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        raise NotImplementedError("task 5.11: Activation and loss modules")

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    def forward(self, input: Tensor) -> Tensor:
        raise NotImplementedError("task 5.11: Activation and loss modules")


class Sigmoid(Module):
    def forward(self, input: Tensor) -> Tensor:
        raise NotImplementedError("task 5.11: Activation and loss modules")


class Hardtanh(Module):
    """``x`` clamped to ``[min_val, max_val]``."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0) -> None:
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, input: Tensor) -> Tensor:
        raise NotImplementedError("task 5.11: Activation and loss modules")

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"


def _legacy_softmax_dim(name: str, ndim: int) -> int:
    """PyTorch's implicit dim for ``Softmax()`` without ``dim`` (deprecated)."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


class Softmax(Module):
    """Softmax along ``dim``."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        dim = self.dim if self.dim is not None else _legacy_softmax_dim("softmax", input.ndim)
        raise NotImplementedError("task 5.11: Activation and loss modules")

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """Log of softmax along ``dim``."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        dim = self.dim if self.dim is not None else _legacy_softmax_dim("log_softmax", input.ndim)
        raise NotImplementedError("task 5.11: Activation and loss modules")

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
