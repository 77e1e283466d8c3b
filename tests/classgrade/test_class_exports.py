"""The roster's mapping from submissions to students for each layout, and the LMS files
read back (unit tests: rows made by hand, no grading)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from graders.classgrade.collect import Entry
from graders.classgrade.exports import CANVAS_HEADER, canvas_csv, gradescope_csv, members, read_roster
from graders.classgrade.gradebook import Row


def _row(entry: Entry, total: float) -> Row:
    return Row(entry=entry, status="graded", reason="", duration=1.0, score=None, total=total)


def _roster(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "roster.csv"
    path.write_text(text)
    return path


def test_classroom_gradescope_and_plain_layouts_map_to_students(tmp_path):
    classroom = Entry("octocat", Path("hw1-submissions/hw1-octocat"), names=["octocat"])
    export = Entry("submission_7", Path("export/submission_7"), names=["Ada L", "Bo K"],
                   sids=["11", "12"], emails=["ada@u.edu", "bo@u.edu"])
    plain = Entry("carol", Path("class/carol.zip"))
    roster = read_roster(_roster(tmp_path, (
        "submission,name,sid,email,canvas_id\n"
        "octocat,Octo Cat,21,octo@u.edu,301\n"
        ",Ada Lovelace,11,,302\n"  # by SID, against the export's submitters
        ",Bo Kim,,bo@u.edu,303\n"  # by email
        "carol,Carol Danvers,23,,304\n")))
    people, notes = members([classroom, export, plain], roster)
    assert [p.name for p in people["octocat"]] == ["Octo Cat"]
    assert sorted(p.name for p in people["submission_7"]) == ["Ada Lovelace", "Bo Kim"]
    assert [p.canvas_id for p in people["carol"]] == ["304"]
    assert notes == []
    rows = [_row(classroom, 7), _row(export, 9.5), _row(plain, 0)]
    lines = list(csv.reader(io.StringIO(canvas_csv(rows, people, "HW 1 (9)"))))
    assert tuple(lines[0][:5]) == CANVAS_HEADER and lines[0][5] == "HW 1 (9)"
    read = {line[0]: (line[1], line[2], line[5]) for line in lines[1:]}
    assert read == {"Octo Cat": ("301", "21", "7"), "Ada Lovelace": ("302", "11", "9.5"),
                    "Bo Kim": ("303", "", "9.5"), "Carol Danvers": ("304", "23", "0")}


def test_without_a_roster_the_export_names_the_students_and_the_rest_is_flagged():
    export = Entry("submission_7", Path("export/submission_7"), names=["Ada L", "Bo K"],
                   sids=["11", "12"], emails=["ada@u.edu", "bo@u.edu"])
    plain = Entry("carol", Path("class/carol"))
    people, notes = members([export, plain], None)
    assert [(p.name, p.sid, p.email) for p in people["submission_7"]] == [
        ("Ada L", "11", "ada@u.edu"), ("Bo K", "12", "bo@u.edu")]
    assert any("an LMS cannot match" in n and "carol" in n for n in notes)
    text = gradescope_csv([_row(export, 3), _row(plain, 4)], people)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [(r["Name"], r["SID"], r["Total Score"]) for r in rows] == [
        ("carol", "", "4"), ("Ada L", "11", "3"), ("Bo K", "12", "3")]


def test_roster_problems_are_named(tmp_path):
    with pytest.raises(ValueError, match="unknown column"):
        read_roster(_roster(tmp_path, "submission,name,phone\na,b,c\n"))
    entry = Entry("dave", Path("class/dave"))
    people, notes = members([entry], read_roster(_roster(
        tmp_path, "submission,name,sid\nnobody,Nora,31\n")))
    assert people["dave"] == []
    assert any("have no submission" in n and "Nora" in n for n in notes)
    assert any("match nobody on the roster" in n and "dave" in n for n in notes)


def test_an_override_without_a_deadline_shows_final_points(tmp_path):
    """Adjustments apply without a late policy: the override is the final points in the
    gradebook and the report."""
    from datetime import UTC, datetime

    from graders import rubric
    from graders.classgrade import report
    from graders.classgrade.gradebook import grades_csv
    from graders.classgrade.late import Adjustment

    tasks = rubric.load().select("1.1")
    row = _row(Entry("erin", Path("class/erin")), 3)
    row.task_points = {"1.1": 3.0}
    row.adjustment = Adjustment(override_points=8, note="oral exam")
    read = list(csv.DictReader(io.StringIO(grades_csv([row], tasks, None))))[1]
    assert (read["total_points_earned"], read["final_points"]) == ("3", "8")
    assert read["adjustment"] == "final points set to 8 (oral exam)"
    ctx = report.Context(title="t", tasks=tasks, options={"timeout": 60}, seed_source="-",
                         policy=None, executor="-", started=datetime.now(UTC), wall_time=1,
                         pairs=[], similarity_info={}, notes=[], graded_now=1, reused=0)
    page = report.render_report([row], ctx)
    table = page.split("id='students'")[1].split("<h2")[0]
    assert "<th class=n>final</th>" in table and "<td class='n'><b>8</b></td>" in table
