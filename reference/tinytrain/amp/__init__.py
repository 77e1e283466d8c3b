"""Mixed precision (``tt.amp``): ``autocast`` regions that run each op in the dtype
PyTorch's CUDA policy picks, and dynamic loss scaling with ``GradScaler``."""

from .autocast_mode import autocast, get_autocast_dtype, is_autocast_enabled
from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "get_autocast_dtype", "is_autocast_enabled"]
