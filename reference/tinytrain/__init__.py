"""tinytrain: a small PyTorch-like training framework (import as ``tt``)."""

from . import (
    _tensor_methods,  # noqa: F401 - binds operators to Tensor
    autograd,
    dtypes,
    nn,
    ops,
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
from .dtypes import bool_ as bool  # PyTorch's name
from .ops import (
    abs,
    add,
    amax,
    amin,
    argmax,
    argmin,
    cat,
    clamp,
    cos,
    div,
    eq,
    exp,
    flatten,
    ge,
    gt,
    le,
    log,
    log_softmax,
    logsumexp,
    lt,
    matmul,
    max,
    maximum,
    mean,
    min,
    minimum,
    mul,
    ne,
    neg,
    permute,
    pow,
    reciprocal,
    relu,
    reshape,
    rsqrt,
    sigmoid,
    sign,
    sin,
    softmax,
    sqrt,
    squeeze,
    stack,
    sub,
    sum,
    tanh,
    transpose,
    unsqueeze,
    var,
    where,
)
from .random import manual_seed
from .tensor import Tensor

half = float16
float = float32  # noqa: A001
double = float64
long = int64
int = int32  # noqa: A001

__all__ = [
    "DType", "Tensor", "abs", "add", "amax", "amin", "arange", "argmax", "argmin", "autograd",
    "bool", "cat", "clamp", "cos", "div", "double", "dtypes", "empty", "enable_grad", "eq",
    "exp", "flatten", "float", "float16", "float32", "float64", "from_numpy", "full", "ge",
    "get_default_dtype", "gt", "half", "inference_mode", "int", "int8", "int16", "int32",
    "int64", "is_grad_enabled", "is_inference_mode_enabled", "le", "log", "log_softmax",
    "logsumexp", "long", "lt", "manual_seed", "matmul", "max", "maximum", "mean", "min",
    "minimum", "mul", "ne", "neg", "nn", "no_grad", "ones", "ones_like", "ops", "permute",
    "pow", "rand", "randint", "randn", "reciprocal", "relu", "reshape", "rsqrt",
    "set_default_dtype", "set_grad_enabled", "sigmoid", "sign", "sin", "softmax", "sqrt",
    "squeeze", "stack", "sub", "sum", "tanh", "tensor", "transpose", "uint8", "unsqueeze",
    "var", "where", "zeros", "zeros_like",
]
