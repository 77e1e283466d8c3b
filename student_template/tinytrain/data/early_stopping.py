"""Early stopping driven by a validation metric."""

from __future__ import annotations

import math
from typing import Any


class EarlyStopping:
    """Stop training when the validation loss has not improved for ``patience`` epochs.

    Call ``step(val_loss)`` once per epoch; it returns True when training should stop.
    The rule, with ``best`` starting at +inf (-inf for ``mode="max"``):

    - the epoch *improves* when ``val_loss < best - min_delta`` (mode "min") or
      ``val_loss > best + min_delta`` (mode "max"), strictly; then ``best = val_loss``,
      ``best_epoch`` is this epoch (counted from 0) and ``num_bad_epochs = 0``;
    - otherwise ``num_bad_epochs += 1`` (a NaN never improves);
    - ``step`` returns ``num_bad_epochs >= patience``.

    So with patience p, training stops at the p-th epoch in a row without improvement.
    """

    def __init__(self, patience: int = 5, min_delta: float = 0.0, mode: str = "min") -> None:
        if not isinstance(patience, int) or patience < 1:
            raise ValueError(f"patience should be a positive integer, got {patience!r}")
        if min_delta < 0:
            raise ValueError(f"min_delta should be >= 0, got {min_delta}")
        if mode not in ("min", "max"):
            raise ValueError(f"mode should be 'min' or 'max', got {mode!r}")
        self.patience = patience
        self.min_delta = float(min_delta)
        self.mode = mode
        self.best = math.inf if mode == "min" else -math.inf
        self.best_epoch: int | None = None
        self.num_bad_epochs = 0
        self.epoch = -1  # the last epoch seen
        self.should_stop = False

    def step(self, val_loss: Any) -> bool:
        """Record this epoch's validation loss; True when training should stop."""
        value = float(val_loss)
        self.epoch += 1
        raise NotImplementedError("task 5.7: Early stopping on the validation loss")
