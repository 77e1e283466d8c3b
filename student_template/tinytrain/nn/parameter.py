"""Parameter: a leaf tensor that a Module registers as trainable."""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor


class Parameter(Tensor):
    """A tensor that requires grad by default and is found by ``Module.parameters()``."""

    __slots__ = ()

    def __init__(self, data: Tensor | np.ndarray, requires_grad: bool = True) -> None:
        array = data.data if isinstance(data, Tensor) else np.asarray(data)
        super().__init__(array, requires_grad=requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()
