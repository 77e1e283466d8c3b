"""The ``cuda`` device (assignment 6): Triton kernels and the device that runs them.

``import tinytrain`` never imports triton. The kernel modules (``tt.cuda.elementwise``,
``softmax``, ``matmul``, ``layernorm``, ``cross_entropy``, ``attention``, ``adam``) and
the device (``device``) import it when first used; where no GPU exists their kernels run
under Triton's interpreter, so the device works (slowly) on any Linux machine.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..device_state import CudaArray
from ._runtime import TRITON_MISSING, interpreted, is_available, triton_available

_SUBMODULES = ("elementwise", "softmax", "matmul", "layernorm", "cross_entropy", "attention",
               "adam", "device")

__all__ = ["TRITON_MISSING", "CudaArray", "interpreted", "is_available", "triton_available",
           *_SUBMODULES]


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
