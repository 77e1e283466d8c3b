"""benchmarks/bench_cuda.py measures on a GPU only; elsewhere (CI never has a GPU) it says so
and succeeds."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .conftest import ROOT


def test_without_a_gpu_it_says_so_and_measures_nothing():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: the benchmark would run for real")
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_cuda.py"), "--quick"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "no CUDA GPU here" in proc.stdout and "nothing measured" in proc.stdout
