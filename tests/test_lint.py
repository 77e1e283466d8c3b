"""The project is ruff clean (configuration in pyproject.toml)."""

from __future__ import annotations

import shutil
import subprocess
import sys

from .conftest import ROOT


def test_ruff_is_clean():
    ruff = shutil.which("ruff") or f"{sys.executable} -m ruff"
    proc = subprocess.run(f"{ruff} check .", shell=True, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
