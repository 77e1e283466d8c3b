"""Differentiable operators. Each is a ``Function`` with a hand-written backward, plus a
PyTorch-named function that calls it (and a Tensor method, see ``_tensor_methods``)."""

from .activation import gelu, hardtanh, leaky_relu, log_softmax, relu, sigmoid, softmax, tanh
from .arithmetic import add, div, maximum, minimum, mul, neg, pow, sub, where
from .comparison import eq, ge, gt, le, lt, ne
from .conversion import to_dtype
from .layers import dropout, embedding, layer_norm
from .linalg import linear, matmul
from .loss import cross_entropy, mse_loss
from .reduction import amax, amin, argmax, argmin, logsumexp, max, mean, min, sum, var
from .shape import (
    cat,
    contiguous,
    expand,
    flatten,
    getitem,
    permute,
    reshape,
    squeeze,
    stack,
    transpose,
    unsqueeze,
    view,
)
from .unary import abs, clamp, cos, exp, log, reciprocal, rsqrt, sign, sin, sqrt

__all__ = [
    "abs", "add", "amax", "amin", "argmax", "argmin", "cat", "clamp", "contiguous", "cos",
    "cross_entropy", "div", "dropout", "embedding", "eq", "exp", "expand", "flatten", "ge",
    "gelu", "getitem", "gt", "hardtanh", "layer_norm", "le", "leaky_relu", "linear", "log",
    "log_softmax", "logsumexp", "lt", "matmul", "max", "maximum", "mean", "min", "minimum",
    "mse_loss", "mul", "ne", "neg", "permute", "pow", "reciprocal", "relu", "reshape", "rsqrt",
    "sigmoid", "sign", "sin", "softmax", "sqrt", "squeeze", "stack", "sub", "sum", "tanh",
    "to_dtype", "transpose", "unsqueeze", "var", "view", "where",
]
