"""References to the grader's modules in a submission, found as text for the class report."""

from __future__ import annotations

import shutil

from graders.classgrade.grader_refs import grader_references

from ..conftest import REFERENCE, TEMPLATE


def test_honest_submissions_have_none():
    assert grader_references(REFERENCE) == []
    assert grader_references(TEMPLATE) == []


def test_imports_and_names_in_strings_are_found(tmp_path):
    shutil.copytree(TEMPLATE / "tinytrain", tmp_path / "tinytrain")
    (tmp_path / "tinytrain" / "helpers.py").write_text(
        "import importlib\n"
        "from graders.probes._functions import run_backward\n"
        "import graders.probes as p\n"
        "def f():\n"
        "    return importlib.import_module('graders.probes._functions')\n"
        "NOTE = 'the graders read this trace'\n")
    (tmp_path / "tinytrain" / "broken.py").write_text("def (:\n  x = 'graders.oracle.ops'\n")
    found = grader_references(tmp_path)
    assert found == [
        "tinytrain/broken.py:2: the name 'graders.oracle.ops'",
        "tinytrain/helpers.py:2: from graders.probes._functions import ...",
        "tinytrain/helpers.py:3: import graders.probes",
        "tinytrain/helpers.py:5: the name 'graders.probes._functions' in a string",
    ]


def test_the_class_report_lists_them(tmp_path):
    """The class run's similarity step records every submission that names the grader's
    modules, and the report shows them (similarity cannot: an import shares no tokens)."""
    from types import SimpleNamespace

    from graders.classgrade import cli, report
    from graders.classgrade.collect import Entry

    shutil.copytree(TEMPLATE / "tinytrain", tmp_path / "honest" / "tinytrain")
    shutil.copytree(TEMPLATE / "tinytrain", tmp_path / "borrower" / "tinytrain")
    engine = tmp_path / "borrower" / "tinytrain" / "autograd" / "engine.py"
    engine.write_text("from graders.probes._functions import run_backward\n" + engine.read_text())
    entries = [Entry("honest", tmp_path / "honest", root=tmp_path / "honest"),
               Entry("borrower", tmp_path / "borrower", root=tmp_path / "borrower")]
    args = SimpleNamespace(template=TEMPLATE / "tinytrain", similarity_common=None,
                           known_sources=[])
    for entry in entries:
        (tmp_path / "out" / "students" / entry.name).mkdir(parents=True)
    _, info = cli._similarity(entries, tmp_path / "out", args)
    assert info["grader_references"] == {
        "borrower": ["tinytrain/autograd/engine.py:1: from graders.probes._functions import ..."]}
    html = report._grader_references(info["grader_references"])
    assert "1 submission(s) refer to the grader's modules" in html and "borrower" in html
    assert "No submission refers" in report._grader_references({})
