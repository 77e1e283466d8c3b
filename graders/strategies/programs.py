"""Random graph programs: DAGs with branches, reuse and shared leaves."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

SHAPES = [(), (1,), (3,), (2, 3)]


@st.composite
def programs(draw: Any, max_ops: int = 8, all_require_grad: bool = False) -> dict[str, Any]:
    """A program whose output is a scalar that depends on every value.

    Ops pick their operands among all earlier values, so values are reused (fan-out) and
    leaves are shared; at least one leaf requires grad.
    """
    shape = draw(st.sampled_from(SHAPES))
    n_leaves = draw(st.integers(1, 3))
    size = int(np.prod(shape, dtype=int))
    leaves = []
    for _ in range(n_leaves):
        flat = draw(st.lists(st.floats(-2, 2, allow_subnormal=False), min_size=size, max_size=size))
        rg = True if all_require_grad else draw(st.booleans())
        leaves.append([np.array(flat, dtype=np.float64).reshape(shape), rg])
    if not any(rg for _, rg in leaves):
        leaves[draw(st.integers(0, n_leaves - 1))][1] = True
    ops: list[list[Any]] = []
    n_ops = draw(st.integers(1, max_ops))
    for _ in range(n_ops):
        n_values = n_leaves + len(ops)
        kind = draw(st.sampled_from(["add", "mul", "sin", "square", "scale"]))
        a = draw(st.integers(0, n_values - 1))
        if kind in ("add", "mul"):
            ops.append([kind, a, draw(st.integers(0, n_values - 1))])
        elif kind == "scale":
            ops.append([kind, a, draw(st.sampled_from([-2.0, -0.5, 0.5, 3.0]))])
        else:
            ops.append([kind, a])
    # fold every value into the output so each one is on a path to it
    total = n_leaves + len(ops)
    acc = 0
    for i in range(1, total):
        ops.append(["add", acc, i])
        acc = n_leaves + len(ops) - 1
    ops.append(["sum", acc])
    return {"leaves": leaves, "ops": ops}


def describe(program: dict[str, Any]) -> str:
    """A one-line summary for failure messages."""
    leaves = ", ".join(
        f"x{i}{list(np.shape(v))}{' rg' if rg else ''}"
        for i, (v, rg) in enumerate(program["leaves"])
    )
    ops = "; ".join(f"v{len(program['leaves']) + i}={op}({', '.join(map(str, a))})"
                    for i, (op, *a) in enumerate(program["ops"]))
    return f"leaves [{leaves}]; {ops}"
