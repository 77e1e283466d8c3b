"""Gradebooks an LMS imports: ``canvas.csv`` and ``gradescope.csv``, one row per student
(every member of a group submission gets the group's score), from a roster that maps
submissions to students.

The roster (``--roster CSV``) has one row per student and the columns

- ``submission``: the submission's name as the class report shows it: the folder or zip
  name (plain layout), the GitHub username (Classroom: ``<assignment>-<username>`` becomes
  ``<username>``), or the ``submission_<id>`` folder (Gradescope export). Several rows with
  one submission are a group. Left empty, the row is matched by ``sid`` or ``email``
  against the submitters a Gradescope export names;
- ``name``, and the identities the LMS matches on: ``sid`` (Canvas's SIS User ID, the SID
  of Gradescope), ``email``, and for Canvas ``canvas_id`` (its ID column),
  ``login`` (SIS Login ID) and ``section``; any may be empty.

Without a roster the students are those a Gradescope export names (name, SID, email), or,
for other layouts, the submission's name alone (which no LMS can match: the report says
so). Scores are the final points (after the late penalty and any override).

``canvas.csv`` follows Canvas's gradebook import: the columns Student, ID, SIS User ID,
SIS Login ID, Section, then one column for the assignment (``--lms-assignment``; Canvas
matches an existing assignment by its header, ``Homework 2 (1234)``, and creates one
otherwise). No "Points Possible" row: a row Canvas might read as a student is not
written. ``gradescope.csv`` follows Gradescope's score upload: Name, SID, Email, Total
Score.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from .collect import Entry
from .gradebook import Row

ROSTER_COLUMNS = ("submission", "name", "sid", "email", "canvas_id", "login", "section")
CANVAS_HEADER = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
GRADESCOPE_HEADER = ("Name", "SID", "Email", "Total Score")


@dataclass(frozen=True)
class Student:
    name: str = ""
    sid: str = ""
    email: str = ""
    canvas_id: str = ""
    login: str = ""
    section: str = ""
    submission: str = ""

    @property
    def matchable(self) -> bool:
        """Whether an LMS can find this student (it matches on IDs and emails)."""
        return bool(self.sid or self.email or self.canvas_id or self.login)


def read_roster(path: Path) -> list[Student]:
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        fields = [f.strip() for f in reader.fieldnames or []]
        unknown = [f for f in fields if f not in ROSTER_COLUMNS]
        if unknown or not fields:
            raise ValueError(f"{path}: unknown column(s) {', '.join(unknown) or '(none given)'}"
                             f" (a roster has: {', '.join(ROSTER_COLUMNS)})")
        if "submission" not in fields and "sid" not in fields and "email" not in fields:
            raise ValueError(f"{path}: a roster needs a submission, sid or email column")
        students = []
        for row in reader:
            row = {k.strip(): (v or "").strip() for k, v in row.items() if k}
            if not any(row.values()):
                continue
            students.append(Student(**{k: row.get(k, "") for k in ROSTER_COLUMNS}))
    return students


def entry_keys(entry: Entry) -> set[str]:
    """The names a roster's ``submission`` may use for ``entry``."""
    return {entry.name, entry.source.name, entry.source.stem, *entry.names}


def members(entries: list[Entry], roster: list[Student] | None
            ) -> tuple[dict[str, list[Student]], list[str]]:
    """{entry name: its students} and notes (roster rows that match nothing, submissions
    nobody on the roster made, students an LMS cannot match)."""
    notes: list[str] = []
    found: dict[str, list[Student]] = {e.name: [] for e in entries}
    if roster is None:
        for entry in entries:
            count = max(len(entry.names), len(entry.sids), len(entry.emails))
            people = [Student(name=_at(entry.names, i), sid=_at(entry.sids, i),
                              email=_at(entry.emails, i), submission=entry.name)
                      for i in range(count)]
            found[entry.name] = people or [Student(name=entry.name, submission=entry.name)]
    else:
        by_key: dict[str, str] = {}
        for entry in entries:
            for key in entry_keys(entry):
                by_key.setdefault(key, entry.name)
        unmatched = []
        for student in roster:
            name = by_key.get(student.submission) if student.submission else None
            if name is None and not student.submission:
                name = next((e.name for e in entries
                             if (student.sid and student.sid in e.sids)
                             or (student.email and student.email in e.emails)), None)
            if name is None:
                unmatched.append(student.name or student.sid or student.email
                                 or student.submission)
                continue
            found[name].append(student)
        if unmatched:
            notes.append(f"{len(unmatched)} student(s) on the roster have no submission (no "
                         f"row in the LMS exports): {', '.join(unmatched[:20])}")
        nobody = sorted(n for n, people in found.items() if not people)
        if nobody:
            notes.append(f"{len(nobody)} submission(s) match nobody on the roster (not in the "
                         f"LMS exports): {', '.join(nobody[:20])}")
    blind = sorted({n for n, people in found.items() for p in people if not p.matchable})
    if blind:
        notes.append(f"{len(blind)} submission(s) have students with no SID, email or LMS ID, "
                     f"whom an LMS cannot match (give --roster): {', '.join(blind[:20])}")
    seen: dict[tuple[str, str], str] = {}
    for name, people in found.items():
        for person in people:
            key = (person.sid, person.email)
            if person.matchable and key in seen and seen[key] != name:
                notes.append(f"{person.name or person.sid or person.email} is in two "
                             f"submissions ({seen[key]}, {name}): both rows are exported; "
                             "keep the right one")
            seen.setdefault(key, name)
    return found, notes


def _at(values: list[str], index: int) -> str:
    return values[index] if index < len(values) else ""


def _points(value: float) -> str:
    return f"{value:g}" if value == int(value) else f"{round(value, 4)}"


def canvas_csv(rows: list[Row], people: dict[str, list[Student]], assignment: str) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*CANVAS_HEADER, assignment])
    for row, person in _each(rows, people):
        writer.writerow([person.name, person.canvas_id, person.sid, person.login,
                         person.section, _points(row.final)])
    return buffer.getvalue()


def gradescope_csv(rows: list[Row], people: dict[str, list[Student]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(GRADESCOPE_HEADER)
    for row, person in _each(rows, people):
        writer.writerow([person.name, person.sid, person.email, _points(row.final)])
    return buffer.getvalue()


def _each(rows: list[Row], people: dict[str, list[Student]]):
    for row in sorted(rows, key=lambda r: r.name):
        for person in sorted(people.get(row.name, []), key=lambda p: (p.name, p.sid, p.email)):
            yield row, person
