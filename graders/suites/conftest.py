"""Shared settings of the grader suites."""

from __future__ import annotations

import os

import torch
from hypothesis import HealthCheck, Phase, settings

torch.set_num_threads(1)

# Every setting that matters is spelled out: profiles inherit from the one loaded at
# import, and Hypothesis loads its own "ci" profile (derandomize=True, which ignores
# --seed) wherever a CI variable is set.
_COMMON = dict(
    database=None,
    derandomize=False,
    deadline=None,
    print_blob=False,
    report_multiple_bugs=False,
    suppress_health_check=list(HealthCheck),
    # no explain phase: it adds nothing to the grader's messages, and it makes Hypothesis
    # trace every line run while shrinking (sys.settrace on Python 3.11), which made
    # shrinking several times slower
    phases=[p for p in Phase if p is not Phase.explain],
)
if os.environ.get("TINYTRAIN_GRADER_SHRINK") == "0":  # tinytrain-grade --no-shrink
    _COMMON["phases"] = [p for p in Phase if p not in (Phase.shrink, Phase.explain)]
# quick has the default's settings: the grader stops each test after the first third
# of its examples (graders/runner/hypothesis_budget.py), so it runs the grade's first ones
settings.register_profile("quick", max_examples=25, **_COMMON)
settings.register_profile("default", max_examples=25, **_COMMON)
settings.register_profile("thorough", max_examples=200, **_COMMON)
settings.load_profile(os.environ.get("TINYTRAIN_GRADER_PROFILE", "default"))
