"""tinytrain: a small PyTorch-like training framework (import as ``tt``)."""

from . import (
    _tensor_methods,  # noqa: F401 - binds operators to Tensor
    amp,
    autograd,
    data,
    dtypes,
    nn,
    ops,
    optim,
)
from .autograd import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .creation import (
    arange,
    empty,
    from_numpy,
    full,
    ones,
    ones_like,
    rand,
    randint,
    randn,
    tensor,
    zeros,
    zeros_like,
)
from .dtypes import (
    DType,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    set_default_dtype,
    uint8,
)
from .dtypes import (
    bool_ as bool,
)
from .ops import add, exp, matmul, mul, neg, pow, sub, sum
from .random import Generator, manual_seed, randperm
from .tensor import Tensor

half = float16
float = float32
double = float64
long = int64
int = int32

__all__ = [
    "DType",
    "Generator",
    "Tensor",
    "add",
    "amp",
    "arange",
    "autograd",
    "bool",
    "data",
    "double",
    "dtypes",
    "empty",
    "enable_grad",
    "exp",
    "float",
    "float16",
    "float32",
    "float64",
    "from_numpy",
    "full",
    "get_default_dtype",
    "half",
    "inference_mode",
    "int",
    "int8",
    "int16",
    "int32",
    "int64",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "long",
    "manual_seed",
    "matmul",
    "mul",
    "neg",
    "nn",
    "no_grad",
    "ones",
    "ones_like",
    "ops",
    "optim",
    "pow",
    "rand",
    "randint",
    "randn",
    "randperm",
    "set_default_dtype",
    "set_grad_enabled",
    "sub",
    "sum",
    "tensor",
    "uint8",
    "zeros",
    "zeros_like",
]
