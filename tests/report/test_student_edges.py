"""What a student meets at the edges of the feedback (issue: a new student's first week):
reproducers written whole to files, a folder without tinytrain/, paths into the grader's
scratch copy, a breakpoint() left in the code."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from graders.report import reproducers

from ..conftest import REFERENCE, ROOT, grade, grade_forked
from ..mutants import all_mutants

SCRATCH_MARKS = ("/worker-", "tinytrain-grade-", "/var/lib/tinytrain-grader")


def _reference_with(folder, file, find, replace):
    shutil.copytree(REFERENCE / "tinytrain", folder / "tinytrain",
                    ignore=shutil.ignore_patterns("__pycache__"))
    path = folder / "tinytrain" / file
    text = path.read_text()
    assert text.count(find) == 1
    path.write_text(text.replace(find, replace))
    return folder


def test_every_reproducer_is_a_file_and_printed_whole(tmp_path):
    mutant = next(m for m in all_mutants() if m.id == "relu-grad-at-zero-is-one")
    mutant.apply(tmp_path / "sub")
    score = grade_forked(tmp_path / "sub", tmp_path / "out", "--tasks", "2.6", "--no-shrink")
    assert score["_exit"] == 0, score["_stderr"]
    failing = [t for k in score["tasks"] for t in k["tests"]
               if t["status"] == "failed" and reproducers.MARKER in t["message"]]
    assert failing
    files = sorted((tmp_path / "out" / "repro").glob("*.py"))
    assert [f.name for f in files] == sorted(reproducers.file_name("2.6", t["name"])
                                              for t in failing)
    first = files[0].read_text()
    script = reproducers.extract(failing[0]["message"])
    assert first.endswith(script) and "# needs tasks 1.1, 1.2 (besides 2.6)" in first
    for line in script.splitlines():  # the console shows the whole script, uncut
        assert line in score["_stdout"]
    assert "more lines in score.json]" not in score["_stdout"].split("reproduce:")[1]
    done = subprocess.run([sys.executable, str(files[0])], cwd=tmp_path / "sub",
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": ""})
    assert done.returncode == 0, done.stderr
    assert "tensor(" in done.stdout


def test_a_folder_without_tinytrain_is_a_usage_error(tmp_path):
    (tmp_path / "hw" / "tinytrain").mkdir(parents=True)
    (tmp_path / "hw" / "tinytrain" / "__init__.py").write_text("")
    score = grade(tmp_path, tmp_path / "out", "--tasks", "1.1")
    assert score["_exit"] == 2
    lines = score["_stderr"].strip().splitlines()
    assert len(lines) == 1 and "nearest one is 'hw/tinytrain'" in lines[0], lines
    assert score["status"] == "error" and score["score"] == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    score = grade(empty, tmp_path / "out2", "--tasks", "1.1")
    assert score["_exit"] == 2 and "no tinytrain/ folder" in score["_stderr"]


RELU_FORWARD = "        # BEGIN SOLUTION 2.6\n        result = np.maximum(a.data, 0)\n"
PRINTS_AND_RAISES = '''
        print("running", __file__)
        raise ValueError("broken on purpose in " + __file__)
'''


def test_paths_are_relative_to_the_submission(tmp_path):
    sub = _reference_with(tmp_path / "sub", "ops/activation.py", RELU_FORWARD,
                          RELU_FORWARD + PRINTS_AND_RAISES)
    score = grade_forked(sub, tmp_path / "out", "--tasks", "2.6", "--no-shrink")
    tests = [t for k in score["tasks"] for t in k["tests"] if t["status"] == "error"]
    assert tests
    text = json.dumps(tests)
    assert "tinytrain/ops/activation.py" in text
    assert not [m for m in SCRATCH_MARKS if m in text], text[:3000]


def test_a_breakpoint_says_so_in_one_line(tmp_path):
    sub = _reference_with(tmp_path / "sub", "ops/activation.py", RELU_FORWARD,
                          RELU_FORWARD + "        breakpoint()\n")
    score = grade_forked(sub, tmp_path / "out", "--tasks", "2.6")
    errors = [t for k in score["tasks"] for t in k["tests"] if t["status"] == "error"]
    assert errors
    for test in errors:
        first, *rest = test["message"].splitlines()
        assert "breakpoint()" in first and "tinytrain/ops/activation.py" in first
        assert not [line for line in rest if "Falsifying" in line or "Failing" in line]
    assert ROOT.exists()


def test_a_masked_lane_bug_is_named_and_its_reproducers_fail_outside_the_grader(tmp_path):
    """A LayerNorm kernel whose reduction reads masked-out lanes of a load without
    ``other``: the message says so (not "never written"), and the wrapper's reproducer,
    run by hand, shows the NaN the grader saw (the plain interpreter would give 0)."""
    mutant = next(m for m in all_mutants() if m.id == "cuda-layernorm-masked-lanes-undefined")
    mutant.apply(tmp_path / "sub")
    score = grade_forked(tmp_path / "sub", tmp_path / "out", "--tasks", "6.4", "--no-shrink")
    failed = {t["name"]: t for k in score["tasks"] for t in k["tests"] if t["status"] == "failed"}
    kernel = failed["test_kernel[layer_norm_kernel-float32]"]["message"]
    assert "a reduction included masked-out lanes" in kernel and "never written" not in kernel
    wrapper = tmp_path / "out" / "repro" / reproducers.file_name(
        "6.4", "test_wrapper[layernorm.layer_norm]")
    done = subprocess.run([sys.executable, str(wrapper)], cwd=tmp_path / "sub",
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert "nan" in done.stdout, done.stdout
