"""``tt.nn.functional``: the operators PyTorch keeps in ``torch.nn.functional``."""

from ..ops import (
    cross_entropy,
    gelu,
    hardtanh,
    leaky_relu,
    linear,
    log_softmax,
    mse_loss,
    relu,
    sigmoid,
    softmax,
    tanh,
)

__all__ = [
    "cross_entropy", "gelu", "hardtanh", "leaky_relu", "linear", "log_softmax", "mse_loss",
    "relu", "sigmoid", "softmax", "tanh",
]
