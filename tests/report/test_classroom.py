"""GitHub Classroom: classroom.json as autograding-grading-reporter v1 reads it.

The reporter (classroom-resources/autograding-grading-reporter, tag v1) sums every test's
``score`` in floating point for the grade it records, prints ``passed / entries x
max_score`` per runner, prints ``name``, `` - line {line_no}`` unless 0, ``test_code``, and
``message`` for an ``error`` test, and reads each runner from one environment string
(Linux refuses one over 131,072 bytes). These tests check those fields in Python, in the
reporter's order of summation; ``test_real_reporter`` runs the reporter itself under node
when ``CLASSROOM_REPORTER`` names a clone of its repository.
"""

from __future__ import annotations

import base64
import json
import os
import random
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
import yaml

from graders import rubric
from graders.cli import write_outputs
from graders.report import Score, TaskScore, error_score
from graders.report.classroom import (
    GRID,
    classroom_json,
    encode,
    main,
    runner_name,
    split_runners,
)
from graders.rubric import Task
from graders.runner.results import TestResult

from ..conftest import REFERENCE, ROOT, TEMPLATE, grade
from ..mutants import all_mutants

RUBRIC = rubric.load()
LIMIT = 100_000  # bytes of base64: well under Linux's 131,072 for one environment string
READ_FIELDS = {"name", "status", "score", "line_no", "test_code", "message"}


def score_from_json(data: dict) -> Score:
    """The Score a score.json was written from (as the CLI builds it)."""
    tasks = []
    for t in data["tasks"]:
        task = Task(t["id"], t["title"], float(t["max_score"]), t["visibility"])
        tests = [TestResult(name=x["name"], task=t["id"], status=x["status"],
                            message=x["message"], duration=x["duration"], output=x["output"],
                            description=x["description"]) for x in t["tests"]]
        tasks.append(TaskScore(task, tests))
    return Score(data["submission"], tasks, data["seed"], data["profile"], data["sandbox"],
                 error=data["error"])


def reporter_total(runners: list[tuple[str, dict]]) -> float:
    """NotifyClassroom's totalPoints: a float sum over runners and tests, in order."""
    total = 0.0
    for _, results in runners:
        if not results["max_score"]:
            continue
        for test in results["tests"]:
            total += test["score"]
    return total


def console_score(results: dict) -> float:
    """getTestScore: the runner's total as the reporter prints it."""
    passed = sum(t["status"] == "pass" for t in results["tests"])
    return passed / len(results["tests"]) * results["max_score"]


def exact_score(score: Score) -> Fraction:
    return sum((Fraction(t.task.points) * t.passed / len(t.tests) for t in score.tasks if t.tests),
               Fraction(0))


def on_grid(x: Fraction) -> Fraction:
    return Fraction(round(x * GRID), GRID)


def written_size(score: Score, tmp_path: Path) -> int:
    """Bytes of classroom.json as the CLI writes it, base64-encoded."""
    write_outputs(tmp_path, score)
    return len(base64.b64encode((tmp_path / "classroom.json").read_bytes()))


def with_statuses(template: Score, status_of) -> Score:
    """``template``'s tests with the statuses (and messages) ``status_of(task, i)`` gives."""
    tasks = []
    for t in template.tasks:
        tests = []
        for i, r in enumerate(t.tests):
            status, message = status_of(t.task, i)
            tests.append(TestResult(r.name, r.task, status, message, r.duration, "", r.description))
        tasks.append(TaskScore(t.task, tests))
    return Score("sub", tasks, 0, "default", True)


def check_reporter_fields(doc: dict) -> None:
    assert doc["version"] == 1 and doc["tests"]
    for test in doc["tests"]:
        assert set(test) <= READ_FIELDS, test
        assert test["line_no"] == 0  # the reporter prints " - line undefined" without it
        assert isinstance(test["score"], int | float) and test["score"] >= 0
        assert test["status"] in ("pass", "fail", "error")
        if test["status"] == "error":
            assert test["message"]  # else the reporter prints "Failed to run test"
        assert Fraction(test["score"]) * GRID == int(Fraction(test["score"]) * GRID)


def test_reference_totals_exactly_the_rubric_maximum(reference_score):
    maximum = sum(t.points for t in RUBRIC.tasks)  # derived, never hard-coded
    doc = classroom_json(score_from_json(reference_score))
    check_reporter_fields(doc)
    runners = split_runners(doc)
    assert reporter_total(runners) == maximum
    assert sum(r["max_score"] for _, r in runners) == doc["max_score"] == maximum
    assert doc["status"] == "pass" and {r["status"] for _, r in runners} == {"pass"}
    for task, (name, results) in zip(RUBRIC.tasks, runners):
        assert name == runner_name(task.id)
        assert results["max_score"] == task.points
        assert console_score(results) == task.points
        assert reporter_total([(name, results)]) == task.points


def test_partial_points_are_exact_binary_fractions(template_score):
    """Random pass patterns over the real test list: the recorded total is the exact score
    rounded to 1/1024, each task within 1/1024 of its score, the console line per runner
    equal to the task's score, and no float rounding anywhere in the reporter's sum."""
    template = score_from_json(template_score)
    for seed in range(20):
        rng = random.Random(seed)
        chance = {t.task.id: rng.choice([0.0, 1.0, rng.random()]) for t in template.tasks}
        score = with_statuses(template, lambda task, i, rng=rng, chance=chance: (
            ("passed", "") if rng.random() < chance[task.id] else ("failed", "wrong")))
        doc = classroom_json(score)
        check_reporter_fields(doc)
        runners = split_runners(doc)
        assert Fraction(reporter_total(runners)) == on_grid(exact_score(score))
        assert Fraction(doc["max_score"]) == sum(Fraction(t.points) for t in RUBRIC.tasks)
        for task_score, (_, results) in zip(score.tasks, runners):
            exact = Fraction(task_score.task.points) * task_score.passed / len(task_score.tests)
            got = sum(Fraction(t["score"]) for t in results["tests"])
            assert abs(got - exact) <= Fraction(1, GRID)
            if task_score.passed in (0, len(task_score.tests)):
                assert got == exact and len(results["tests"]) == 1
            else:
                assert len(results["tests"]) == len(task_score.tests)
            assert console_score(results) == pytest.approx(float(exact), abs=1e-9)


def test_a_whole_score_made_of_thirds_is_whole():
    """The issue's 39.9997 for a 40/50 submission: task scores in thirds that add up to a
    whole number are recorded as exactly that number."""
    passed = {"1.1": (10, 2, 3), "1.2": (20, 4, 6), "1.3": (10, 3, 9), "1.4": (10, 2, 3)}
    tasks = []
    for task_id, (points, k, n) in passed.items():
        tests = [TestResult(f"t{i}", task_id, "passed" if i < k else "failed", "wrong")
                 for i in range(n)]
        tasks.append(TaskScore(Task(task_id, task_id, points), tests))
    score = Score("sub", tasks, 0, "default", True)
    assert exact_score(score) == 30
    doc = classroom_json(score)
    check_reporter_fields(doc)
    assert reporter_total(split_runners(doc)) == 30.0
    assert doc["max_score"] == 50


def test_template_and_import_error_stay_small(template_score, tmp_path):
    """classroom.json as the CLI writes it stays under 100 KB base64 for the template and
    for a submission that does not import; so does each runner of a worst case."""
    template = score_from_json(template_score)
    assert written_size(template, tmp_path / "template") < LIMIT
    reason = ("the submission could not be imported: SyntaxError: invalid syntax "
              "(tinytrain/__init__.py, line 1)\n" + "  File ...\n" * 200)
    unimportable = with_statuses(template, lambda task, i: ("error", reason))
    assert written_size(unimportable, tmp_path / "import") < LIMIT
    doc = classroom_json(unimportable)
    check_reporter_fields(doc)
    assert reporter_total(split_runners(doc)) == 0
    assert len(doc["tests"]) == len(template.tasks)  # one entry per task: all failed
    # the worst case for one runner: every task partly done, every message long
    worst = with_statuses(template, lambda task, i: (("passed", "") if i % 2 else
                                                     ("failed", "x" * 5000 + "\n" * 100)))
    for name, results in split_runners(classroom_json(worst)):
        assert len(encode(results)) < LIMIT, name
    sizes = {name: len(encode(r)) for name, r in split_runners(classroom_json(worst))}
    print(f"worst-case runner: {max(sizes.values())} bytes base64")


def test_grading_error_is_an_error_test_with_its_reason(tmp_path):
    tasks = RUBRIC.select("1")
    score = error_score("sub", tasks, "the grader suites failed to load", seed=0,
                        profile="default", sandbox=True)
    doc = classroom_json(score)
    check_reporter_fields(doc)
    assert doc["status"] == "error"
    [(name, results)] = split_runners(doc)
    assert name == "tinytrain"
    assert results["max_score"] == sum(t.points for t in tasks)
    [test] = results["tests"]
    assert test["status"] == "error" and "the grader suites failed to load" in test["message"]
    assert console_score(results) == 0  # not NaN: the list is not empty


def test_workflow_split_writes_github_env_and_output(tmp_path, template_score):
    write_outputs(tmp_path, score_from_json(template_score))
    env, output = tmp_path / "env", tmp_path / "output"
    assert main([str(tmp_path / "classroom.json"), "--env", str(env), "--output", str(output)]) == 0
    runners = output.read_text().strip().removeprefix("runners=").split(",")
    assert runners == [runner_name(t.id) for t in RUBRIC.tasks]
    lines = env.read_text().splitlines()
    assert [line.split("=", 1)[0] for line in lines] == [f"{r.upper()}_RESULTS" for r in runners]
    for line in lines:
        results = json.loads(base64.b64decode(line.split("=", 1)[1]))
        assert results["status"] == "fail" and results["tests"][0]["score"] == 0
    # nothing to read: one error runner that says why
    missing = tmp_path / "none"
    main([str(missing / "classroom.json"), "--env", str(missing) + "-env",
          "--output", str(missing) + "-out"])
    line = Path(str(missing) + "-env").read_text().strip()
    assert line.startswith("TINYTRAIN_RESULTS=")
    results = json.loads(base64.b64decode(line.split("=", 1)[1]))
    assert results["status"] == "error" and "no grading result" in results["tests"][0]["message"]


def test_a_result_without_a_runners_index_is_one_runner():
    doc = {"version": 1, "status": "pass", "max_score": 10,
           "tests": [{"name": "t", "status": "pass", "score": 10, "line_no": 0}]}
    assert split_runners(doc) == [("tinytrain", doc)]


def workflow_steps() -> dict[str, dict]:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "classroom.yml").read_text())
    [job] = workflow["jobs"].values()
    return {step.get("name", step.get("uses", "")): step for step in job["steps"]}


def test_workflow_reports_always_from_one_variable_per_runner():
    steps = workflow_steps()
    report = steps["Report to GitHub Classroom"]
    assert report["uses"] == "classroom-resources/autograding-grading-reporter@v1"
    assert report["if"].startswith("always()")  # an exit of 2 or 3 still reports
    assert steps["Grade"]["if"].startswith("always()")
    assert report["with"]["runners"] == "${{ steps.tinytrain.outputs.runners }}"
    assert "env" not in report  # the results come through $GITHUB_ENV, one per runner


@pytest.mark.parametrize("case", ["graded", "no score file", "no grader"])
def test_workflow_grade_step(tmp_path, template_score, case):
    """The Grade step's script, run by bash: it passes the grader's exit code on and always
    leaves runners for the report step (an error runner when there is nothing to report)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    work = tmp_path / "repo"
    work.mkdir()
    if case == "graded":
        write_outputs(work / "grading", score_from_json(template_score))
    grader = bin_dir / "tinytrain-grade"
    grader.write_text("#!/bin/sh\nexit 3\n")
    grader.chmod(0o755)
    python = bin_dir / "python"
    python.write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n" if case != "no grader"
                      else "#!/bin/sh\necho 'No module named graders' >&2; exit 1\n")
    python.chmod(0o755)
    env_file, out_file = tmp_path / "github_env", tmp_path / "github_output"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHONPATH": str(ROOT),
           "GITHUB_ENV": str(env_file), "GITHUB_OUTPUT": str(out_file)}
    proc = subprocess.run(["bash", "-e", "-c", workflow_steps()["Grade"]["run"]], cwd=work,
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stderr
    runners = out_file.read_text().strip().removeprefix("runners=").split(",")
    values = dict(line.split("=", 1) for line in env_file.read_text().splitlines())
    assert list(values) == [f"{r.upper()}_RESULTS" for r in runners]
    docs = [json.loads(base64.b64decode(v)) for v in values.values()]
    for doc in docs:
        check_reporter_fields(doc)
    if case == "graded":
        assert runners == [runner_name(t.id) for t in RUBRIC.tasks]
    else:
        assert runners == ["tinytrain"] and docs[0]["status"] == "error"
        assert docs[0]["tests"][0]["message"]


def js_number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


@pytest.mark.skipif(not os.environ.get("CLASSROOM_REPORTER"),
                    reason="CLASSROOM_REPORTER (a clone of autograding-grading-reporter) not set")
def test_real_reporter(tmp_path):
    """The real reporter under node prints the exact totals: the rubric's maximum for the
    reference, the score rounded to 1/1024 for a mutant, 0 for the template and for a
    submission that does not import, and never NaN or 'line undefined'."""
    script = ROOT / "scripts" / "classroom_reporter.py"

    def report(out: Path) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(script), str(out)], capture_output=True,
                              text=True, timeout=300)

    def expect(out: Path, proc: subprocess.CompletedProcess) -> str:
        score = score_from_json(json.loads((out / "score.json").read_text()))
        assert "NaN" not in proc.stdout and "line undefined" not in proc.stdout, proc.stdout
        maximum = sum(t.task.points for t in score.tasks)
        total = float(on_grid(exact_score(score)))
        line = f"::notice title=Autograding complete::Points {js_number(total)}/{js_number(maximum)}"
        assert line in proc.stdout.splitlines(), proc.stdout[-3000:]
        for t in score.tasks:
            shown = f"{t.task.points * t.passed / len(t.tests):.2f}"
            runner = runner_name(t.task.id)
            assert f"Total points for {runner}: {shown}/{t.task.points:g}" in proc.stdout
        return line

    reference = grade(REFERENCE, tmp_path / "ref")
    proc = report(tmp_path / "ref")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    maximum = sum(t.points for t in RUBRIC.tasks)
    assert expect(tmp_path / "ref", proc).endswith(f"Points {maximum:g}/{maximum:g}")
    assert reference["score"] == maximum

    mutant = next(m for m in all_mutants() if m.id == "shared-parameter-one-path")
    mutant.apply(tmp_path / "mutant")
    partial = grade(tmp_path / "mutant", tmp_path / "mut", "--tasks", "1", "--no-shrink")
    assert 0 < partial["score"] < partial["max_score"]
    proc = report(tmp_path / "mut")
    assert proc.returncode == 1  # "Some tests failed.", as the Actions step would
    expect(tmp_path / "mut", proc)

    grade(TEMPLATE, tmp_path / "tpl")
    proc = report(tmp_path / "tpl")
    assert proc.returncode == 1
    assert not [line for line in proc.stdout.splitlines() if line.startswith("Error:")]
    expect(tmp_path / "tpl", proc)

    shutil.copytree(TEMPLATE / "tinytrain", tmp_path / "syntax" / "tinytrain")
    (tmp_path / "syntax" / "tinytrain" / "ops" / "arithmetic.py").write_text("def broken(:\n")
    grade(tmp_path / "syntax", tmp_path / "syn", "--tasks", "1")
    proc = report(tmp_path / "syn")
    assert proc.returncode == 1
    expect(tmp_path / "syn", proc)
    assert "SyntaxError" in proc.stdout
