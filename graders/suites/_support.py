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
