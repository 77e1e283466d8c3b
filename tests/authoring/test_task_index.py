"""The task index (docs/tasks.md, graders/authoring/task_index.py) is current, finds what it
says for tasks checked by hand, and ``tinytrain-grade --explain`` prints one entry."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

from graders import rubric
from graders.authoring import task_index

from ..conftest import ROOT

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
    assert "`cuda.softmax`" in entry  # oracle, reached from the kernel table's entry


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


COLLECT = r"""
import json, sys
import pytest

class Markers:
    def __init__(self):
        self.found = []

    def pytest_collection_modifyitems(self, items):
        for item in items:
            marker = item.get_closest_marker("task")
            file, _, rest = item.nodeid.partition("::")
            self.found.append([marker.args[0] if marker else None, file, rest.split("[")[0]])

markers = Markers()
code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "-c",
                    "graders/suites/pytest.ini", "--rootdir", ".", "graders/suites"],
                   plugins=[markers])
print(json.dumps(markers.found))
sys.exit(code)
"""


def test_index_lists_the_test_functions_pytest_collects_for_each_task():
    """The index reads markers by ast; pytest, collecting the suites, must find the same test
    functions for every task (parameters aside)."""
    proc = subprocess.run([sys.executable, "-c", COLLECT], cwd=ROOT, capture_output=True,
                          text=True, env=ENV)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    collected: dict[str | None, set[tuple[str, str]]] = {}
    for task_id, file, function in json.loads(proc.stdout.strip().splitlines()[-1]):
        collected.setdefault(task_id, set()).add((file, function))
    assert None not in collected  # every collected test has a task
    for task_id, entry in task_index.entries().items():
        listed = set()
        for line in entry.splitlines():
            found = re.match(r"  - `([^`]+)`(?: \(written in `[^`]+`\))?: (.*)", line)
            if found:
                listed |= {(found.group(1), part.split("`")[1])
                           for part in found.group(2).split("; ")}
        assert listed == collected.get(task_id, set()), task_id


def test_explain_outside_a_checkout_is_a_one_line_error(tmp_path):
    """An installed grader (the wheel, the Gradescope zip) has graders/ without reference/
    and tests/mutants/: --explain says it needs a checkout."""
    shutil.copytree(ROOT / "graders", tmp_path / "graders",
                    ignore=shutil.ignore_patterns("__pycache__"))
    proc = subprocess.run([sys.executable, "-m", "graders.cli", "--explain", "2.6"],
                          cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert proc.returncode == 2
    assert proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1
    assert "run it from a checkout" in proc.stderr
