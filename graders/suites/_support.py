"""Helpers for writing grader tests."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

task = pytest.mark.task

PROFILES = {"quick": 1 / 3, "default": 1, "thorough": 8}


def examples(n: int) -> int:
    """``n`` Hypothesis examples under the default profile; a third of them (at least 2)
    under "quick", eight times as many under "thorough"."""
    scale = PROFILES.get(os.environ.get("TINYTRAIN_GRADER_PROFILE", "default"), 1)
    return max(2, round(n * scale)) if scale < 1 else int(n * scale)


def literal(value: Any) -> str:
    """A Python literal for an array (for reproducer snippets)."""
    array = np.asarray(value)
    text = np.array2string(array, separator=", ", precision=17, floatmode="unique",
                           threshold=10_000, max_line_width=10_000)
    return text.replace("\n", "")


def program_reproducer(program: dict[str, Any], calls: int = 1, backward: bool = True) -> str:
    """tinytrain code that runs a graph program (with tinytrain's own operators); without
    ``backward`` it prints each value's graph attributes instead of the gradients."""
    lines = ["import tinytrain as tt"]
    names = []
    for i, (value, rg) in enumerate(program["leaves"]):
        names.append(f"x{i}")
        lines.append(f"x{i} = tt.tensor({literal(value)}, dtype=tt.float64, "
                     f"requires_grad={bool(rg)})")
    body = []
    for op, *args in program["ops"]:
        name = f"v{len(names)}"
        a = [names[i] for i in args[:1]]
        if op in ("add", "mul"):
            expr = f"{a[0]} {'+' if op == 'add' else '*'} {names[args[1]]}"
        elif op == "scale":
            expr = f"{a[0]} * {args[1]}"
        elif op == "square":
            expr = f"{a[0]} * {a[0]}"
        elif op == "sum":
            expr = f"{a[0]}.sum()"
        else:
            expr = f"{a[0]}.{op}()"
        body.append(f"{name} = {expr}")
        names.append(name)
    if not backward:
        lines.extend(body)
        lines.append(f"for v in [{', '.join(names)}]:")
        lines.append("    print(v.requires_grad, v.is_leaf, v.grad_fn)")
        return "\n".join(lines)
    if calls > 1:
        lines.append(f"for _ in range({calls}):")
        lines.extend("    " + line for line in body)
        lines.append(f"    {names[-1]}.backward()")
    else:
        lines.extend(body)
        lines.append(f"{names[-1]}.backward()")
    lines.append("print(" + ", ".join(f"x{i}.grad" for i in range(len(program["leaves"]))) + ")")
    return "\n".join(lines)
