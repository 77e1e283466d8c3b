"""Learning-rate schedulers: LambdaLR, StepLR, and cosine decay with linear warmup."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .optimizer import Optimizer


class LRScheduler:
    """Base class of schedulers. Construction records each group's ``initial_lr`` (as
    ``base_lrs``) and applies epoch 0; each ``step()`` advances ``last_epoch`` by one and
    sets every group's ``"lr"`` to ``get_lr()``. Call it after ``optimizer.step()``."""

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] "
                                   "when resuming an optimizer")
        self.base_lrs: list[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._last_lr: list[float] = []
        self.step()

    def get_lr(self) -> list[float]:
        """The learning rate of each group at epoch ``self.last_epoch``."""
        raise NotImplementedError(f"{type(self).__name__} must define get_lr")

    def step(self) -> None:
        """Advance one epoch and set the groups' learning rates."""
        self.last_epoch += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr(), strict=True):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        """The learning rates the last ``step()`` (or the construction) set."""
        return self._last_lr

    def state_dict(self) -> dict[str, Any]:
        """Every attribute except the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)


class LambdaLR(LRScheduler):
    """lr = base_lr * lr_lambda(epoch); one function for all groups, or one per group."""

    def __init__(self, optimizer: Optimizer,
                 lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
                 last_epoch: int = -1) -> None:
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got "
                                 f"{len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        # BEGIN SOLUTION 5.5
        return [base_lr * fn(self.last_epoch)
                for fn, base_lr in zip(self.lr_lambdas, self.base_lrs, strict=True)]
        # END SOLUTION

    def state_dict(self) -> dict[str, Any]:
        """As the base class, without the (unpicklable) lambdas."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None] * len(self.lr_lambdas)
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        state.pop("lr_lambdas", None)
        self.__dict__.update(state)


class StepLR(LRScheduler):
    """Multiply each group's lr by ``gamma`` every ``step_size`` epochs:
    lr = base_lr * gamma ** (epoch // step_size)."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        # BEGIN SOLUTION 5.5
        # HINT: PyTorch's form is "chainable": it multiplies the group's current lr by
        # HINT: gamma at epochs that are a multiple of step_size (other than 0).
        groups = self.optimizer.param_groups
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [group["lr"] for group in groups]
        return [group["lr"] * self.gamma for group in groups]
        # END SOLUTION


def get_cosine_schedule_with_warmup(optimizer: Optimizer, num_warmup_steps: int,
                                    num_training_steps: int, num_cycles: float = 0.5,
                                    last_epoch: int = -1) -> LambdaLR:
    """The transformer recipe (as in Hugging Face's function of this name): a LambdaLR
    whose factor at step s is

        s / max(1, num_warmup_steps)                          for s < num_warmup_steps
        max(0, (1 + cos(pi * 2 * num_cycles * progress)) / 2) afterwards, where
        progress = (s - num_warmup_steps) / max(1, num_training_steps - num_warmup_steps)

    so the lr rises linearly from 0 to the base lr, then follows half a cosine to 0 at
    ``num_training_steps`` (with the default ``num_cycles=0.5``)."""

    def lr_lambda(step: int) -> float:
        # BEGIN SOLUTION 5.5
        if step < num_warmup_steps:
            return float(step) / float(max(1, num_warmup_steps))
        progress = float(step - num_warmup_steps) / float(
            max(1, num_training_steps - num_warmup_steps))
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * float(num_cycles) * 2.0 * progress)))
        # END SOLUTION

    return LambdaLR(optimizer, lr_lambda, last_epoch)
