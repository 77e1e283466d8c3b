"""References to the grader's modules in a submission, found as text for the class report."""

from __future__ import annotations

import shutil

from graders.classgrade.grader_refs import grader_references

from .conftest import REFERENCE, TEMPLATE


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
