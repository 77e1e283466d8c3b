"""benchmarks/bench_cuda.py measures on a GPU only; elsewhere (CI never has a GPU) it says so
and succeeds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from ..conftest import ROOT


def test_without_a_gpu_it_says_so_and_measures_nothing():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: the benchmark would run for real")
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_cuda.py"), "--quick"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "no CUDA GPU here" in proc.stdout and "nothing measured" in proc.stdout


BENCH = ROOT / "benchmarks" / "bench_cuda.py"


def _dry(out: object, *extra: str, script: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET",
                                                             "TINYTRAIN_ALLOCATOR")}
    args = ["--dry-run", "--out", str(out), *extra]
    cmd = [sys.executable, str(BENCH), *args] if script is None else \
        [sys.executable, "-c", script, str(BENCH.parent), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env,
                          cwd=str(ROOT))


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    out = tmp_path_factory.mktemp("bench")
    return _dry(out), out


def test_dry_run_runs_and_checks_every_benchmark_on_the_cpu(dry_run: tuple[Any, Any]) -> None:
    proc, out = dry_run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads((out / "bench_cuda.json").read_text())
    assert data["failures"] == {}
    assert data["meta"]["dry_run"] is True and data["meta"]["peaks"] is None
    sys.path.insert(0, str(BENCH.parent))
    try:
        import bench_cuda
    finally:
        sys.path.remove(str(BENCH.parent))
    assert {r["benchmark"] for r in data["results"]} == set(bench_cuda.BENCHMARKS)
    names = [r["name"] for r in data["results"]]
    assert any(n.startswith("matmul") for n in names)
    assert sum(n.startswith("flash attention bwd") for n in names) == 2
    for row in data["results"]:
        # a dry run times the interpreter: no verdict, and the times are positive numbers
        assert row["dry_run"] is True and row["verdict"] == "n/a", row
        assert row["ours_ms"] > 0 and row["torch_ms"] > 0
    gpt = next(r for r in data["results"] if r["benchmark"] == "gpt")
    assert gpt["extra"]["allocator"] == "host" and gpt["extra"]["staged_per_step"] == 0
    losses = gpt["extra"]["losses"]
    assert losses["tinytrain"] and abs(losses["tinytrain"][0] - losses["torch"][0]) < 1e-3


def test_dry_run_markdown_says_it_is_not_a_measurement(dry_run: tuple[Any, Any]) -> None:
    _proc, out = dry_run
    text = (out / "bench_cuda.md").read_text()
    assert "DRY RUN" in text and "not figures" in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    data = json.loads((out / "bench_cuda.json").read_text())
    assert len(rows) == 1 + len(data["results"])  # the header, one row per result


FAILING = """
import sys
sys.path.insert(0, sys.argv[1])
import bench_cuda

def boom(env):
    raise AssertionError("the kernel disagrees with torch")

bench_cuda.BENCHMARKS["boom"] = boom
sys.exit(bench_cuda.main(sys.argv[2:]))
"""


def test_a_failed_check_is_reported_and_fails_the_run(tmp_path: Any) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    proc = _dry(tmp_path, "--kernels", "adam,boom", script=FAILING)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    data = json.loads((tmp_path / "bench_cuda.json").read_text())
    assert data["failures"] == {"boom": "AssertionError: the kernel disagrees with torch"}
    assert [r["benchmark"] for r in data["results"]] == ["adam"]
    assert "| boom | failed |" in (tmp_path / "bench_cuda.md").read_text()


def test_an_unknown_benchmark_is_a_usage_error(tmp_path: Any) -> None:
    proc = subprocess.run([sys.executable, str(BENCH), "--dry-run", "--kernels", "matmull"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "unknown benchmark(s) matmull" in proc.stderr


def test_require_gpu_fails_where_there_is_none() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is here")
    proc = subprocess.run([sys.executable, str(BENCH), "--require-gpu", "--kernels", "adam"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "nothing measured" in proc.stdout
