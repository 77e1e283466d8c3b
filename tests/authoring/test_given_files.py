"""The given files (no homework region) are the grader's: its manifest matches the
reference and the template, and a submission's own copies are put back before grading,
so code the student may not write (a trace recorder, a collective backend, the kernel
runtime, a container) never decides a verdict."""

from __future__ import annotations

import json
import shutil

from graders.authoring import given
from graders.harness import pristine

from ..conftest import REFERENCE, TEMPLATE, grade_forked

SABOTAGE = "raise RuntimeError('a given file replaced by the submission')\n"


def test_the_manifest_is_current():
    assert pristine.MANIFEST.read_text() == given.render(REFERENCE / "tinytrain"), \
        "run python -m graders.authoring.given"
    files = pristine.given_files()
    assert len(files) > 30 and "tinytrain/distributed/collectives/trace.py" in files
    for rel, text in files.items():
        assert (TEMPLATE / rel).read_text() == text, rel
        assert "BEGIN SOLUTION" not in text


def test_restore_puts_back_changed_and_missing_files(tmp_path):
    shutil.copytree(TEMPLATE / "tinytrain", tmp_path / "tinytrain")
    assert pristine.restore(tmp_path) == []
    (tmp_path / "tinytrain" / "nn" / "container.py").write_text(SABOTAGE)
    (tmp_path / "tinytrain" / "distributed" / "collectives" / "trace.py").unlink()
    shutil.rmtree(tmp_path / "tinytrain" / "distributed" / "backends")
    (tmp_path / "tinytrain" / "extra_helper.py").write_text("x = 1\n")  # the student's own
    changed = pristine.restore(tmp_path)
    assert changed == sorted(["tinytrain/nn/container.py",
                              "tinytrain/distributed/collectives/trace.py",
                              "tinytrain/distributed/backends/__init__.py",
                              "tinytrain/distributed/backends/mpi.py",
                              "tinytrain/distributed/backends/threads.py"])
    for rel in changed:
        assert (tmp_path / rel).read_text() == (TEMPLATE / rel).read_text()
    assert (tmp_path / "tinytrain" / "extra_helper.py").read_text() == "x = 1\n"
    assert pristine.restore(tmp_path / "nothing-here") == []


def test_a_package_that_hides_a_given_module_is_removed(tmp_path):
    """``collectives/trace/__init__.py`` beside the given ``trace.py`` is what ``import``
    finds first; an extension module too, which the submission check refuses."""
    shutil.copytree(TEMPLATE / "tinytrain", tmp_path / "tinytrain")
    hidden = tmp_path / "tinytrain" / "distributed" / "collectives" / "trace"
    hidden.mkdir()
    (hidden / "__init__.py").write_text("FORGED = True\n")
    changed = pristine.restore(tmp_path)
    assert changed == ["tinytrain/distributed/collectives/trace/ (removed: it hid "
                       "tinytrain/distributed/collectives/trace.py)"]
    assert not hidden.exists()
    from graders.harness import sandbox

    (tmp_path / "tinytrain" / "nn" / "container.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    assert "compiled extension module" in sandbox.check_submission(tmp_path)


def test_a_sabotaged_given_file_grades_as_the_framework(tmp_path):
    """The reference with a given file that raises on import and one deleted: graded as
    the reference (full marks), and the score says which files were put back."""
    sub = tmp_path / "sub"
    shutil.copytree(REFERENCE / "tinytrain", sub / "tinytrain",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (sub / "tinytrain" / "nn" / "container.py").write_text(SABOTAGE)
    (sub / "tinytrain" / "autograd" / "hooks.py").unlink()
    score = grade_forked(sub, tmp_path / "out", "--tasks", "1.1")
    assert score["_exit"] == 0, score.get("_stderr", "")
    assert score["score"] == score["max_score"] == 10
    restored = score["environment"]["given_files_restored"]
    assert restored == "tinytrain/autograd/hooks.py, tinytrain/nn/container.py"
    assert json.loads((tmp_path / "out" / "results.json").read_text())["score"] == 10


def test_a_folder_in_place_of_a_given_file_is_refused(tmp_path):
    """Not a crash: one line, exit code 2, score files written."""
    from ..conftest import grade

    sub = tmp_path / "sub"
    shutil.copytree(TEMPLATE / "tinytrain", sub / "tinytrain")
    (sub / "tinytrain" / "nn" / "container.py").unlink()
    (sub / "tinytrain" / "nn" / "container.py").mkdir()
    score = grade(sub, tmp_path / "out", "--tasks", "1.1")
    assert score["_exit"] == 2, score["_stderr"]
    assert score["status"] == "error" and "given files cannot be put back" in score["error"]
    assert len(score["_stderr"].strip().splitlines()) == 1, score["_stderr"]
