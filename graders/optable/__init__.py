"""The op table: one declarative entry per operator (like PyTorch's OpInfo), from which
every operator check is generated (``graders.suites._opchecks``: assignment 2's operators
in ``hw2_ops``, the layer operators of assignment 5 in ``hw5_training``).

Adding an operator is adding an entry: its torch reference, its tinytrain spellings, a
sample strategy for its input domain, its kinks and ties with torch's rule there, its
autocast category and any tolerance it needs beyond torch.testing's defaults.
"""

from .elementwise import ARITHMETIC, UNARY
from .layers import LAYERS
from .linalg import LINALG
from .nn import ACTIVATIONS, LOSSES
from .reductions import REDUCTIONS
from .shapes import SHAPES
from .spec import ErrorCase, Kink, OpInfo

OPS: list[OpInfo] = [*ARITHMETIC, *UNARY, *REDUCTIONS, *LINALG, *SHAPES, *ACTIVATIONS, *LOSSES,
                     *LAYERS]

_names = [op.name for op in OPS]
assert len(_names) == len(set(_names)), "op table names must be unique"

__all__ = ["OPS", "ErrorCase", "Kink", "OpInfo"]
