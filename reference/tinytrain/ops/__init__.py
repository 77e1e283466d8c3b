"""Differentiable operators. Each is a ``Function`` with a hand-written backward, plus a
PyTorch-named function that calls it (and a Tensor method, see ``_tensor_methods``)."""

from .arithmetic import add, mul, neg, pow, sub
from .conversion import to_dtype
from .linalg import matmul
from .reduction import sum
from .unary import exp

__all__ = ["add", "exp", "matmul", "mul", "neg", "pow", "sub", "sum", "to_dtype"]
