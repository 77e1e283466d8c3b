"""Assignment 1 must not depend on assignment 5's homework: its graders use Module,
Parameter, eval() and model(x), which ship complete (task 1.3). A submission with every
5.x solution cut out still gets full marks on assignment 1."""

from __future__ import annotations

import shutil

from graders.authoring import template

from .conftest import REFERENCE, grade, task_scores


def test_assignment_1_without_assignment_5(tmp_path):
    titles = template.rubric_titles()
    target = tmp_path / "submission" / "tinytrain"
    shutil.copytree(REFERENCE / "tinytrain", target, ignore=template.IGNORED)
    for path in target.rglob("*.py"):
        text = path.read_text()
        lines = text.splitlines(keepends=True)
        out, cursor = [], 0
        for block in template.find_blocks(text, str(path), titles):
            if block.task.split(".")[0] != "5":
                continue
            indent = template.BEGIN.match(lines[block.start])["indent"]
            out.extend(lines[cursor:block.start])
            out.append(f'{indent}raise NotImplementedError("task {block.task}")\n')
            cursor = block.end + 1
        out.extend(lines[cursor:])
        path.write_text("".join(out))
    score = grade(tmp_path / "submission", tmp_path / "out", "--tasks", "1")
    assert score["_exit"] == 0, score["_stderr"]
    lost = {tid: s for tid, s in task_scores(score).items() if s[0] < s[1]}
    assert not lost, f"assignment 1 lost points without assignment 5's homework: {lost}"
