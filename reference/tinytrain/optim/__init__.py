"""Optimizers (``tt.optim``) and learning-rate schedulers (``tt.optim.lr_scheduler``)."""

from . import lr_scheduler
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "lr_scheduler"]
