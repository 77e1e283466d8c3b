"""Parameter initialisation (``tt.nn.init``), as ``torch.nn.init``.

Each function fills a tensor in place (outside autograd) and returns it. Random ones
draw from tinytrain's global generator (so ``tt.manual_seed`` fixes them) or from the
``generator`` given; the values are not PyTorch's (another generator), the distributions
are.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..random import Generator, _numpy_generator
from ..tensor import Tensor


def _fill(tensor: Tensor, values: np.ndarray | float) -> Tensor:
    tensor.data[...] = values
    tensor._bump_version()  # an in-place write, as torch's no_grad fill_
    return tensor


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0,
             generator: Generator | None = None) -> Tensor:
    """Fill with samples of U(a, b)."""
    return _fill(tensor, _numpy_generator(generator).uniform(a, b, tensor.shape))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0,
            generator: Generator | None = None) -> Tensor:
    """Fill with samples of N(mean, std**2)."""
    return _fill(tensor, _numpy_generator(generator).normal(mean, std, tensor.shape))


def constant_(tensor: Tensor, val: float) -> Tensor:
    return _fill(tensor, val)


def ones_(tensor: Tensor) -> Tensor:
    return _fill(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    return _fill(tensor, 0.0)


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity: 1 for linear and sigmoid, 5/3 for tanh,
    sqrt(2) for relu, sqrt(2 / (1 + slope**2)) for leaky_relu (slope 0.01 by default)."""
    if nonlinearity in ("linear", "conv1d", "conv2d", "conv3d", "sigmoid"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out): a weight (out, in, *kernel) has fan_in = in * prod(kernel)."""
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than "
                         "2 dimensions")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu",
                     generator: Generator | None = None) -> Tensor:
    """He initialisation: U(-bound, bound) with bound = gain * sqrt(3 / fan), where fan is
    fan_in or fan_out (``mode``) and gain = calculate_gain(nonlinearity, a)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    # HINT: the variance of U(-b, b) is b**2 / 3: b = sqrt(3) * std with std = gain / sqrt(fan)
    raise NotImplementedError("task 5.8: Linear and Embedding: PyTorch's initialisation, the embedding operator")
