"""The reference scores full marks, the template scores zero (every test
not_implemented), and the template is what the generator makes of the reference."""

from __future__ import annotations

import filecmp
from pathlib import Path

from graders.authoring.template import generate, rubric_titles

from .conftest import REFERENCE, TEMPLATE, statuses, task_scores


def test_reference_scores_full_marks(reference_score):
    assert reference_score["_exit"] == 0, reference_score["_stderr"]
    lost = {t: s for t, s in task_scores(reference_score).items() if s[0] < s[1]}
    assert not lost, f"the reference loses points: {lost}\n{reference_score['_stdout']}"


def test_template_scores_zero_with_every_test_not_implemented(template_score):
    assert template_score["_exit"] == 0, template_score["_stderr"]
    assert all(score == 0 for score, _ in task_scores(template_score).values())
    assert set(statuses(template_score)) == {"not_implemented"}


def test_template_is_generated_from_the_reference(tmp_path: Path):
    fresh = tmp_path / "tinytrain"
    generate(REFERENCE / "tinytrain", fresh, rubric_titles())
    committed = TEMPLATE / "tinytrain"

    def differences(cmp: filecmp.dircmp, prefix: str = "") -> list[str]:
        found = [prefix + n for n in cmp.left_only + cmp.right_only + cmp.diff_files
                 if n != "__pycache__"]
        for name, sub in cmp.subdirs.items():
            if name != "__pycache__":
                found += differences(sub, f"{prefix}{name}/")
        return found

    drift = differences(filecmp.dircmp(fresh, committed))
    assert not drift, f"student_template is out of date ({drift}): run " \
                      "python -m graders.authoring.template"
