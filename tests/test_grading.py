"""The grader on the reference (full marks), the template (zero, all not_implemented), and
the properties of its output files: schema, Gradescope format, determinism."""

from __future__ import annotations

import json

import jsonschema
import pytest

from graders import rubric

from .conftest import REFERENCE, ROOT, TEMPLATE, grade, statuses
from .mutants import all_mutants

SCHEMA = json.loads((ROOT / "graders" / "schema" / "score.schema.json").read_text())
RUBRIC = rubric.load()


def _strip(score: dict) -> dict:
    return {k: v for k, v in score.items() if not k.startswith("_")}


def _without_timings(score: dict) -> dict:
    clean = _strip(score)
    clean = json.loads(json.dumps(clean))
    clean.pop("duration")
    # which worker user a grading gets (tinytrain-worker, -worker1, ...) depends on the
    # gradings running beside it, not on the submission
    clean["environment"].pop("sandbox", None)
    for task in clean["tasks"]:
        for test in task["tests"]:
            test.pop("duration")
    return clean


def test_reference_scores_full_marks(reference_score):
    assert reference_score["_exit"] == 0, reference_score["_stderr"]
    failing = [(t["id"], x["name"], x["message"][:300]) for t in reference_score["tasks"]
               for x in t["tests"] if x["status"] != "passed"]
    assert not failing
    assert reference_score["score"] == reference_score["max_score"] == sum(
        t.points for t in RUBRIC.tasks)


def test_every_task_has_tests(reference_score):
    empty = [t["id"] for t in reference_score["tasks"] if t["total"] == 0]
    assert not empty


def test_template_scores_zero_and_every_test_is_not_implemented(template_score):
    assert template_score["_exit"] == 0, template_score["_stderr"]
    assert template_score["score"] == 0
    assert set(statuses(template_score)) == {"not_implemented"}
    for task in template_score["tasks"]:
        for test in task["tests"]:
            assert "NotImplementedError: task " in test["message"], test
    # the console: one line per unfinished task, no tracebacks, no progress line (not a
    # terminal)
    printed = template_score["_stdout"]
    todo = [line for line in printed.splitlines() if line.startswith("[todo] ")]
    assert [line.split(":")[0] for line in todo] == [
        f"[todo] {task['id']}" for task in template_score["tasks"]]
    assert 'File "' not in printed and "\r" not in printed and "tests done" not in printed


def test_score_files_follow_their_schemas(reference_score, template_score):
    for score in (reference_score, template_score):
        jsonschema.validate(_strip(score), SCHEMA)


def test_test_names_are_unique_within_each_task(reference_score):
    for task in reference_score["tasks"]:
        names = [t["name"] for t in task["tests"]]
        assert len(names) == len(set(names)), task["id"]


def test_gradescope_results(tmp_path):
    score = grade(REFERENCE, tmp_path, "--tasks", "1.1,1.3")
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["score"] == pytest.approx(score["score"])
    assert set(results) >= {"score", "tests", "output", "visibility", "execution_time"}
    total_max = 0.0
    for test in results["tests"]:
        assert set(test) >= {"name", "score", "max_score", "status", "output", "visibility"}
        assert test["status"] in ("passed", "failed")
        assert test["visibility"] in rubric.VISIBILITIES
        total_max += test["max_score"]
    assert total_max == pytest.approx(score["max_score"], abs=1e-3)
    classroom = json.loads((tmp_path / "classroom.json").read_text())
    assert classroom["version"] == 1 and classroom["status"] == "pass"
    assert classroom["max_score"] == score["max_score"]
    assert sum(t["score"] for t in classroom["tests"]) == pytest.approx(score["score"], abs=1e-3)
    assert {t["status"] for t in classroom["tests"]} == {"pass"}


RECORDER = """
import os as _os

_DRAWN = _os.path.join(_os.path.dirname(__file__), _os.pardir, "drawn.txt")
_tensor = tensor


def tensor(data, *args, **kwargs):
    with open(_DRAWN, "a") as log:
        log.write(repr(data) + "\\n")
    return _tensor(data, *args, **kwargs)
"""


def _recording_copy(folder):
    """The reference, with tt.tensor writing every value it is given to drawn.txt."""
    import shutil

    shutil.copytree(REFERENCE / "tinytrain", folder / "tinytrain")
    init = folder / "tinytrain" / "__init__.py"
    init.write_text(init.read_text() + RECORDER)
    return folder


def test_regrade_is_identical_and_the_seed_and_profile_change_the_examples(tmp_path):
    # in-process (--no-sandbox): the recorder writes next to the submission, which a
    # sandboxed worker cannot (it runs on a private copy, as root under its own user);
    # the examples are drawn by Hypothesis in the grader either way
    drawn = {}
    # b and c as in CI, where Hypothesis would load its derandomizing "ci" profile
    ci = {"CI": "true", "GITHUB_ACTIONS": "true"}
    runs = (("a", "0", "default", {}), ("b", "0", "default", ci),
            ("c", "7", "default", ci), ("quick", "0", "quick", {}))
    for run, seed, profile, env in runs:
        submission = _recording_copy(tmp_path / f"sub-{run}")
        score = grade(submission, tmp_path / f"out-{run}", "--tasks", "1.2", "--seed", seed,
                      "--profile", profile, "--no-sandbox", env=env)
        assert score["score"] == score["max_score"], score["_stderr"]
        assert ("this is not the grade" in score["_stdout"]) == (profile == "quick")
        drawn[run] = (submission / "drawn.txt").read_text()
    assert drawn["a"].count("\n") > 50, "the recorder saw too few tensors to tell the runs apart"
    assert drawn["a"] == drawn["b"], "a regrade with the same seed must draw the same examples"
    assert drawn["a"] != drawn["c"], "--seed should draw other examples"
    assert drawn["quick"].count("\n") < drawn["a"].count("\n") / 2, "quick draws fewer"
    # ... and runs the first of the default's examples of each test, in order
    rest = iter(drawn["a"].splitlines())
    assert all(line in rest for line in drawn["quick"].splitlines()), "quick draws others"


def test_regrade_of_a_failing_submission_is_identical(tmp_path):
    mutant = next(m for m in all_mutants() if m.id == "shared-parameter-one-path")
    mutant.apply(tmp_path / "sub")
    first = grade(tmp_path / "sub", tmp_path / "a", "--tasks", "1.2")
    second = grade(tmp_path / "sub", tmp_path / "b", "--tasks", "1.2")
    assert first["score"] < first["max_score"]
    assert _without_timings(first) == _without_timings(second)
    unshrunk = grade(tmp_path / "sub", tmp_path / "c", "--tasks", "1.2", "--no-shrink")
    assert statuses(unshrunk) == statuses(first) and unshrunk["score"] == first["score"]


def test_in_process_mode_gives_the_same_scores(tmp_path):
    sandboxed = grade(REFERENCE, tmp_path / "a", "--tasks", "1")
    in_process = grade(REFERENCE, tmp_path / "b", "--tasks", "1", "--no-sandbox")
    template = grade(TEMPLATE, tmp_path / "c", "--tasks", "1", "--no-sandbox")
    assert in_process["score"] == sandboxed["score"] == in_process["max_score"]
    assert in_process["sandbox"] is False
    assert template["score"] == 0
    assert set(statuses(template)) == {"not_implemented"}


def test_task_selection_by_task_and_assignment(tmp_path):
    score = grade(REFERENCE, tmp_path / "a", "--tasks", "1.2,1.4")
    assert [t["id"] for t in score["tasks"]] == ["1.2", "1.4"]
    score = grade(REFERENCE, tmp_path / "b", "--tasks", "1")
    assert [t["id"] for t in score["tasks"]] == [t.id for t in RUBRIC.tasks if t.assignment == "1"]


def test_gradescope_entry_point(tmp_path):
    """deploy/gradescope/run_autograder grades /autograder/submission into results/."""
    import os
    import shutil
    import subprocess
    import sys

    root = tmp_path / "autograder"
    shutil.copytree(REFERENCE / "tinytrain", root / "submission" / "tinytrain")
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "PYTHONPATH": str(ROOT),
           "GRADER_BIN": str(tmp_path / "bin")}
    (tmp_path / "bin").mkdir()
    shim = tmp_path / "bin" / "tinytrain-grade"
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} -m graders.cli \"$@\" --tasks 1.1\n")
    shim.chmod(0o755)
    (tmp_path / "bin" / "python").symlink_to(sys.executable)  # run_autograder's locator
    proc = subprocess.run([str(ROOT / "deploy" / "gradescope" / "run_autograder")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == RUBRIC.task("1.1").points
