"""Helpers for writing grader tests."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

task = pytest.mark.task

PROFILES = {"quick": 1, "default": 1, "thorough": 8}


def examples(n: int) -> int:
    """``n`` Hypothesis examples under the default profile, eight times as many under
    "thorough". "quick" has the default's settings, and the grader stops each test after
    the first third of these (``graders.runner.hypothesis_budget``)."""
    return int(n * PROFILES.get(os.environ.get("TINYTRAIN_GRADER_PROFILE", "default"), 1))


def literal(value: Any) -> str:
    """A Python literal for an array (for reproducer snippets)."""
    array = np.asarray(value)
    text = np.array2string(array, separator=", ", precision=17, floatmode="unique",
                           threshold=10_000, max_line_width=10_000)
    return text.replace("\n", "")
