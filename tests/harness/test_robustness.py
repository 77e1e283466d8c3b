"""Broken submissions: every one still gets a valid score file, the tasks it did not break
keep their points, and nothing runs past its deadline."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import jsonschema

from ..conftest import ROOT, grade, statuses, task_scores
from ..mutants import REFERENCE

SCHEMA = json.loads((ROOT / "graders" / "schema" / "score.schema.json").read_text())


def broken(path: Path, *edits: tuple[str, str, str]) -> Path:
    """The reference with (file, find, replace) edits applied, in ``path``. Unlike a
    mutant, the result need not compile: a syntax error is one of the breakages."""
    shutil.copytree(REFERENCE, path / "tinytrain", ignore=shutil.ignore_patterns("__pycache__"))
    for file, find, replace in edits:
        target = path / "tinytrain" / file
        text = target.read_text()
        assert text.count(find) == 1, (file, find)
        target.write_text(text.replace(find, replace))
    return path


def results_of(score: dict, task: str) -> dict[str, dict]:
    return {t["name"]: t for tk in score["tasks"] if tk["id"] == task for t in tk["tests"]}


def test_hang_crash_exit_and_endless_printing_are_contained(tmp_path):
    """One submission that hangs in 1.3, calls os._exit and raises SystemExit in 1.4 and
    prints without end in a hook: 1.1 and 1.2 keep full marks, the rest is reported."""
    submission = broken(
        tmp_path / "sub",
        ("autograd/grad_mode.py",
         "        self._prev = _state.grad_enabled\n        _state.grad_enabled = False",
         "        while True:\n            pass"),
        ("tensor.py", "        out = Tensor(self.data)\n",
         "        import os\n        os._exit(3)\n"),
        ("tensor.py", "        self.grad_fn._retained[self._output_nr] = weakref.ref(self)",
         "        raise SystemExit(4)"),
        ("tensor.py", "        hooks.append(hook)\n",
         "        while True:\n            print('spam' * 100)\n"),
    )
    start = time.monotonic()
    score = grade(submission, tmp_path / "out", "--tasks", "1")
    elapsed = time.monotonic() - start
    assert score["_exit"] == 0, score["_stderr"]
    jsonschema.validate({k: v for k, v in score.items() if not k.startswith("_")}, SCHEMA)
    scores = task_scores(score)
    assert scores["1.1"][0] == scores["1.1"][1]
    assert scores["1.2"][0] == scores["1.2"][1]
    assert scores["1.3"][0] < scores["1.3"][1]

    grad_modes = results_of(score, "1.3")
    decorators = grad_modes["test_decorators"]
    assert decorators["status"] == "timeout"
    assert "grad_mode.py" in decorators["message"] and "__enter__" in decorators["message"]

    hooks = results_of(score, "1.4")
    assert hooks["test_detach"]["status"] == "error"
    assert "exited with code 3" in hooks["test_detach"]["message"]
    assert hooks["test_retain_grad"]["status"] == "error"
    assert "SystemExit" in hooks["test_retain_grad"]["message"]
    printing = hooks["test_hooks_see_and_replace_gradients"]
    assert printing["status"] == "timeout"
    assert len(printing["output"]) < 10_000 and "bytes of output dropped" in printing["output"]
    # 4 s of budget per timed-out call at most, a handful of them, plus the grading itself
    assert elapsed < 120


def test_syntax_error_gives_zero_with_the_reason(tmp_path):
    submission = broken(tmp_path / "sub", ("autograd/engine.py", "def _as_tuple(", "def _as_tuple(("))
    score = grade(submission, tmp_path / "out", "--tasks", "1")
    assert score["_exit"] == 0
    assert score["score"] == 0
    assert set(statuses(score)) == {"error"}
    message = score["tasks"][0]["tests"][0]["message"]
    assert "could not be imported" in message and "SyntaxError" in message
    assert "engine.py" in message


def test_importing_torch_is_refused(tmp_path):
    submission = broken(tmp_path / "sub", ("ops/arithmetic.py", "from __future__ import annotations\n",
                                           "from __future__ import annotations\nimport torch\n"))
    score = grade(submission, tmp_path / "out", "--tasks", "1.1")
    assert score["score"] == 0
    message = score["tasks"][0]["tests"][0]["message"]
    assert "'torch' is blocked" in message


def test_folder_without_package_is_a_usage_error(tmp_path):
    """Not a grading of 47 import errors (exit 0) but one line, exit code 2, valid score
    files."""
    (tmp_path / "empty").mkdir()
    score = grade(tmp_path / "empty", tmp_path / "out", "--tasks", "1.1")
    assert score["_exit"] == 2
    assert score["status"] == "error" and score["score"] == 0
    assert "no tinytrain/ folder" in score["error"]
    assert len(score["_stderr"].strip().splitlines()) == 1


def test_missing_folder_is_a_usage_error_with_a_valid_score_file(tmp_path):
    score = grade(tmp_path / "nope", tmp_path / "out")
    assert score["_exit"] == 2
    assert "does not exist" in score["_stderr"]
    assert len(score["_stderr"].strip().splitlines()) == 1
    assert score["status"] == "error" and score["score"] == 0
    jsonschema.validate({k: v for k, v in score.items() if not k.startswith("_")}, SCHEMA)


def test_unknown_task_is_a_usage_error_with_a_valid_score_file(tmp_path):
    score = grade(ROOT / "reference", tmp_path / "out", "--tasks", "9.9")
    assert score["_exit"] == 2
    assert "unknown task '9.9'" in score["_stderr"]
    assert score["status"] == "error" and "unknown task '9.9'" in score["error"]
    jsonschema.validate({k: v for k, v in score.items() if not k.startswith("_")}, SCHEMA)


def test_memory_blowup_is_reported(tmp_path):
    huge = "        out = Tensor(self.data + __import__('numpy').ones(10**11))\n"
    submission = broken(tmp_path / "sub", ("tensor.py", "        out = Tensor(self.data)\n", huge))
    score = grade(submission, tmp_path / "out", "--tasks", "1.4")
    detach = results_of(score, "1.4")["test_detach"]
    assert detach["status"] == "error"
    assert "MemoryError" in detach["message"]
