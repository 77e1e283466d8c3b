"""``tt.nn.functional``: the operators PyTorch keeps in ``torch.nn.functional``."""

from ..ops import (
    cross_entropy,
    dropout,
    embedding,
    gelu,
    hardtanh,
    layer_norm,
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
    "cross_entropy", "dropout", "embedding", "gelu", "hardtanh", "layer_norm", "leaky_relu",
    "linear", "log_softmax", "mse_loss", "relu", "sigmoid", "softmax", "tanh",
]
