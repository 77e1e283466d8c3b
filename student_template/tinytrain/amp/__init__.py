"""Mixed precision (``tt.amp``): ``autocast`` regions that run each op in the dtype
PyTorch's CUDA policy picks, dynamic loss scaling with ``GradScaler``, APEX's opt levels
(``initialize``, ``scale_loss``) and a precision policy per layer (``apply_layer_policy``)."""

from . import opmath  # noqa: F401 - registers float32 opmath with Function.apply
from .autocast_mode import autocast, get_autocast_dtype, is_autocast_enabled
from .grad_scaler import GradScaler
from .layerwise import COURSE_POLICY, apply_layer_policy, resolve_levels
from .opt_levels import OPT_LEVELS, AmpOptimizer, LossScaler, initialize, scale_loss

__all__ = [
    "COURSE_POLICY", "OPT_LEVELS", "AmpOptimizer", "GradScaler", "LossScaler",
    "apply_layer_policy", "autocast", "get_autocast_dtype", "initialize",
    "is_autocast_enabled", "resolve_levels", "scale_loss",
]
