"""Parameter: a leaf tensor that a Module registers as trainable."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..tensor import Tensor


class Parameter(Tensor):
    """A tensor that requires grad by default and is found by ``Module.parameters()``.

    ``Parameter(t)`` shares ``t``'s storage (no copy); ``Parameter()`` is an empty tensor
    of the default dtype.
    """

    __slots__ = ()

    def __init__(self, data: Tensor | np.ndarray | None = None, requires_grad: bool = True,
                 ) -> None:
        if data is None:
            array = np.empty((0,), dtypes.get_default_dtype().np)
        else:
            array = data.data if isinstance(data, Tensor) else np.asarray(data)
        super().__init__(array, requires_grad=requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()
