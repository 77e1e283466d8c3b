"""The task index (docs/tasks.md, graders/authoring/task_index.py) is current, finds what it
says for tasks checked by hand, and ``tinytrain-grade --explain`` prints one entry."""

from __future__ import annotations

import os
import subprocess
import sys

from graders import rubric
from graders.authoring import task_index

from .conftest import ROOT

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def test_docs_tasks_md_is_current():
    assert (ROOT / "docs" / "tasks.md").read_text() == task_index.render(), (
        "docs/tasks.md is stale: run python -m graders.authoring.task_index")


def test_check_flags_a_stale_index(tmp_path):
    stale = tmp_path / "tasks.md"
    stale.write_text(task_index.render().replace("## 2.6", "## 2.6 (edited)"))
    assert task_index.main(["--check", "--out", str(stale)]) == 1
    task_index.main(["--out", str(stale)])
    assert task_index.main(["--check", "--out", str(stale)]) == 0


def test_every_task_has_an_entry_with_tests_probes_solutions_and_mutants():
    entries = task_index.entries()
    assert list(entries) == [t.id for t in rubric.load().tasks]
    for task_id, entry in entries.items():
        assert "- **Tests** (0 functions)" not in entry, task_id
        assert "**Probes** (`graders/probes/`): none" not in entry, task_id
        assert f"`# BEGIN SOLUTION {task_id}`): none" not in entry, task_id
        assert "- **Mutants** (0," not in entry, task_id


def test_entries_for_26_and_62_name_their_files():
    entry = task_index.explain("2.6")
    assert "`graders/suites/hw2_ops/test_ops.py`" in entry
    assert "`test_stability` for `log_softmax`, `softmax`" in entry  # the op table's filter
    assert "`ops.backward`" in entry and "`ops.forward`" in entry  # f"ops.{probe}"
    assert "`ops.finite_differences`" in entry  # oracle, through graders.suites._opchecks
    assert "`reference/tinytrain/ops/activation.py`" in entry
    assert "`softmax-overflows`" in entry
    assert "test_device_op" not in entry  # the device ops are 6.7's
    entry = task_index.explain("6.2")
    assert "`test_kernel` for `softmax_backward_kernel`, `softmax_kernel`" in entry
    assert "`cuda.launch`" in entry and "`cuda.compile_sm90`" in entry
    assert "`reference/tinytrain/cuda/softmax.py`" in entry
    assert "`cuda-softmax-unstable`" in entry  # listed by MUTANTS += [...]


def test_explain_prints_the_entry_and_rejects_an_unknown_task(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "graders.cli", "--explain", "2.6"], cwd=tmp_path,
                          capture_output=True, text=True, env=ENV)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == task_index.explain("2.6")
    assert not list(tmp_path.iterdir())  # no score files
    proc = subprocess.run([sys.executable, "-m", "graders.cli", "--explain", "9.9"], cwd=tmp_path,
                          capture_output=True, text=True, env=ENV)
    assert proc.returncode == 2
    assert proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1
    assert "unknown task '9.9'" in proc.stderr
    assert not list(tmp_path.iterdir())
