"""Mixed precision (``tt.amp``): dynamic loss scaling with ``GradScaler``."""

from .grad_scaler import GradScaler

__all__ = ["GradScaler"]
