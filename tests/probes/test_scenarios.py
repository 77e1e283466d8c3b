"""Scenarios written once (``graders/probes/_<area>.py``) import neither torch nor
tinytrain nor the grader's trusted side: the probes run them with the submission, the
oracle runs the very same code with torch, through small adapters."""

from __future__ import annotations

import ast

import pytest

from ..conftest import ROOT

PROBES = ROOT / "graders" / "probes"
SCENARIOS = {"_modules": "modules", "_layers": "layers", "_data": "data", "_amp": "amp", "_optim": "optim",
             "_gpt": "gpt", "_opt_levels": "opt_levels"}
FORBIDDEN = ("torch", "tinytrain", "graders.oracle", "graders.checks", "graders.suites")


def _imports(path):
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names.append("." * node.level + (node.module or ""))
    return names


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_a_scenario_imports_neither_framework(scenario):
    for name in _imports(PROBES / f"{scenario}.py"):
        assert not name.startswith(FORBIDDEN), f"{scenario}.py imports {name}"
        assert not name.startswith(".."), f"{scenario}.py reaches out of graders/probes: {name}"


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_both_sides_run_the_same_scenario(scenario):
    oracle = ROOT / "graders" / "oracle" / f"{SCENARIOS[scenario]}.py"
    assert f"..probes.{scenario}" in _imports(oracle) or "..probes" in _imports(oracle)
    assert scenario in oracle.read_text()
    probes = PROBES / f"{SCENARIOS[scenario]}.py"
    assert scenario in probes.read_text()
