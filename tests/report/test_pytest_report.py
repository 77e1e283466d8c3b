"""pytest's JSON report (pytest-json-report's format) beside the grader's own score files:
its tests and counts are the grading's, and its shape is the plugin's own (compared with a
report the real plugin writes, where the plugin is installed: the dev extra has it)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from graders.report.pytest_json import PYTEST_REPORT

from ..conftest import REFERENCE, ROOT, grade
from ..mutants import all_mutants

TOP = {"created", "duration", "exitcode", "root", "environment", "summary", "collectors",
       "tests"}
TEST = {"nodeid", "lineno", "outcome", "keywords", "setup", "call", "teardown"}
FAILED_CALL = {"duration", "outcome", "crash", "traceback", "longrepr"}


def _plugin_report(tmp_path: Path) -> dict:
    """What pytest-json-report itself writes for a passing and a failing test."""
    (tmp_path / "test_x.py").write_text(
        "def test_ok():\n    pass\n\n\ndef test_bad():\n    print('hi')\n    assert 1 == 2\n")
    extra = os.environ.get("TINYTRAIN_JSON_REPORT_PATH", "")  # a private install of it
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (extra, str(ROOT)) if p),
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "pytest_jsonreport",
                    "-p", "no:cacheprovider", "--json-report",
                    f"--json-report-file={tmp_path / 'r.json'}", "test_x.py"],
                   cwd=tmp_path, env=env, capture_output=True, timeout=120)
    return json.loads((tmp_path / "r.json").read_text())


def _have_plugin() -> bool:
    extra = os.environ.get("TINYTRAIN_JSON_REPORT_PATH")
    return bool(importlib.util.find_spec("pytest_jsonreport")
                or (extra and (Path(extra) / "pytest_jsonreport").is_dir()))


@pytest.fixture(scope="module")
def mutant_grading(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mutant")
    mutant = next(m for m in all_mutants() if m.id == "records-without-requires-grad")
    mutant.apply(folder / "sub")
    score = grade(folder / "sub", folder / "out", "--tasks", "1.1", "--no-shrink")
    assert score["_exit"] == 0, score["_stderr"]
    return score, json.loads((folder / "out" / PYTEST_REPORT).read_text())


def test_the_report_holds_the_gradings_tests_and_counts(mutant_grading):
    score, report = mutant_grading
    tests = [t for task in score["tasks"] for t in task["tests"]]
    assert [t["nodeid"].split("::")[-1] for t in report["tests"]] == [t["name"] for t in tests]
    assert all(t["nodeid"].startswith("hw1_autograd/") for t in report["tests"])
    passed = sum(t["status"] == "passed" for t in tests)
    assert 0 < passed < len(tests)
    assert report["summary"] == {"passed": passed, "failed": len(tests) - passed,
                                 "total": len(tests), "collected": len(tests)}
    assert report["exitcode"] == 1
    for mine, theirs in zip(report["tests"], tests, strict=True):
        assert mine["metadata"]["status"] == theirs["status"]
        assert mine["outcome"] == ("passed" if theirs["status"] == "passed" else "failed")
        if mine["outcome"] == "failed":
            assert theirs["message"].splitlines()[0] in mine["call"]["crash"]["message"]
    assert sum(t["metadata"]["max_score"] for t in report["tests"]) == 10
    assert sum(t["metadata"]["score"] for t in report["tests"]) == pytest.approx(
        score["score"], abs=0.01)
    assert str(score["seed"]) not in json.dumps(report["summary"]) and "seed" not in report


def test_the_report_has_the_plugins_shape(mutant_grading, tmp_path):
    _, report = mutant_grading
    assert set(report) == TOP
    failed = next(t for t in report["tests"] if t["outcome"] == "failed")
    assert TEST <= set(failed) and FAILED_CALL <= set(failed["call"])
    if not _have_plugin():
        pytest.skip("pytest-json-report is not installed (the dev extra has it)")
    theirs = _plugin_report(tmp_path)
    assert set(theirs) <= set(report)
    bad = next(t for t in theirs["tests"] if t["outcome"] == "failed")
    assert set(bad) <= set(failed)
    assert set(bad["call"]) <= set(failed["call"]) | {"stdout"}
    for key in ("crash", "traceback"):
        assert type(bad["call"][key]) is type(failed["call"][key])
    assert set(bad["call"]["crash"]) == set(failed["call"]["crash"])
    assert set(theirs["summary"]) <= set(report["summary"]) | {"failed", "passed"}
    for key, value in theirs.items():
        assert type(report[key]) is type(value), key


def test_a_clean_grading_exits_zero(tmp_path):
    score = grade(REFERENCE, tmp_path / "out", "--tasks", "1.1", "--no-shrink")
    report = json.loads((tmp_path / "out" / PYTEST_REPORT).read_text())
    assert score["_exit"] == 0 and report["exitcode"] == 0
    assert report["summary"]["passed"] == report["summary"]["total"] > 0
    assert {t["outcome"] for t in report["tests"]} == {"passed"}
