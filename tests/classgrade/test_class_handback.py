"""A term's week, as an instructor runs it: a small class graded with a secret seed, a
deadline, submission times, per-student extensions and overrides and a roster; then a
student fixes their work and the class is graded again. Checked: the hand-back folders
hold only what each student may see, the LMS exports read back as Canvas and Gradescope
read them, and history.jsonl keeps both gradings, the report showing the change."""

from __future__ import annotations

import csv
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from filelock import FileLock

from graders.classgrade.exports import CANVAS_HEADER, GRADESCOPE_HEADER

from ..conftest import ROOT
from .class_builder import Student, build
from .class_fixtures import grade_class

SEED = "918273645"
DEADLINE = "2026-03-01T23:59:00+00:00"
STUDENTS = [Student("alice-wu", "reference"),
            Student("bruno-diaz", "mutant", "1.1"),  # renamed below: a known-wrong variant
            Student("chen-li", "reference"),
            Student("dana-kim", "template"),
            Student("team-ember", "reference", zipped=True),
            Student("omar-syntax", "syntax")]
MUTANT = "m-records-without-requires-grad"
TIMES = {"alice-wu": "2026-03-01T20:00:00+00:00",  # on time
         "bruno-diaz": "2026-03-02T10:00:00+00:00",  # one started day late: 10%
         "chen-li": "2026-03-03T10:00:00+00:00",  # two days late, three days' extension
         "dana-kim": "2026-03-05T10:00:00+00:00",  # late, but the final points overridden
         "team-ember": "2026-03-01T23:00:00+00:00",
         "omar-syntax": "2026-03-01T22:00:00+00:00"}
ROSTER = [  # submission, name, sid, email, canvas_id, login, section
    ("alice-wu", "Alice Wu", "S001", "alice@uni.edu", "101", "awu", "A"),
    ("bruno-diaz", "Bruno Diaz", "S002", "bruno@uni.edu", "102", "bdiaz", "A"),
    ("chen-li", "Chen Li", "S003", "", "", "", "B"),
    ("dana-kim", "Dana Kim", "S004", "dana@uni.edu", "104", "", "B"),
    ("team-ember", "Eve Ember", "S005", "eve@uni.edu", "105", "", "A"),
    ("team-ember", "Finn Ember", "S006", "finn@uni.edu", "106", "", "A"),
    ("omar-syntax", "Omar Said", "S007", "omar@uni.edu", "107", "", "B"),
    ("", "Gail Absent", "S008", "gail@uni.edu", "108", "", "A"),  # submitted nothing
]


@dataclass(frozen=True)
class Week:
    submissions: Path
    report: Path
    first: dict
    second: dict


def _write_inputs(folder: Path) -> list[str]:
    (folder / "seed").write_text(SEED + "\n")
    with open(folder / "times.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["submission", "submitted_at"])
        writer.writerows(sorted(TIMES.items()))
    with open(folder / "roster.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["submission", "name", "sid", "email", "canvas_id", "login", "section"])
        writer.writerows(ROSTER)
    (folder / "adjustments.csv").write_text(
        "submission,extension_days,override_points,note\n"
        "chen-li,3,,medical\n"
        "S004,,4,regrade request\n")  # by SID
    return ["--tasks", "1.1", "--no-shrink", "--jobs", "2", "--seed-file", str(folder / "seed"),
            "--deadline", DEADLINE, "--submission-times", str(folder / "times.csv"),
            "--roster", str(folder / "roster.csv"), "--adjustments",
            str(folder / "adjustments.csv"), "--lms-assignment", "Homework 1 (555)"]


@pytest.fixture(scope="module")
def week(tmp_path_factory: pytest.TempPathFactory) -> Week:
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = shared / "class-week"
    with FileLock(str(shared / "class-week.lock")):
        done = folder / "done.json"
        if not done.exists():
            folder.mkdir(parents=True, exist_ok=True)
            students = [s if s.kind != "mutant" else Student(MUTANT, "mutant", "1.1")
                        for s in STUDENTS]
            submissions = build(folder / "class", students)
            (submissions / MUTANT).rename(submissions / "bruno-diaz")
            args = _write_inputs(folder)
            first = grade_class(submissions, folder / "report", *args)
            snapshot = {p.name: (folder / "report" / "handback" / "bruno-diaz" / p.name)
                        .read_text() for p in (folder / "report" / "handback" / "bruno-diaz")
                        .glob("*.json")}
            # Bruno fixes his work: the one submission graded again
            fixed = (ROOT / "reference" / "tinytrain" / "autograd" / "function.py").read_text()
            (submissions / "bruno-diaz" / "tinytrain" / "autograd" / "function.py").write_text(fixed)
            second = grade_class(submissions, folder / "report", *args)
            done.write_text(json.dumps({
                "first": {"rc": first.returncode, "out": first.stdout, "err": first.stderr,
                          "bruno": snapshot},
                "second": {"rc": second.returncode, "out": second.stdout, "err": second.stderr},
            }))
        result = json.loads(done.read_text())
    return Week(folder / "class", folder / "report", result["first"], result["second"])


def _grades(week: Week) -> dict[str, dict[str, str]]:
    with open(week.report / "grades.csv", newline="") as handle:
        return {r["file"]: r for r in list(csv.DictReader(handle))[1:]}


def test_both_runs_grade_and_the_second_regrades_only_the_fix(week):
    assert week.first["rc"] == 0, week.first["err"]
    assert week.second["rc"] == 0, week.second["err"]
    assert f"graded {len(STUDENTS)} submission(s), kept 0" in week.first["out"]
    assert f"graded 1 submission(s), kept {len(STUDENTS) - 1}" in week.second["out"]


def test_late_policy_applies_extensions_and_overrides(week):
    rows = _grades(week)
    assert rows["alice-wu"]["final_points"] == "10" and rows["alice-wu"]["days_late"] == "0"
    # Chen: two days after the deadline, within a three-day extension
    assert rows["chen-li"]["days_late"] == "0" and rows["chen-li"]["final_points"] == "10"
    assert rows["chen-li"]["adjustment"] == "extension of 72 h (medical)"
    # Dana: the template (0 points), late, overridden to 4 (matched by SID)
    assert rows["dana-kim"]["total_points_earned"] == "0" and rows["dana-kim"]["days_late"] == "4"
    assert rows["dana-kim"]["final_points"] == "4"
    # Bruno, after the fix: full raw points, one day late
    assert rows["bruno-diaz"]["total_points_earned"] == "10"
    assert (rows["bruno-diaz"]["days_late"], rows["bruno-diaz"]["final_points"]) == ("1", "9")
    assert rows["omar-syntax"]["grading_status"].startswith("did not import")


def test_history_keeps_every_grading_and_the_report_shows_the_change(week):
    lines = [json.loads(x) for x in (week.report / "history.jsonl").read_text().splitlines()]
    by_name: dict[str, list[dict]] = {}
    for line in lines:
        by_name.setdefault(line["submission"], []).append(line)
    assert sorted(by_name) == sorted(s.name for s in STUDENTS)
    bruno = by_name["bruno-diaz"]
    assert len(bruno) == 2 and all(len(by_name[n]) == 1 for n in by_name if n != "bruno-diaz")
    assert bruno[0]["score"] < bruno[1]["score"] == 10
    assert bruno[0]["content_hash"] != bruno[1]["content_hash"]
    assert all(re.fullmatch(r"[0-9a-f]{64}", x["content_hash"]) for x in lines)
    assert by_name["omar-syntax"][0]["status"] == "import_error"
    assert SEED not in (week.report / "history.jsonl").read_text()
    section = (week.report / "report.html").read_text().split("id='changes'")[1].split("<h2")[0]
    assert ">bruno-diaz</a>" in section and ">alice-wu</a>" not in section
    assert bruno[0]["content_hash"][:12] in section and bruno[1]["content_hash"][:12] in section


def test_handback_holds_only_what_the_student_may_see(week):
    handback = week.report / "handback"
    assert sorted(p.name for p in handback.iterdir()) == sorted(s.name for s in STUDENTS)
    others = {s.name for s in STUDENTS} | {r[1] for r in ROSTER}
    for folder in handback.iterdir():
        files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
        assert {"feedback.html", "scores.json"} <= set(files), folder.name
        assert all(f in ("feedback.html", "scores.json") or re.fullmatch(r"reproducers/[\w.-]+\.py", f)
                   for f in files), files
        mine = {folder.name, *(r[1] for r in ROSTER if r[0] == folder.name)}
        for name in files:
            text = (folder / name).read_text()
            assert SEED not in text, (folder.name, name)
            for word in ("report.html", "score.json", "similarity", "grader_version",
                         "grades.csv", "feedback.txt"):
                assert word not in text.lower(), (folder.name, name, word)
            for other in others - mine:
                assert other not in text, (folder.name, name, other)
        data = json.loads((folder / "scores.json").read_text())
        assert not [k for k in data if "seed" in k or k in ("environment", "options", "profile")]
        page = (folder / "feedback.html").read_text()
        for target in re.findall(r"(?:href|src)='([^']*)'", page):
            assert target.startswith("reproducers/") and (folder / target).is_file(), target
        assert "<script" not in page and "http" not in page


def test_handback_scores_are_the_final_ones(week):
    def scores(name: str) -> dict:
        return json.loads((week.report / "handback" / name / "scores.json").read_text())

    bruno = scores("bruno-diaz")
    assert (bruno["raw_points"], bruno["days_late"], bruno["penalty_points"],
            bruno["final_points"]) == (10, 1, 1, 9)
    page = (week.report / "handback" / "bruno-diaz" / "feedback.html").read_text()
    assert "<th>final points</th><td>9 / 10</td>" in page and "-1 (10%)" in page
    assert scores("dana-kim")["final_points"] == 4
    assert "final points set to 4 (regrade request)" in scores("dana-kim")["adjustment"]
    # before his fix, Bruno's hand-back had the reproducers of his failing tests
    before = json.loads(week.first["bruno"]["scores.json"])
    assert before["raw_points"] < 10
    assert before["final_points"] == pytest.approx(before["raw_points"] * 0.9, abs=1e-3)


def test_a_failing_submission_gets_its_reproducers(week, tmp_path):
    """Grade Bruno's first version alone into a scratch report (the class copy was fixed):
    each reproducer printed in score.json is a file of the hand-back, linked from the page."""
    from graders.classgrade.handback import reproducers

    from .class_builder import make_student

    make_student(tmp_path / "class" / "bruno-diaz", Student(MUTANT, "mutant", "1.1"))
    result = grade_class(tmp_path / "class", tmp_path / "report", "--tasks", "1.1", "--no-shrink")
    assert result.returncode == 0, result.stderr
    score = json.loads((tmp_path / "report" / "students" / "bruno-diaz" / "score.json").read_text())
    printed = {code for t in score["tasks"] for test in t["tests"] if test["status"] != "passed"
               for code in reproducers(test["message"])}
    assert printed
    folder = tmp_path / "report" / "handback" / "bruno-diaz"
    written = {p.read_text().split("\n", 2)[2].strip() for p in (folder / "reproducers").iterdir()}
    assert written == printed
    page = (folder / "feedback.html").read_text()
    for path in (folder / "reproducers").iterdir():
        assert f"href='reproducers/{path.name}'" in page


def test_lms_exports_read_back_as_canvas_and_gradescope_read_them(week):
    finals = {n: r["final_points"] for n, r in _grades(week).items()}
    with open(week.report / "canvas.csv", newline="") as handle:
        lines = list(csv.reader(handle))
    assert tuple(lines[0]) == (*CANVAS_HEADER, "Homework 1 (555)")
    canvas = [dict(zip(lines[0], line, strict=True)) for line in lines[1:]]
    # one row per student; every member of a group; nobody who did not submit
    assert sorted(r["Student"] for r in canvas) == sorted(r[1] for r in ROSTER if r[0])
    assert not [r for r in canvas if "points possible" in r["Student"].lower()]
    for row in canvas:
        member = next(r for r in ROSTER if r[1] == row["Student"])
        assert (row["ID"], row["SIS User ID"], row["SIS Login ID"], row["Section"]) == (
            member[4], member[2], member[5], member[6])
        assert row["Homework 1 (555)"] == finals[member[0]]
        float(row["Homework 1 (555)"])  # a number, as Canvas needs
    ember = [r["Homework 1 (555)"] for r in canvas if r["Student"].endswith("Ember")]
    assert ember == [finals["team-ember"]] * 2
    with open(week.report / "gradescope.csv", newline="") as handle:
        gradescope = list(csv.DictReader(handle))
    assert tuple(gradescope[0]) == GRADESCOPE_HEADER
    assert {r["SID"]: r["Total Score"] for r in gradescope} == {
        r[2]: finals[r[0]] for r in ROSTER if r[0]}
    page = (week.report / "report.html").read_text()
    assert "1 student(s) on the roster have no submission" in page and "Gail Absent" in page


def test_late_rows_are_marked_in_the_report(week):
    table = (week.report / "report.html").read_text().split("id='students'")[1].split("<h2")[0]
    late = re.findall(r"<tr class='late'><td><a class='feedback' href='[^']*'>([^<]+)</a>", table)
    assert sorted(late) == ["bruno-diaz", "dana-kim"]  # Chen's extension covers his days
