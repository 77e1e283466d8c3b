"""Neural-network building blocks (``tt.nn``)."""

from . import functional, init
from .activation import GELU, Hardtanh, LeakyReLU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .container import ModuleDict, ModuleList, Sequential
from .layers import Dropout, Embedding, LayerNorm, Linear
from .loss import CrossEntropyLoss, MSELoss
from .module import Module
from .parameter import Parameter

__all__ = [
    "GELU", "CrossEntropyLoss", "Dropout", "Embedding", "Hardtanh", "LayerNorm", "LeakyReLU",
    "Linear", "LogSoftmax", "MSELoss", "Module", "ModuleDict", "ModuleList", "Parameter", "ReLU",
    "Sequential", "Sigmoid", "Softmax", "Tanh", "functional", "init",
]
