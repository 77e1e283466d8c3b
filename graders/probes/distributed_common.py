"""Helpers for the assignment-7 probes: running ranks on the probes' own distributed
runtime (``_world``: the grader's collectives and trace, ranks as threads or as forked
processes), and the small models the probes train.

At most ``MAX_WORLD`` ranks run at a time (plus the worker's main thread); the grader's
tests use 2 to 4. Each world stops a rank that runs ``WORLD_TIMEOUT`` seconds without
reaching a collective, below the grader's 5 s deadline per probe call, so a hang is
reported with the rank and the collective the others waited in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import _world
from ._observe import array
from .gpt import _at, _build, _load

MAX_WORLD = 8
WORLD_TIMEOUT = 3.0


mark = _world.mark  # the probes' marks, into the grader's trace


def run_world(tt: Any, world_size: int, fn: Callable[[int], Any], timeout: float = WORLD_TIMEOUT,
              processes: bool = False) -> tuple[list[Any], list[list[dict[str, Any]]]]:
    """``fn(rank)`` on ``world_size`` ranks of the probes' runtime (threads, or forked
    processes that share no memory): the results and the grader's trace of every rank."""
    if not 1 <= world_size <= MAX_WORLD:
        raise ValueError(f"the probes run at most {MAX_WORLD} ranks")
    return _world.run(tt, world_size, fn, processes=bool(processes), timeout=timeout)


def run_framework_world(tt: Any, world_size: int, fn: Callable[[int], Any],
                        timeout: float = WORLD_TIMEOUT,
                        ) -> tuple[list[Any], list[list[dict[str, Any]]]]:
    """``fn(rank)`` on the submission's own threads backend (``tt.distributed.ThreadWorld``)
    and its trace: for checking the framework's given collectives, not for grading."""
    if not 1 <= world_size <= MAX_WORLD:
        raise ValueError(f"the probes run at most {MAX_WORLD} ranks")
    world = tt.distributed.ThreadWorld(world_size, timeout=timeout)
    results = world.run(fn)
    return results, [list(events) for events in world.trace]


def mlp(tt: Any, widths: list[int], weights: dict[str, np.ndarray] | None = None) -> Any:
    """Linear layers ``fc0, fc1, ...`` of the given widths with tanh between them (no
    initialisation drawn: the weights are loaded by name)."""

    class MLP(tt.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.depth = len(widths) - 1
            for i in range(self.depth):
                setattr(self, f"fc{i}", tt.nn.Linear(widths[i], widths[i + 1]))

        def forward(self, x: Any) -> Any:
            for i in range(self.depth):
                x = getattr(self, f"fc{i}")(x)
                if i < self.depth - 1:
                    x = tt.tanh(x)
            return x

    model = _build(tt, MLP)
    if weights is not None:
        _load(model, weights)
    return model


def values(module: Any, names: list[str]) -> dict[str, np.ndarray]:
    return {name: array(_at(module, name)) for name in names}


def grads(module: Any, names: list[str]) -> dict[str, np.ndarray | None]:
    out = {}
    for name in names:
        g = _at(module, name)._grad
        out[name] = None if g is None else array(g)
    return out


def sgd(params: list[Any], lr: float) -> None:
    """The probes' own update (p -= lr * grad; grad = None), so that data parallelism is
    graded without the student's optimizers."""
    for p in params:
        if p._grad is not None:
            p.data -= lr * p._grad.data
            p._grad = None
