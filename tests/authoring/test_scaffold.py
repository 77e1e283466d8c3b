"""``tinytrain-make-task`` (graders/authoring/scaffold.py) creates every place a task lives,
wired so that the new task is graded at once, and its markers fail the check until filled."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib

import pytest

from graders.authoring import scaffold

from ..conftest import ROOT


def _copy(tmp_path):
    root = tmp_path / "kit"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in ("graders", "reference"):
        shutil.copytree(ROOT / part, root / part, ignore=ignore)
    shutil.copytree(ROOT / "tests" / "mutants", root / "tests" / "mutants", ignore=ignore)
    return root


def test_the_project_has_no_scaffold_markers_left():
    assert scaffold.unfilled() == []
    assert scaffold.main(["--check"]) == 0


def test_a_new_task_in_an_existing_and_in_a_new_assignment(tmp_path):
    root = _copy(tmp_path)
    written = scaffold.scaffold("2.8", "A new op", "widget", root=root)
    written += scaffold.scaffold("8.1", "A new part", "gizmo", points=5, visibility="hidden",
                                 assignment_title="Eight", root=root)
    rubric = tomllib.loads((root / "graders" / "rubric.toml").read_text())
    ids = [t["id"] for t in rubric["tasks"]]
    assert ids.index("2.8") == ids.index("2.7") + 1  # inside its assignment, in order
    assert ids[-1] == "8.1" and rubric["assignments"][-1] == {"id": "8", "title": "Eight"}
    assert rubric["tasks"][-1]["points"] == 5 and rubric["tasks"][-1]["visibility"] == "hidden"
    rel = {str(p.relative_to(root)) for p in written}
    assert {"graders/suites/hw2_ops/test_widget_2_8.py", "graders/probes/widget.py",
            "graders/oracle/widget.py", "graders/strategies/widget.py",
            "reference/tinytrain/widget.py", "tests/mutants/hw2.py",
            "graders/suites/hw8_gizmo/test_gizmo_8_1.py", "tests/mutants/hw8.py"} <= rel
    assert "# BEGIN SOLUTION 8.1" in (root / "reference/tinytrain/gizmo.py").read_text()
    lint = subprocess.run(["ruff", "check", "--config", str(ROOT / "pyproject.toml"),
                           *sorted(str(root / p) for p in rel if p.endswith(".py"))],
                          capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout
    # every stub is marked, and the check lists them until they are filled in
    left = scaffold.unfilled(root)
    for part in ("rubric.toml", "test_widget_2_8.py", "probes/widget.py", "oracle/widget.py",
                 "strategies/widget.py", "tinytrain/widget.py", "mutants/hw2.py",
                 "mutants/hw8.py"):
        assert any(part in line for line in left), part
    assert scaffold.main(["--check", "--root", str(root)]) == 1
    # the stubs are wired: the copy's grader collects the new tests, calls the new probes
    # and scores the new tasks
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "graders.cli", "reference", "--tasks", "2.8,8.1",
                           "--no-sandbox", "--out", str(out)], cwd=root, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(root)}, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tasks = {t["id"]: t for t in json.loads((out / "score.json").read_text())["tasks"]}
    assert tasks["2.8"]["score"] == tasks["2.8"]["max_score"] == 10
    assert tasks["8.1"]["score"] == tasks["8.1"]["max_score"] == 5


def test_refuses_a_task_that_exists_and_bad_names(tmp_path):
    root = _copy(tmp_path)
    before = (root / "graders" / "rubric.toml").read_text()
    for task, area in (("2.6", "widget"), ("2-8", "widget"), ("2.8", "Widget")):
        with pytest.raises(SystemExit):
            scaffold.scaffold(task, "t", area, root=root)
    assert (root / "graders" / "rubric.toml").read_text() == before
