"""The grading seed, for inputs a suite draws outside Hypothesis.

Hypothesis draws from ``--hypothesis-seed``; parametrized cases, fixed requests and the
values inside explicit examples draw from ``case_rng`` instead, which depends on the same
grading seed. At the default seed 0 a case keeps the values it always had (``legacy``, the
seed it was written with); at any other seed every case draws new values, so answers
recorded in one grading are worth nothing in another (a secret seed is a real secret).
"""

from __future__ import annotations

import hashlib

import numpy as np

_SEED = 0


def set_grading_seed(seed: int) -> None:
    """Called by the runner before the suites run (the worker never sees the seed)."""
    global _SEED
    _SEED = int(seed)


def grading_seed() -> int:
    return _SEED


def _key_words(key: tuple[object, ...]) -> list[int]:
    digest = hashlib.sha256(repr(key).encode()).digest()
    return [int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4)]


def case_seed(legacy: int, *key: object) -> int:
    """An integer seed for a case: ``legacy`` at grading seed 0, else one drawn from the
    grading seed, ``legacy`` and ``key`` (a 32-bit integer, for APIs that take one)."""
    if _SEED == 0:
        return legacy
    words = np.random.SeedSequence([_SEED & 0xFFFFFFFF, _SEED >> 32 & 0xFFFFFFFF,
                                    *_key_words((legacy, *key))]).generate_state(1)
    return int(words[0])


def case_rng(legacy: int, *key: object) -> np.random.Generator:
    """A generator for a case's values: ``np.random.default_rng(legacy)`` at grading seed
    0, else a stream that depends on the grading seed (and on ``legacy`` and ``key``, so
    two cases never share one)."""
    return np.random.default_rng(case_seed(legacy, *key))


def seeded_values(values: object, *key: object, low: float = -2.0, high: float = 2.0) -> object:
    """Values of the same shape as ``values`` drawn from the grading seed (``values``
    themselves at seed 0): multiples of 1/64 in [low, high], never 0 (a fixed case keeps
    its shapes and program, not its numbers)."""
    if _SEED == 0:
        return values
    array = np.asarray(values, dtype=np.float64)
    rng = case_rng(0, "seeded values", *key)
    drawn = np.round(rng.uniform(low, high, array.shape) * 64) / 64
    drawn = np.where(drawn == 0, 1 / 64, drawn)
    return drawn if isinstance(values, np.ndarray) else drawn.tolist()


def seeded_program(program: dict, *key: object) -> dict:
    """A fixed program (``{"leaves": [[values, requires_grad], ...], "ops": ...}``) with
    its leaves' values drawn from the grading seed: the same ops, shapes and flags; the
    program itself at seed 0."""
    if _SEED == 0:
        return program
    leaves = [[seeded_values(values, *key, k), *rest]
              for k, (values, *rest) in enumerate(program["leaves"])]
    return {**program, "leaves": leaves}


def reseeded(value: object, fixed: list, *key: object) -> object:
    """``value`` drawn again from the grading seed when it is one of the ``fixed``
    programs (an explicit example: Hypothesis passes that very object), else as it is."""
    for k, program in enumerate(fixed):
        if value is program:
            return seeded_program(program, *key, k)
    return value
