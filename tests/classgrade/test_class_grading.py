"""tinytrain-grade-class end to end on a small generated class (task 1.1): the gradebook
agrees with grading each submission alone, broken submissions cost only their own rows,
the near-copies top the similarity list, and a rerun resumes."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import pytest

from ..conftest import ROOT, grade, statuses, task_scores
from .class_builder import Student, build, make_student
from .class_fixtures import TASKS, grade_class, graded_class  # noqa: F401 - the fixture

NAMES = ["broken", "copy-a", "copy-b", "crash", "hang", "import-hang",
         "m-records-without-requires-grad", "memory", "no-package", "reference",
         "syntax-error", "template"]
NOT_GRADED = {"broken": "error", "no-package": "no package", "syntax-error": "did not import",
              "import-hang": "import timed out"}


def _score(report: Path, name: str) -> dict:
    return json.loads((report / "students" / name / "score.json").read_text())


def test_gradebook_has_otters_layout_and_a_row_per_submission(graded_class):  # noqa: F811
    assert graded_class.returncode == 0, graded_class.stderr
    with open(graded_class.report / "grades.csv", newline="") as handle:
        lines = list(csv.reader(handle))
    assert lines[0] == ["file", "1.1", "total_points_earned", "percent_correct", "grading_status"]
    assert lines[1] == ["points-per-question", "10", "10", "1", "--"]
    rows = {r["file"]: r for r in graded_class.grades()[1:]}
    assert sorted(rows) == NAMES
    assert rows["reference"]["1.1"] == "10" and rows["reference"]["percent_correct"] == "1"
    assert rows["copy-a"]["total_points_earned"] == rows["copy-b"]["total_points_earned"] == "10"
    assert rows["template"]["total_points_earned"] == "0"
    assert set(statuses(_score(graded_class.report, "template"))) == {"not_implemented"}
    # the submissions that could not be graded, each with its own status and reason
    assert rows["broken"]["grading_status"].startswith("error: not a valid zip file")
    assert rows["no-package"]["grading_status"].startswith("no package: no tinytrain package")
    assert "README.md" in rows["no-package"]["grading_status"]
    assert rows["syntax-error"]["grading_status"].startswith(
        "did not import: the submission could not be imported: SyntaxError")
    assert rows["import-hang"]["grading_status"].startswith(
        "import timed out: import tinytrain: no answer within")
    assert {n: r["grading_status"].split(":")[0] for n, r in rows.items()
            if r["grading_status"] != "Completed"} == NOT_GRADED
    for name in NOT_GRADED:
        assert rows[name]["total_points_earned"] == "0"
    for name in NAMES:
        folder = graded_class.report / "students" / name
        assert (folder / "feedback.html").is_file()
        assert (folder / "score.json").is_file() == (name not in ("broken", "no-package"))
    assert (f"{len(NAMES) - 4} graded, 4 not graded, 1 did not import, 1 error, "
            "1 import timed out, 1 no package") in graded_class.stdout


def test_broken_submissions_are_counted_apart_and_kept_out_of_the_causes(graded_class):  # noqa: F811
    page = (graded_class.report / "report.html").read_text()
    cards = dict(re.findall(r"<div class='card'>([^<]+)<b>([^<]+)</b>", page))
    assert (cards["graded"], cards["did not import"], cards["no package"],
            cards["grading failed"]) == (str(len(NAMES) - 4), "2", "1", "1")
    causes = page.split("id='failed'")[1].split("<h2")[0]
    for name in NOT_GRADED:
        assert f"students/{name}/" not in causes
    assert "could not be imported" not in causes and "No module named" not in causes
    rows = re.findall(r"<tr><td><code>(.*?)</code></td>", causes)
    assert rows and len(rows) == len(set(rows))  # one row per cause
    assert any("no answer within" in r for r in rows)  # the hang, a graded submission


@pytest.mark.parametrize("student", [
    Student("m-records-without-requires-grad", "mutant", "1.1"),
    Student("hang", "hang"), Student("crash", "crash"), Student("memory", "memory"),
    Student("copy-b", "copy", zipped=True),
], ids=lambda s: s.name)
def test_each_row_is_what_grading_it_alone_gives(graded_class, student, tmp_path):  # noqa: F811
    make_student(tmp_path / student.name, student)
    alone = grade(tmp_path / student.name, tmp_path / "out", "--tasks", TASKS, "--no-shrink")
    assert alone["_exit"] == 0, alone["_stderr"]
    in_class = _score(graded_class.report, student.name)
    assert task_scores(in_class) == task_scores(alone)
    row = next(r for r in graded_class.grades() if r["file"] == student.name)
    assert float(row["total_points_earned"]) == pytest.approx(alone["score"])
    if student.kind != "memory":  # filling memory ends in an error or a timeout, by speed
        assert statuses(in_class) == statuses(alone)
    assert in_class["seed"] == alone["seed"] == 0


def test_hang_and_crash_are_contained_in_their_rows(graded_class):  # noqa: F811
    hang = _score(graded_class.report, "hang")
    crash = _score(graded_class.report, "crash")
    assert "timeout" in statuses(hang) and "no answer within" in json.dumps(hang)
    assert "error" in statuses(crash) and "exited with code 3" in json.dumps(crash)
    page = (graded_class.report / "report.html").read_text()
    problems = page.split("id='problems'")[1].split("<h2")[0]
    for name in ("hang", "crash", "memory", "broken", "no-package"):
        assert f">{name}</a>" in problems
    assert ">reference</a>" not in problems and ">copy-a</a>" not in problems


def test_near_copies_top_the_similarity_list(graded_class):  # noqa: F811
    with open(graded_class.report / "similarity.csv", newline="") as handle:
        pairs = list(csv.DictReader(handle))
    top = pairs[0]
    assert {top["submission_a"], top["submission_b"]} == {"copy-a", "copy-b"}
    assert float(top["similarity_a"]) > 0.9 and float(top["similarity_b"]) > 0.9
    # code the whole class shares (the reference's) does not make anyone else alike
    assert all(int(p["shared_tokens"]) < int(top["shared_tokens"]) / 5 for p in pairs[1:])
    page = (graded_class.report / "report.html").read_text()
    section = page.split("id='similarity'")[1]
    assert "copy-a and copy-b: the shared code" in section and "<mark>" in section
    regions = (graded_class.report / "students" / "template" / "solution_regions.py").read_text()
    assert regions == ""  # the template itself has nothing of its own


def test_known_sources_are_listed_without_changing_the_pairs(graded_class, tmp_path):  # noqa: F811
    """A rerun with --known-sources (nothing regraded): a folder with the code copy-a and
    copy-b share ("found online") is listed against both, in the CSV and the report; the
    pairs are those of the first run; no one in the class (the reference, its variants,
    the copies) is listed against the grader's own modules."""
    from graders.classgrade.similarity import KNOWN_MIN

    from .class_builder import _alternatives

    shutil.copytree(graded_class.report, tmp_path / "report")
    (tmp_path / "online").mkdir()
    (tmp_path / "online" / "answers.py").write_text(
        "\n".join(textwrap.dedent(a.replace) for a in _alternatives()))
    rerun = grade_class(graded_class.submissions, tmp_path / "report", "--tasks", TASKS,
                        "--no-shrink", "--known-sources", str(tmp_path / "online"))
    assert rerun.returncode == 0, rerun.stderr
    assert f"graded 0 submission(s), kept {len(NAMES)}" in rerun.stdout

    def rows(report: Path) -> list[dict[str, str]]:
        with open(report / "similarity.csv", newline="") as handle:
            return list(csv.DictReader(handle))

    def pairs(found: list[dict[str, str]]) -> list[dict[str, str]]:
        """The pairs of two students (the grader's modules are compared in both runs:
        a few shared tokens with them, under KNOWN_MIN, are rows too)."""
        return [r for r in found if not r["submission_b"].startswith(("known:", "grader:"))]

    after = rows(tmp_path / "report")
    known = [r for r in after if r["submission_b"].startswith(("known:", "grader:"))]
    assert pairs(after) == pairs(rows(graded_class.report))
    listed = {(r["submission_a"], r["submission_b"]) for r in known
              if int(r["shared_tokens"]) >= KNOWN_MIN}
    assert listed == {("copy-a", "known:online"), ("copy-b", "known:online")}
    assert (tmp_path / "report" / "known_sources" / "online.py").is_file()
    section = (tmp_path / "report" / "report.html").read_text().split("id='known'")[1]
    assert "copy-a and known:online: the shared code marked" in section and "<mark>" in section
    assert ">reference</a>" not in section


def test_report_is_self_contained_and_links_each_student(graded_class):  # noqa: F811
    report = graded_class.report
    page = (report / "report.html").read_text()
    assert page.count("<svg") == 4
    assert "<script" not in page and "<link" not in page and "@import" not in page
    assert re.findall(r"url\((?!#)", page) == []  # only the SVGs' own clip paths
    for attribute in ("src=", "href="):
        for part in page.split(attribute)[1:]:
            target = part[1:].split(part[0], 1)[0]
            assert not target.startswith(("http:", "https:", "//")), target
            if attribute == "href=" and not target.startswith("#"):
                assert (report / target).exists(), target
    for name in NAMES:
        assert f"href='students/{name}/feedback.html'" in page
    hang_page = (report / "students" / "hang" / "feedback.html").read_text()
    assert "[TIMEOUT]" in hang_page and "seed" not in hang_page.lower()


def _running_graders(marker: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if marker in cmdline and "graders.cli" in cmdline:
                found.append(int(proc.name))
    return found


def test_interrupt_then_rerun_resumes_and_regrades_only_changes(tmp_path):
    students = [Student("reference", "reference"), Student("template", "template"),
                Student("m-records-without-requires-grad", "mutant", "1.1")]
    submissions = build(tmp_path / "class", students)
    out = tmp_path / "report"
    args = [sys.executable, "-m", "graders.classgrade.cli", str(submissions), "--out", str(out),
            "--tasks", TASKS, "--no-shrink", "--jobs", "1"]
    proc = subprocess.Popen(args, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600
    while not list(out.glob("students/*/grading.json")):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "run the same command again" in err
    assert _running_graders(str(submissions)) == []  # the running grading was killed
    done = len(list(out.glob("students/*/grading.json")))
    assert 1 <= done < 3
    assert not (out / "grades.csv").exists()

    again = grade_class(submissions, out, "--tasks", TASKS, "--no-shrink")
    assert again.returncode == 0, again.stderr
    assert f"graded {3 - done} submission(s), kept {done}" in again.stdout
    first = {r["file"]: r for r in csv.DictReader(open(out / "grades.csv"))}
    assert first["reference"]["total_points_earned"] == "10"

    unchanged = grade_class(submissions, out, "--tasks", TASKS, "--no-shrink")
    assert "graded 0 submission(s), kept 3" in unchanged.stdout
    assert {r["file"]: r for r in csv.DictReader(open(out / "grades.csv"))} == first

    # the student fixes the mutant: only that submission is graded again
    function = submissions / "m-records-without-requires-grad" / "tinytrain" / "autograd" / "function.py"
    reference = ROOT / "reference" / "tinytrain" / "autograd" / "function.py"
    function.write_text(reference.read_text())
    changed = grade_class(submissions, out, "--tasks", TASKS, "--no-shrink")
    assert "graded 1 submission(s), kept 2" in changed.stdout
    rows = {r["file"]: r for r in csv.DictReader(open(out / "grades.csv"))}
    assert rows["m-records-without-requires-grad"]["total_points_earned"] == "10"

    forced = grade_class(submissions, out, "--tasks", TASKS, "--no-shrink", "--force", "--jobs", "2")
    assert "graded 3 submission(s), kept 0" in forced.stdout
    assert {r["file"]: r for r in csv.DictReader(open(out / "grades.csv"))} == rows


def test_secret_seed_travels_only_in_the_environment(tmp_path):
    secret = "7340281"
    submissions = build(tmp_path / "class", [Student("reference", "reference")])
    out = tmp_path / "report"
    proc = subprocess.Popen(
        [sys.executable, "-m", "graders.classgrade.cli", str(submissions), "--out", str(out),
         "--tasks", TASKS, "--no-shrink"], cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TINYTRAIN_GRADER_SEED": secret},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen_graders, leaked = 0, []
    while proc.poll() is None:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            if secret in cmdline:
                leaked.append(cmdline)
            if "graders.cli" in cmdline and str(submissions) not in cmdline:
                seen_graders += 1
            if "graders.harness.worker" in cmdline and secret.encode() in environ:
                leaked.append(f"worker environment: {cmdline}")
        time.sleep(0.1)
    _, err = proc.communicate()
    assert proc.returncode == 0, err
    assert seen_graders > 0  # the grader was seen running (from its temporary copy)
    assert leaked == []
    score = json.loads((out / "students" / "reference" / "score.json").read_text())
    assert score["seed"] == int(secret)
    assert f"{secret} (secret, from $TINYTRAIN_GRADER_SEED)" in (out / "report.html").read_text()

    # another seed is another grading: the seed is part of what a rerun compares
    rerun = grade_class(submissions, out, "--tasks", TASKS, "--no-shrink")
    assert "graded 1 submission(s), kept 0" in rerun.stdout
    assert json.loads((out / "students" / "reference" / "score.json").read_text())["seed"] == 0


def test_zip_entries_and_a_gradescope_export_grade_like_folders(tmp_path):
    """A Gradescope export zip: submission_metadata.yml names the submitters and times."""
    export = tmp_path / "export"
    make_student(export / "assignment_1_export" / "submission_101", Student("reference", "reference"))
    # this student uploaded the package on its own (no tinytrain/ folder around it)
    package = export / "assignment_1_export" / "submission_102"
    make_student(tmp_path / "staging", Student("template", "template"))
    (tmp_path / "staging" / "tinytrain").rename(package)
    (export / "assignment_1_export" / "submission_metadata.yml").write_text(
        "submission_101:\n  :submitters:\n  - :name: Ada Lovelace\n    :sid: '101'\n"
        "    :email: ada@example.edu\n  :created_at: 2024-03-02 10:00:00.000000000 +00:00\n"
        "  :score: 0.0\n"
        "submission_102:\n  :submitters:\n  - :name: Alan Turing\n    :sid: '102'\n"
        "  :created_at: 2024-03-01 20:00:00.000000000 -08:00\n")
    archive = tmp_path / "submissions.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for path in sorted(export.rglob("*")):
            if path.is_file():
                z.write(path, str(path.relative_to(export)))
    result = grade_class(archive, tmp_path / "report", "--tasks", TASKS, "--no-shrink",
                         "--jobs", "2", "--deadline", "2024-03-01T23:59:00-08:00",
                         "--late-penalty", "10", "--late-cap", "30")
    assert result.returncode == 0, result.stderr
    rows = {r["file"]: r for r in csv.DictReader(open(tmp_path / "report" / "grades.csv"))}
    ada, alan = rows["submission_101"], rows["submission_102"]
    assert (ada["name"], ada["sid"], ada["email"]) == ("Ada Lovelace", "101", "ada@example.edu")
    # deadline 2024-03-02 07:59 UTC; Ada submitted at 10:00 UTC: one started day late
    assert (ada["total_points_earned"], ada["days_late"], ada["penalty_percent"],
            ada["penalty_points"], ada["final_points"]) == ("10", "1", "10", "1", "9")
    assert alan["days_late"] == "0" and alan["final_points"] == alan["total_points_earned"] == "0"
    assert alan["grading_status"] == "Completed"
    assert set(statuses(_score(tmp_path / "report", "submission_102"))) == {"not_implemented"}
    page = (tmp_path / "report" / "report.html").read_text()
    assert "10% of the raw points per started day late, at most 30%" in page
