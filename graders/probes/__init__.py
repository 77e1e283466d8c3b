"""Probes: small functions that drive a submission inside the worker and return raw
observations (arrays, dtypes, flags, exception type and message). They import NumPy and
the submission's tinytrain only, and never see expected values.

A probe is ``fn(tt, *args, **kwargs)`` where ``tt`` is the submission's ``tinytrain``
module, registered with ``@probe`` and called by name ``"<module>.<function>"``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from ._state import reset as reset_state

__all__ = ["load_all", "probe", "reset_state", "resolve"]

_REGISTRY: dict[str, Callable[..., Any]] = {}


def probe(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Register ``fn`` as a probe named ``<module>.<function>``."""
    module = fn.__module__.rsplit(".", 1)[-1]
    _REGISTRY[f"{module}.{fn.__name__}"] = fn
    return fn


def load_all() -> list[str]:
    """Import every module of this package (the worker does it before it drops to the
    worker user, who cannot read these files); returns their names."""
    import pkgutil

    names = [f"{__name__}.{info.name}" for info in pkgutil.iter_modules(__path__)]
    for name in names:
        importlib.import_module(name)
    return names


def resolve(name: str) -> Callable[..., Any]:
    """The probe registered as ``name``, importing its module on first use."""
    if name not in _REGISTRY:
        module, _, _ = name.partition(".")
        if not module.isidentifier() or module.startswith("_"):
            raise KeyError(f"no probe named {name!r}")
        importlib.import_module(f"{__name__}.{module}")
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"no probe named {name!r}") from None
