"""The parallel training example: the same script gives the same losses on ranks as
threads and under ``mpiexec -n 2`` (skipped, with the reason, where the ``mpi`` extra is
not installed), and on any grid its loss curve is the single-process one."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import REFERENCE

SCRIPT = REFERENCE / "examples" / "train_gpt_parallel.py"
ROW = re.compile(r"^ *(\d+) \| ([\d.]+) +\| ([\d.]+) +\| ", re.MULTILINE)


def losses(stdout: str) -> tuple[list[str], list[str]]:
    """The parallel and single-process losses, as printed."""
    rows = ROW.findall(stdout)
    assert rows, stdout
    return [r[1] for r in rows], [r[2] for r in rows]


def run(*args: str, launcher: list[str] | None = None) -> str:
    proc = subprocess.run([*(launcher or []), sys.executable, str(SCRIPT), *args],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def mpiexec() -> str | None:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return None
    return shutil.which("mpiexec") or shutil.which("mpiexec", path=str(Path(sys.executable).parent))


@pytest.mark.skipif(mpiexec() is None,
                    reason="the mpi extra is not installed (pip install -e '.[mpi]'): no mpi4py "
                           "or mpiexec")
def test_threads_and_mpi_give_the_same_losses():
    threads = run("--backend", "threads", "--dp", "2", "--tp", "1", "--quick")
    mpi = run("--backend", "mpi", "--dp", "2", "--tp", "1", "--quick",
              launcher=[mpiexec(), "-n", "2"])
    assert "as MPI processes" in mpi and "as threads" in threads
    assert losses(threads)[0] == losses(mpi)[0]
    assert len(losses(mpi)[0]) == 8


@pytest.mark.parametrize("grid", [["--pp", "2", "--dp", "1", "--tp", "2", "--microbatches", "2"],
                                  ["--dp", "1", "--tp", "2", "--sequence-parallel"]],
                         ids=["pp2-tp2", "tp2-sequence-parallel"])
def test_parallel_curve_is_the_single_process_curve(grid):
    parallel, single = losses(run(*grid, "--quick"))
    assert len(parallel) == 8
    assert all(abs(float(a) - float(b)) <= 1e-12 for a, b in zip(parallel, single, strict=True))
    assert float(parallel[-1]) < float(parallel[0])
