"""The student template is generated from the reference: no drift, no leaks, valid markers."""

from __future__ import annotations

import filecmp
import re

import pytest

from graders.authoring import template

from .conftest import REFERENCE, TEMPLATE

TITLES = template.rubric_titles()


@pytest.mark.parametrize("folder", ["tinytrain", "examples"])
def test_committed_template_matches_the_generator(folder, tmp_path):
    if folder == "tinytrain":
        template.generate(REFERENCE / "tinytrain", tmp_path / folder, TITLES)
    else:
        template.copy_examples(REFERENCE / "examples", tmp_path / folder)
    diff = filecmp.dircmp(tmp_path / folder, TEMPLATE / folder, ignore=["__pycache__"])

    def differences(d: filecmp.dircmp) -> list[str]:
        found = [f"{d.left}: {n}" for n in d.left_only + d.right_only + d.diff_files]
        for sub in d.subdirs.values():
            found += differences(sub)
        return found

    changed = differences(diff)
    assert not changed, f"student_template/ drifted; run tinytrain-make-template: {changed}"


def test_no_solution_text_leaks_into_the_template():
    for ref in (REFERENCE / "tinytrain").rglob("*.py"):
        rel = ref.relative_to(REFERENCE)
        text = ref.read_text()
        stripped = (TEMPLATE / rel).read_text()
        assert "SOLUTION" not in stripped, rel
        outside = template.strip(text, str(rel), TITLES)
        for block in template.find_blocks(text, str(rel), TITLES):
            for line in block.lines:
                code = line.strip()
                if len(code) < 25 or template.HINT.match(line) or code in outside:
                    continue  # short lines (return out) and lines the framework also has
                assert code not in stripped, f"solution line of task {block.task} in {rel}: {code}"


def test_every_rubric_task_has_a_solution_block():
    found = set()
    for ref in (REFERENCE / "tinytrain").rglob("*.py"):
        for block in template.find_blocks(ref.read_text(), str(ref), TITLES):
            found.add(block.task)
    assert set(TITLES) - found == set()


@pytest.mark.parametrize("source, problem", [
    ("# BEGIN SOLUTION 1.1\nx = 1\n", "without END"),
    ("x = 1\n# END SOLUTION\n", "without BEGIN"),
    ("# BEGIN SOLUTION 9.9\nx = 1\n# END SOLUTION\n", "not in the rubric"),
    ("# BEGIN SOLUTION 1.1\n# BEGIN SOLUTION 1.2\n", "inside another block"),
    ("    # BEGIN SOLUTION 1.1\n    x = 1\n# END SOLUTION\n", "indented differently"),
    ("# BEGIN SOLUTION 1.1\n# HINT: only a hint\n# END SOLUTION\n", "empty solution block"),
    ("# BEGIN SOLUTION\nx = 1\n# END SOLUTION\n", "malformed"),
])
def test_malformed_markers_are_rejected(source, problem):
    with pytest.raises(template.MarkerError, match=re.escape(problem)):
        template.strip(source, "f.py", TITLES)


def test_blocks_become_hints_and_a_raise():
    source = ("def f():\n    # BEGIN SOLUTION 1.2\n    # HINT: think\n    return 1\n"
              "    # END SOLUTION\n")
    assert template.strip(source, "f.py", TITLES) == (
        "def f():\n    # HINT: think\n"
        f'    raise NotImplementedError("task 1.2: {TITLES["1.2"]}")\n')


def test_examples_with_a_solution_block_are_refused(tmp_path):
    source = tmp_path / "examples"
    source.mkdir()
    (source / "demo.py").write_text("x = 1\n    # BEGIN SOLUTION 1.1\nx = 2\n    # END SOLUTION\n")
    with pytest.raises(template.MarkerError, match="solution blocks"):
        template.copy_examples(source, tmp_path / "out")
