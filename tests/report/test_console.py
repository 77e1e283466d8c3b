"""What the grader tells a student: the console table and its messages, the progress line
(on a terminal only), and the command line's usage errors (each leaves score files)."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graders import rubric
from graders.checks import running_example
from graders.harness import worker
from graders.harness.errors import NotImplementedInSubmission, SubmissionRaised
from graders.probes import _observe
from graders.report.console import Progress, render
from graders.report.score import Score, TaskScore
from graders.runner.plugin import classify, description
from graders.runner.results import TestResult

from ..conftest import ROOT, TEMPLATE, grade
from ..harness.test_robustness import broken

TASKS = {t.id: t for t in rubric.load().tasks}


def _score(tests: dict[str, list[TestResult]]) -> Score:
    return Score("sub", [TaskScore(TASKS[task], results) for task, results in tests.items()],
                 seed=0, profile="default", sandbox=True)


def _frames(n: int, last: str) -> str:
    """A submission traceback of ``n`` frames as the worker formats it; the innermost one
    runs ``last``."""
    lines = []
    for i in range(n - 1):
        lines += [f'  File "tinytrain/ops/f{i}.py", line {i + 1}, in f{i}', f"    f{i + 1}()"]
    return "\n".join([*lines, '  File "tinytrain/ops/inner.py", line 99, in inner',
                      f"    {last}"])


STUB = ("NotImplementedError: task 1.1: Function.apply builds the graph\n"
        + _frames(5, 'raise NotImplementedError("task 1.1: Function.apply builds the graph")'))


def test_unfinished_tasks_take_one_line_each():
    score = _score({"1.1": [TestResult(f"test_{i}", "1.1", "not_implemented", STUB)
                            for i in range(4)],
                    "1.2": [TestResult("test_a", "1.2", "passed"),
                            TestResult("test_b", "1.2", "not_implemented", STUB)]})
    text = render(score)
    todo = [line for line in text.splitlines() if line.startswith("[todo]")]
    assert todo == [
        "[todo] 1.1: 4 of 4 tests stop at a stub: task 1.1: Function.apply builds the graph "
        "(tinytrain/ops/inner.py, line 99)",
        "[todo] 1.2: 1 of 2 tests stop at a stub: task 1.1: Function.apply builds the graph "
        "(tinytrain/ops/inner.py, line 99)"]
    assert 'File "' not in text and "more failing test" not in text
    verbose = render(score, verbose=True)
    assert sum(line.startswith("[todo] 1.1 test_") for line in verbose.splitlines()) == 4
    assert 'File "' not in verbose


def test_an_error_shows_the_innermost_frame_the_example_and_what_was_printed():
    example = "  case: x: float32[2, 3]\n  reproduce:\n    import tinytrain as tt\n    tt.exp(x)"
    message = "ImportError: import of 'torch' is blocked\n" + _frames(12, "import torch")
    doc = ("Forward values and dtypes match torch, through every tinytrain spelling of the "
           "op, on every dtype and layout drawn.")
    printed = "\n".join(f"line {i}" for i in range(30))
    score = _score({"2.2": [TestResult("test_forward[exp]", "2.2", "error",
                                       message + "\n" + example, output=printed,
                                       description=doc),
                            TestResult("test_backward[exp]", "2.2", "failed", "wrong")]})
    text = render(score)
    lines = text.splitlines()
    assert "        import torch" in lines  # the innermost frame, in full
    assert '      File "tinytrain/ops/f0.py", line 1, in f0' in lines  # where it was entered
    assert "      [... 8 more frames in score.json]" in lines
    assert sum(line.lstrip().startswith('File "') for line in lines) == 4
    assert "      case: x: float32[2, 3]" in lines and "        tt.exp(x)" in lines
    # the whole description, over two lines
    head = lines.index(next(line for line in lines if line.startswith("[ERROR] 2.2")))
    assert " ".join(x.strip() for x in lines[head:head + 2]).endswith(
        "on every dtype and layout drawn.")
    assert lines[lines.index("    your code printed:") + 1] == "      line 0"
    assert "      line 9" in lines and "      line 10" not in lines
    assert "      [... 20 more lines in score.json]" in lines
    assert "(1 more failing test; see score.json or run with --verbose)" in lines
    verbose = render(score, verbose=True).splitlines()
    assert "      line 29" in verbose and "[FAIL] 2.2 test_backward[exp]" in verbose
    # what a passing test printed: with --verbose only
    score.tasks[0].tests.append(TestResult("test_view[exp]", "2.2", "passed", output="hello"))
    assert "hello" not in render(score)
    verbose = render(score, verbose=True).splitlines()
    assert verbose[-3:] == ["[ok] 2.2 test_view[exp]", "    your code printed:", "      hello"]


def test_a_message_seen_already_is_not_repeated():
    message = "the submission could not be imported: SyntaxError: bad\n" + _frames(2, "x = (")
    score = _score({task: [TestResult("test_x", task, "error", message)]
                    for task in ("1.1", "1.2")})
    text = render(score)
    assert text.count("SyntaxError") == 1
    assert "    the same as 1.1 test_x above" in text.splitlines()


def test_a_hang_keeps_its_stack_innermost_first():
    stack = "it was running (innermost first):\n" + "\n".join(
        f'  File "tinytrain/f{i}.py", line {i} in f{i}' for i in range(8))
    score = _score({"1.3": [TestResult("test_x", "1.3", "timeout", "no answer\n" + stack)]})
    lines = render(score).splitlines()
    assert '      File "tinytrain/f0.py", line 0 in f0' in lines
    assert '      File "tinytrain/f7.py", line 7 in f7' in lines


def test_descriptions_are_the_whole_first_paragraph():
    doc = """First line of the summary,
        which goes on here.

        Details that are not part of it."""
    assert description(doc) == "First line of the summary, which goes on here."
    assert description(None) == ""


def test_an_error_carries_the_running_example():
    with pytest.raises(SubmissionRaised) as info:
        with running_example("x: float32[3]", lambda: "print(1)"):
            raise SubmissionRaised("ValueError", "bad", '  File "tinytrain/a.py", line 1, in f')
    status, message = classify(info.value)
    assert status == "error"
    assert message.splitlines() == ["ValueError: bad", '  File "tinytrain/a.py", line 1, in f',
                                    "  case: x: float32[3]", "  reproduce:", "    print(1)"]
    # a stub needs no example
    with pytest.raises(NotImplementedInSubmission) as stub:
        with running_example("x", "y"):
            raise NotImplementedInSubmission("NotImplementedError: task 1.1")
    assert classify(stub.value) == ("not_implemented", "NotImplementedError: task 1.1")


def test_an_error_in_a_property_test_names_the_failing_example():
    """Without a running example, Hypothesis' note on the failing case is kept (its
    wording changes between releases: this fails if it is not recognised)."""

    @settings(database=None, derandomize=True, max_examples=20)
    @given(n=st.integers(0, 100))
    def check(n):
        if n > 3:
            raise SubmissionRaised("KeyError", "3", "")

    with pytest.raises(SubmissionRaised) as info:
        check()
    status, message = classify(info.value)
    assert status == "error" and message.startswith("KeyError: 3\n")
    assert "n=" in message.split("\n", 1)[1]


def test_a_long_traceback_keeps_its_innermost_frame(tmp_path):
    root = tmp_path / "tinytrain"
    root.mkdir()
    # fifty different functions, each calling the next (a recursion's repeats are folded)
    source = "".join(f"def f{i}():\n    f{i + 1}()\n" for i in range(50))
    source += "def f50():\n    raise ValueError('deep')\n"
    (root / "deep.py").write_text(source)
    code = compile(source, str(root / "deep.py"), "exec")
    namespace: dict = {}
    exec(code, namespace)
    try:
        namespace["f0"]()
    except ValueError as exc:
        text = worker.submission_traceback(exc, str(root), limit=600)
    assert len(text) <= 600
    assert text.splitlines()[0].startswith("  [... ")
    assert text.rstrip().endswith("raise ValueError('deep')")
    long_detail = "\n".join(f'  File "tinytrain/a.py", line {i}, in f\n    g()'
                            for i in range(2000)) + "\n  File \"tinytrain/b.py\", line 7\n    boom()"
    _, message = classify(SubmissionRaised("ValueError", "x" * 10_000, long_detail))
    assert message.rstrip().endswith("boom()") and "outer frames left out" in message
    assert len(message) < 6000


def test_types_are_named_with_their_module():
    class Tensor:  # a tinytrain Tensor whose .data is a NumPy scalar, not an array
        data = np.float64(1.0)

    with pytest.raises(TypeError, match=r"got a numpy\.float64$"):
        _observe.array(np.float64(1.0))
    with pytest.raises(TypeError, match=r"got a tests\.report\.test_console\.[\w.<>]*Tensor whose "
                                        r"\.data is a numpy\.float64"):
        _observe.array(Tensor())
    with pytest.raises(TypeError, match=r"got a float$"):
        _observe.array(1.5)


def _read_all(fd: int, timeout: float, until: bytes | None = None) -> bytes:
    """What arrives on ``fd`` until it closes, ``until`` ends it, or ``timeout``."""
    data, deadline = b"", time.monotonic() + timeout
    while time.monotonic() < deadline and not (until and data.endswith(until)):
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the other end closed
                break
            if not chunk:
                break
            data += chunk
    return data


def test_progress_only_on_a_terminal():
    main, other = pty.openpty()
    try:
        with os.fdopen(os.dup(other), "w") as terminal:
            progress = Progress.for_terminal(terminal)
        assert progress is not None
        progress.update("2.1", 3, 54, 1, 2, test="test_forward[add]")
        progress.close()
        shown = _read_all(main, 10, until=b"\r\x1b[K").decode()
        assert "grading task 2.1 (1 of 2): 3/54 tests done" in shown
        assert "test_forward[add]" in shown and shown.endswith("\r\x1b[K")
    finally:
        os.close(main)
        os.close(other)
    read, write = os.pipe()
    try:
        with os.fdopen(write, "w") as pipe:
            assert Progress.for_terminal(pipe) is None
    finally:
        os.close(read)
    assert Progress.for_terminal(open(os.devnull, "w")) is None


def test_grading_on_a_terminal_shows_progress(tmp_path):
    """The template's task 1.1 through a pseudo-terminal: a progress line, cleared before
    the table (gradings into a pipe print none of it: see the next test)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-m", "graders.cli", str(TEMPLATE), "--tasks", "1.1",
            "--no-shrink"]
    main, other = pty.openpty()
    proc = subprocess.Popen([*args, "--out", str(tmp_path / "tty")], cwd=ROOT, env=env,
                            stdin=other, stdout=other, stderr=other)
    os.close(other)
    try:
        shown = _read_all(main, 240).decode(errors="replace")
    finally:
        proc.wait(timeout=60)
        os.close(main)
    assert proc.returncode == 0, shown
    count = sum(1 for t in json.loads((tmp_path / "tty" / "score.json").read_text())["tasks"][0]["tests"])
    assert f"grading task 1.1 (1 of 1): {count}/{count} tests done" in shown
    table = shown.index("task   title")
    assert shown[:table].endswith("\r\x1b[K")  # the line is gone before the table
    assert f"[todo] 1.1: {count} of {count} tests stop at a stub" in shown[table:]



def test_an_error_in_a_grading_shows_frame_example_and_output(tmp_path):
    """A hand-made 1.3 bug: enable_grad raises, five calls deep, inside no_grad, after
    printing. The console shows the innermost frame, the script that failed and what
    was printed, and no progress line (stdout is a pipe); score.json has the whole
    description."""
    submission = broken(tmp_path / "sub", (
        "autograd/grad_mode.py",
        "        self._prev = _state.grad_enabled\n        _state.grad_enabled = True\n",
        "        if not _state.grad_enabled:\n"
        "            print('enable_grad entered under no_grad')\n"
        "            _helper(5)\n"
        "        self._prev = _state.grad_enabled\n        _state.grad_enabled = True\n"),
        ("autograd/grad_mode.py", "\nclass no_grad(",
         "\ndef _helper(n):\n    if n:\n        return _helper(n - 1)\n"
         "    raise LookupError('the innermost frame')\n\n\nclass no_grad("))
    score = grade(submission, tmp_path / "out", "--tasks", "1.3", "--no-shrink")
    assert score["_exit"] == 0, score["_stderr"]
    assert "\r" not in score["_stdout"] and "\x1b" not in score["_stdout"]
    assert "tests done" not in score["_stdout"] + score["_stderr"]
    out = score["_stdout"].splitlines()
    head = next(i for i, line in enumerate(out)
                if line.startswith("[ERROR] 1.3 test_nested_modes_match_torch"))
    shown = out[head:]
    assert "        raise LookupError('the innermost frame')" in shown
    assert any(line.startswith("      case: where check() prints") for line in shown)
    assert "            with tt.enable_grad():" in shown
    assert "      enable_grad entered under no_grad" in shown
    test = next(t for t in score["tasks"][0]["tests"]
                if t["name"] == "test_nested_modes_match_torch")
    assert test["description"].endswith("blocks match torch.")
    assert "raise LookupError('the innermost frame')" in test["message"]
    assert "case: where check() prints" in test["message"]


def test_the_package_folder_itself_is_refused_with_the_folder_to_pass(tmp_path):
    score = grade(ROOT / "reference" / "tinytrain", tmp_path / "out", "--tasks", "1.1")
    assert score["_exit"] == 2
    assert "pass the folder that contains tinytrain/" in score["_stderr"]
    assert str(ROOT / "reference") in score["_stderr"]
    assert score["status"] == "error" and "pass the folder" in score["error"]


def test_argument_errors_leave_score_files(tmp_path):
    score = grade(ROOT / "reference", tmp_path / "out", "--profile", "fast")
    assert score["_exit"] == 2
    assert "invalid choice: 'fast'" in score["_stderr"]
    assert score["status"] == "error" and "invalid choice" in score["error"]
    for name in ("results.json", "classroom.json"):
        json.loads((tmp_path / "out" / name).read_text())
    # a bare command (no submission, no --out) leaves nothing in the current folder
    bare = tmp_path / "bare"
    bare.mkdir()
    proc = subprocess.run([sys.executable, "-m", "graders.cli"], cwd=bare, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2 and "required: submission" in proc.stderr
    assert not list(bare.iterdir())


def test_help_says_where_the_files_go_by_default():
    proc = subprocess.run([sys.executable, "-m", "graders.cli", "--help"], cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ,
                                                               "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0
    assert "default: the current folder" in " ".join(proc.stdout.split())
    assert Path(ROOT / "README.md").read_text().count("current folder") >= 1


class _Answers:
    """A stand-in probe client that answers every call with ``value``."""

    def __init__(self, value: dict) -> None:
        self.value = value

    def call(self, probe: str, *args: object, **kwargs: object) -> dict:
        return self.value


def test_grad_mode_messages_name_what_failed():
    """A wrong value says which decorator, which nested region: never a bare key."""
    from graders.suites.hw1_autograd import test_grad_modes as suite

    right = {key: value for key, (value, _) in suite.DECORATOR_CHECKS.items()}
    with pytest.raises(AssertionError) as info:
        suite.test_decorators(_Answers({**right, "after_no_grad": False}))
    assert str(info.value).startswith(
        "tt.is_grad_enabled() after calling a function decorated with @tt.no_grad() (the "
        "decorator must restore the mode): got False, expected True")
    raised = {"type": "RuntimeError", "message": "Inference tensors cannot be saved for "
              "backward; inference tensor outside InferenceMode is not allowed"}
    inference = {"enabled_inside": True, "grad_inside": False, "recorded_inside": False,
                 "is_inference": True, "output_is_inference": True,
                 "nested_false": [True, False], "nested_false_tensor_is_inference": False,
                 "enabled_after": False, "normal_is_inference": False,
                 "save_outside": raised, "add_outside": {"type": None, "message": ""},
                 "requires_grad_outside": raised}
    with pytest.raises(AssertionError) as info:
        suite.test_inference_mode_and_inference_tensors(_Answers(inference))
    assert str(info.value).startswith(
        "[tt.is_inference_mode_enabled(), tt.is_grad_enabled()] inside `with "
        "tt.inference_mode(False)` nested in `with tt.inference_mode()`: got [True, False], "
        "expected [False, True]")
