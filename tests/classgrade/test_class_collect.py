"""Finding a class's submissions (export layouts, zips, hostile archives), the late policy
and submission times: no grading here."""

from __future__ import annotations

import io
import stat
import zipfile
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from graders.classgrade import collect
from graders.classgrade.collect import SubmissionProblem, discover, prepare, safe_extract
from graders.classgrade.late import LatePolicy, parse_datetime, read_times


def _package(folder: Path, text: str = "x = 1\n") -> Path:
    (folder / "tinytrain").mkdir(parents=True)
    (folder / "tinytrain" / "__init__.py").write_text(text)
    return folder


def _zip(path: Path, files: dict[str, bytes | str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


def _prepared(tmp_path: Path, submissions: Path) -> dict[str, collect.Entry]:
    entries, _ = discover(submissions, tmp_path / "work")
    for entry in entries:
        prepare(entry, tmp_path / "work")
    return {e.name: e for e in entries}


def test_folders_zips_and_wrapped_packages_are_found(tmp_path):
    root = tmp_path / "class"
    _package(root / "alice")
    _package(root / "bob" / "bob-main")  # a repository download wraps the package once
    (root / "carol" / "tinytrain").mkdir(parents=True)  # an empty package: still an entry
    (root / "dave").mkdir()
    (root / "dave" / "__init__.py").write_text("x = 1\n")
    _zip(root / "erin.zip", {"erin/tinytrain/__init__.py": "x = 1\n"})
    (root / "notes.txt").write_text("not a submission")
    (root / ".DS_Store").write_text("")
    entries, notes = discover(root, tmp_path / "work")
    assert [e.name for e in entries] == ["alice", "bob", "carol", "dave", "erin"]
    assert notes == ["skipped notes.txt: not a folder or a zip"]
    found = _prepared(tmp_path, root)
    assert found["alice"].root == root / "alice"
    assert found["bob"].root == root / "bob" / "bob-main"
    assert found["dave"].root == root / "dave"
    assert found["erin"].root == tmp_path / "work" / "unzipped" / "erin" / "erin"
    # the package on its own is packed as tinytrain/ for the grader
    with zipfile.ZipFile(io.BytesIO(collect.pack(found["dave"].root))) as archive:
        assert archive.namelist() == ["tinytrain/__init__.py"]
    assert all(e.problem is None for e in found.values())


def test_content_hash_follows_the_package_only(tmp_path):
    root = tmp_path / "class"
    _package(root / "alice")
    first = _prepared(tmp_path, root)["alice"].content_hash
    (root / "alice" / "README.md").write_text("notes")
    (root / "alice" / "tinytrain" / "__pycache__").mkdir()
    (root / "alice" / "tinytrain" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert _prepared(tmp_path, root)["alice"].content_hash == first
    (root / "alice" / "tinytrain" / "__init__.py").write_text("x = 2\n")
    assert _prepared(tmp_path, root)["alice"].content_hash != first


def test_two_packages_in_one_submission_is_reported(tmp_path):
    root = tmp_path / "class"
    _package(root / "alice" / "try1")
    _package(root / "alice" / "try2")
    entry = _prepared(tmp_path, root)["alice"]
    assert entry.problem and "more than one tinytrain/" in entry.problem


@pytest.mark.parametrize("files, why", [
    ({"../evil.py": "x"}, "outside the submission"),
    ({"/etc/evil.py": "x"}, "outside the submission"),
    ({"a/../../evil.py": "x"}, "outside the submission"),
])
def test_hostile_zip_paths_are_refused(tmp_path, files, why):
    archive = _zip(tmp_path / "s.zip", files)
    with pytest.raises(SubmissionProblem, match=why):
        safe_extract(archive, tmp_path / "out")
    assert not (tmp_path / "evil.py").exists()


def test_zip_symlinks_and_bombs_are_refused(tmp_path, monkeypatch):
    link = zipfile.ZipInfo("tinytrain/link")
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    with zipfile.ZipFile(tmp_path / "link.zip", "w") as archive:
        archive.writestr(link, "/etc/passwd")
    with pytest.raises(SubmissionProblem, match="symbolic link"):
        safe_extract(tmp_path / "link.zip", tmp_path / "out1")
    monkeypatch.setattr(collect, "MAX_ZIP_BYTES", 10_000)
    bomb = _zip(tmp_path / "bomb.zip", {"tinytrain/big.py": "0" * 100_000})
    with pytest.raises(SubmissionProblem, match="unpacks to"):
        safe_extract(bomb, tmp_path / "out2")
    with pytest.raises(SubmissionProblem, match="not a valid zip"):
        safe_extract(b"PK\x03\x04 nonsense", tmp_path / "out3")


def test_gradescope_export_metadata(tmp_path):
    export = tmp_path / "assignment_9_export"
    _package(export / "submission_1")
    _package(export / "submission_2")
    _package(export / "stray")
    (export / "submission_metadata.yml").write_text(
        "submission_1:\n  :submitters:\n  - :name: Pair One\n    :sid: '200'\n"
        "    :email: one@example.edu\n  - :name: Pair Two\n    :sid: '201'\n"
        "  :created_at: 2024-03-01 23:59:12.123456789 -08:00\n"
        "submission_2:\n  :submitters:\n  - :name: Solo\n"
        "  :created_at: 2024-03-03T01:00:00Z\n"
        "submission_3:\n  :submitters: []\n")
    entries, notes = discover(tmp_path, tmp_path / "work")  # finds the export inside
    by_name = {e.name: e for e in entries}
    assert sorted(by_name) == ["submission_1", "submission_2"]
    one = by_name["submission_1"]
    assert one.names == ["Pair One", "Pair Two"] and one.sids == ["200", "201"]
    assert one.emails == ["one@example.edu"]
    assert one.submitted_at == datetime(2024, 3, 2, 7, 59, 12, 123456, tzinfo=UTC)
    assert by_name["submission_2"].submitted_at == datetime(2024, 3, 3, 1, tzinfo=UTC)
    assert any("submission_3" in n and "not in the export" in n for n in notes)
    assert any("stray" in n and "not listed" in n for n in notes)


def test_github_classroom_clone_names_students_by_username(tmp_path):
    root = tmp_path / "hw1-submissions"
    _package(root / "hw1-octocat")
    _package(root / "hw1-mona-lisa")
    entries, _ = discover(root, tmp_path / "work")
    assert [(e.name, e.names) for e in entries] == [("mona-lisa", ["mona-lisa"]),
                                                   ("octocat", ["octocat"])]


def test_names_are_made_safe_and_unique(tmp_path):
    root = tmp_path / "class"
    _package(root / "<b onmouseover=alert(1)>")
    _zip(root / "x y.zip", {"tinytrain/__init__.py": ""})
    _package(root / "x y")
    names = sorted(e.name for e in discover(root, tmp_path / "work")[0])
    assert names == ["b_onmouseover_alert_1", "x_y", "x_y-2"]


POLICY = LatePolicy(datetime(2024, 3, 1, 23, 59, tzinfo=UTC), percent_per_day=10,
                    cap_percent=30, grace=timedelta(minutes=15))


@pytest.mark.parametrize("after, days, percent", [
    (None, None, 0.0),
    (timedelta(hours=-5), 0, 0.0),
    (timedelta(minutes=15), 0, 0.0),  # within the grace period
    (timedelta(minutes=16), 1, 10.0),
    (timedelta(hours=24), 1, 10.0),
    (timedelta(hours=24, seconds=1), 2, 20.0),
    (timedelta(days=9), 9, 30.0),  # capped
])
def test_late_penalty_rule(after, days, percent):
    when = None if after is None else POLICY.deadline + after
    assert POLICY.days_late(when) == days
    assert POLICY.penalty_percent(POLICY.days_late(when)) == percent


def test_times_are_parsed_with_their_offsets():
    assert parse_datetime("2024-03-01T23:59:00-08:00") == datetime(2024, 3, 2, 7, 59, tzinfo=UTC)
    assert parse_datetime("2024-03-01 23:59:12.123456789 -0800").utcoffset() == timedelta(hours=-8)
    assert parse_datetime("2024-03-01 12:00") == datetime(2024, 3, 1, 12, tzinfo=UTC)
    naive_is_utc = parse_datetime("2024-03-01T12:00:00")
    assert naive_is_utc.tzinfo is not None and naive_is_utc.utcoffset() == timedelta(0)
    assert parse_datetime("2024-03-01T12:00:00+05:30").tzinfo == timezone(timedelta(hours=5, minutes=30))
    with pytest.raises(ValueError):
        parse_datetime("yesterday")


def test_submission_times_csv_ours_and_github_classrooms(tmp_path):
    ours = tmp_path / "times.csv"
    ours.write_text("submission,submitted_at\nalice,2024-03-01T10:00:00Z\nbob,\n")
    assert read_times(ours) == {"alice": datetime(2024, 3, 1, 10, tzinfo=UTC)}
    classroom = tmp_path / "grades.csv"  # gh classroom assignment-grades
    classroom.write_text(
        "assignment_name,assignment_url,starter_code_url,github_username,roster_identifier,"
        "student_repository_name,student_repository_url,submission_timestamp,points_awarded,"
        "points_available\nhw1,u,u,octocat,o@x,hw1-octocat,u,2024-03-02 01:02:03 UTC,0,100\n")
    assert read_times(classroom) == {"hw1-octocat": datetime(2024, 3, 2, 1, 2, 3, tzinfo=UTC)}
    bad = tmp_path / "bad.csv"
    bad.write_text("who,when\na,b\n")
    with pytest.raises(ValueError, match="needs a name column"):
        read_times(bad)


def test_a_report_inside_the_class_folder_is_not_a_student(tmp_path):
    """Needs no grading: the only submission is a corrupt zip, whose row says so."""
    import csv
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "bad.zip").write_bytes(b"not a zip")
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-m", "graders.classgrade.cli", str(tmp_path / "class"), "--out",
             str(tmp_path / "class" / "report"), "--tasks", "1.1"],
            cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    assert "kept 1 from an earlier run" in proc.stdout
    with open(tmp_path / "class" / "report" / "grades.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["file"] for r in rows] == ["points-per-question", "bad"]
    assert rows[1]["grading_status"].startswith("error: not a valid zip file")


def test_known_sources_flag_a_paste_of_the_probes_engine_not_honest_code(tmp_path):
    """The probes' run_backward pasted and renamed is listed against the probes' module; an
    engine written without it and a correct alternative of the reference are not; a known
    source neither makes a passage common nor counts the template's code."""
    from graders.classgrade import similarity

    from ..mutants import all_alternatives
    from .class_builder import TEMPLATE, Student, make_student

    documents = {}
    for name in ("paste-probes-engine", "own-engine-kahn"):
        make_student(tmp_path / name, Student(name, "engine"))
        documents[name] = tmp_path / name
    alternative = next(a for a in all_alternatives() if a.id == "breadth-first-engine")
    alternative.apply(tmp_path / "alternative")
    documents["alternative"] = tmp_path / "alternative"
    for name, folder in documents.items():
        documents[name] = tmp_path / f"{name}.py"
        documents[name].write_text(similarity.solution_regions(folder, TEMPLATE))
    # two students share a passage that a known source also has; one also kept template code
    passage = "\n".join(f"def stage_{i}(xs, k):\n    out = [x * k + {i} for x in xs if x]\n"
                        f"    return sorted(out, key=abs)[:{i + 2}]\n" for i in range(8))
    engine = (TEMPLATE / "autograd" / "engine.py").read_text()
    (tmp_path / "x1.py").write_text(engine + passage)
    (tmp_path / "x2.py").write_text(passage)
    documents.update(x1=tmp_path / "x1.py", x2=tmp_path / "x2.py")
    for source, text in (("online", passage), ("template-copy", engine)):
        (tmp_path / source).mkdir()
        (tmp_path / source / "found.py").write_text(text)
    known = similarity.known_source_documents([tmp_path / "online", tmp_path / "template-copy"],
                                              TEMPLATE, tmp_path / "k")
    assert list(known) == ["known:online", "known:template-copy"]

    pairs, info = similarity.compare(documents, TEMPLATE, 2, known=known,
                                     graders=similarity.grader_sources(),
                                     reference=similarity.REFERENCE)
    assert "grader:graders/probes/_functions.py" in info["grader_sources"]
    assert info["reference_kgrams"] > 0
    flagged = {(p.a, p.b) for p in pairs if p.known and p.flagged}
    assert flagged == {("paste-probes-engine", "grader:graders/probes/_functions.py"),
                       ("x1", "known:online"), ("x2", "known:online")}
    paste = next(p for p in pairs if p.a == "paste-probes-engine" and p.known)
    assert paste.shared_tokens >= similarity.KNOWN_MIN and "<mark>" in paste.snippet_b
    assert "indegree" in paste.snippet_a  # the submission's own (renamed) code is marked
    # honest code shares less than the threshold with every known source
    for name in ("own-engine-kahn", "alternative"):
        assert max((p.shared_tokens for p in pairs if p.known and p.a == name), default=0) \
            < similarity.KNOWN_MIN
    # in two students (the most that is not common) and a known source: still a pair
    assert any(p.a == "x1" and p.b == "x2" and not p.known and p.flagged for p in pairs)
    # the template's code that x1 and a source share does not count
    assert not [p for p in pairs if p.b == "known:template-copy"]
    # most shared code first, pairs and known sources together
    assert [p.shared_tokens for p in pairs] == sorted((p.shared_tokens for p in pairs),
                                                      reverse=True)
