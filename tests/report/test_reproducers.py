"""Every reproducer the grader prints runs at the student's stage and shows the failure.

For a known-wrong variant (``tests/mutants``) of task T, the submission is the template
with the solutions of T and of the tasks before it (rubric order: a student works through
them in that order) put back, T's mutation applied: what a student on task T has. It is
graded on T (``--no-shrink``), and each reproducer printed in a failing test's message
(the ``reproduce:`` block) runs as a script, in a subprocess, with that submission on
PYTHONPATH, and then with the same stage of the reference (no mutation). Against the
reference it must run cleanly (exit 0, something printed, which is then what PyTorch
gives: the reference keeps full marks); against the variant it must show the failure: a
different output, or an error (not a ``NotImplementedError`` of a task the student has
not reached). The test process never imports tinytrain. (A failing test whose message
has no reproducer is not checked here: the variant must still be caught at its stage.)

In CI the first variant of each assignment runs; TINYTRAIN_ALL_MUTANTS=1 runs every one
(the same switch as tests/suites/test_mutants.py).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graders import rubric
from graders.authoring import template

from ..conftest import grade_forked, task_scores
from ..mutants import REFERENCE, Mutant, all_mutants

TASKS = [t.id for t in rubric.load().tasks]
# Tasks whose grading needs a later task besides those before it (tests/suites/test_isolation.py
# says why): the mixed-precision model tasks build their models with task 5.1's Module.
LATER_NEEDS = {"4.4": ("5.1",), "4.5": ("5.1",)}
REPRODUCER_TIMEOUT_S = 120
EVERY_VARIANT = os.environ.get("TINYTRAIN_ALL_MUTANTS") == "1"


def _first_per(variants: list[Mutant], key: Callable[[Mutant], str]) -> list[Mutant]:
    seen: set[str] = set()
    kept = []
    for v in variants:
        if key(v) not in seen:
            seen.add(key(v))
            kept.append(v)
    return kept


MUTANTS = all_mutants() if EVERY_VARIANT else _first_per(all_mutants(), lambda m: m.assignment)


def stage(task: str) -> set[str]:
    """The tasks a student working on ``task`` has done: it, those before it, and what
    its grading needs from later ones."""
    return {*TASKS[: TASKS.index(task) + 1], *LATER_NEEDS.get(task, ())}


def build_stage(submission: Path, task: str, mutant: Mutant | None = None) -> Path:
    """``submission/tinytrain``: the reference (with ``mutant`` applied) with the solution
    regions of every task outside ``stage(task)`` cut out as in the template."""
    full = submission.with_name(submission.name + "-full")
    if mutant is None:
        shutil.copytree(REFERENCE, full / "tinytrain",
                        ignore=shutil.ignore_patterns("__pycache__"))
    else:
        mutant.apply(full)
    done = stage(task)
    template.generate(full / "tinytrain", submission / "tinytrain", template.rubric_titles(),
                      only=lambda t: t not in done)
    shutil.rmtree(full)
    return submission


_BLOCK = re.compile(r"^  reproduce:\n((?:(?:    .*)?\n?)+)", re.M)


def printed_reproducers(score: dict[str, Any]) -> dict[str, str]:
    """{reproducer code: the first test that printed it} over the non-passing tests."""
    found: dict[str, str] = {}
    for task in score["tasks"]:
        for test in task["tests"]:
            if test["status"] == "passed":
                continue
            for match in _BLOCK.finditer(test["message"]):
                code = "\n".join(line[4:] for line in match.group(1).splitlines()).strip()
                found.setdefault(code, test["name"])
    return found


def run_script(code: str, submission: Path, folder: Path) -> tuple[int | None, str, str]:
    """Run ``code`` as a student would (``python repro.py`` with the submission on
    PYTHONPATH): (exit code or None on a timeout, stdout, stderr)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "repro.py").write_text(code + "\n")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(folder), "TMPDIR": str(folder),
           "PYTHONPATH": str(submission), "PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "TRITON_INTERPRET": "1"}
    try:
        proc = subprocess.run([sys.executable, "-s", "repro.py"], cwd=folder, env=env,
                              capture_output=True, text=True, timeout=REPRODUCER_TIMEOUT_S)
    except subprocess.TimeoutExpired as timeout:
        return None, str(timeout.stdout or ""), str(timeout.stderr or "")
    return proc.returncode, proc.stdout, proc.stderr


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def reproducer_problem(code: str, mutated: Path, reference: Path, folder: Path) -> str | None:
    """Why this reproducer fails the property, or None when it holds."""
    ref_rc, ref_out, ref_err = run_script(code, reference, folder / "reference")
    if ref_rc != 0:
        return (f"against the reference at this stage it does not run cleanly (exit "
                f"{ref_rc}): {_last_line(ref_err) or 'timed out'}")
    if not ref_out.strip():
        return "it prints nothing: it must print the values the message compares"
    rc, out, err = run_script(code, mutated, folder / "mutant")
    if "NotImplementedError: task" in err:
        return f"against the variant it needs a task not done yet: {_last_line(err)}"
    if rc == 0 and out == ref_out:
        return ("against the variant it prints what the reference prints (and PyTorch "
                f"gives), so it does not show the failure:\n{out}")
    return None


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.id for m in MUTANTS])
def test_reproducers_run_at_the_students_stage(mutant: Mutant, tmp_path: Path) -> None:
    mutated = build_stage(tmp_path / "mutant", mutant.task, mutant)
    reference = build_stage(tmp_path / "reference", mutant.task)
    score = grade_forked(mutated, tmp_path / "out", "--tasks", mutant.task, "--no-shrink")
    assert score["_exit"] == 0, score["_stdout"]
    got, full = task_scores(score)[mutant.task]
    assert got < full, f"{mutant.id} is not caught by task {mutant.task} at the student's stage"
    problems = []
    for i, (code, test) in enumerate(printed_reproducers(score).items()):
        problem = reproducer_problem(code, mutated, reference, tmp_path / f"run{i}")
        if problem:
            problems.append(f"{test}: {problem}\n--- the reproducer:\n{code}")
    assert not problems, f"{mutant.id} ({mutant.why}):\n\n" + "\n\n".join(problems)
    if mutant.assignment in TORCH_RUNS_THEM:
        # the student guide: these run with torch in tinytrain's place (PyTorch's answer)
        for i, (code, test) in enumerate(printed_reproducers(score).items()):
            rc, _, err = run_script(code.replace("import tinytrain as tt", "import torch as tt"),
                                    tmp_path / "no-submission", tmp_path / f"torch{i}")
            assert rc == 0, f"{test}: does not run with import torch as tt: {_last_line(err)}"


TORCH_RUNS_THEM = {"4", "5"}  # (assignment 2's: most; 1, 3, 6, 7: tinytrain's own parts)


def test_stage_keeps_exactly_the_tasks_done(tmp_path: Path) -> None:
    """A stage submission raises NotImplementedError for the tasks after it only."""
    submission = build_stage(tmp_path / "s", "1.2")
    text = "".join(p.read_text() for p in sorted((submission / "tinytrain").rglob("*.py")))
    stubbed = set(re.findall(r'NotImplementedError\("task (\d+\.\d+):', text))
    assert stubbed == set(TASKS[2:]), sorted(stubbed)


def test_printed_reproducers_are_parsed_whole() -> None:
    """The reproduce: block is read up to its last indented line, blank lines included."""
    message = ("x: got 1, expected 2\n  case: x = [1]\n  reproduce:\n    import tinytrain as tt"
               "\n\n    x = tt.tensor([1.0])\n    print(x)\nFalsifying example: ...")
    score = {"tasks": [{"tests": [{"name": "t", "status": "failed", "message": message}]}]}
    assert printed_reproducers(score) == {
        "import tinytrain as tt\n\nx = tt.tensor([1.0])\nprint(x)": "t"}


def _printed_grads(out: str) -> list[np.ndarray]:
    """The values of each ``xN.grad: tensor([...])`` line a program reproducer prints."""
    found = []
    for line in out.splitlines():
        if re.match(r"x\d+\.grad:", line):
            body = line.split("tensor(", 1)[1] if "tensor(" in line else ""
            numbers = re.findall(r"-?\d+\.?\d*(?:e[-+]?\d+)?", body.split("dtype=")[0])
            found.append(np.array([float(n) for n in numbers]))
    return found


@pytest.mark.parametrize("retain", [False, True], ids=["fresh-forwards", "retain-graph"])
def test_program_reproducers_print_torchs_gradients(retain: bool, tmp_path: Path) -> None:
    """Task 1.2's reproducer of the key programs, run on the reference at stage 1.2 (no
    operators of assignment 2), prints the leaf gradients torch gives for two backward
    passes: each on a fresh forward, or both through one graph with retain_graph=True."""
    from graders.oracle import programs as oracle
    from graders.strategies.programs import reproducer
    from graders.suites.hw1_autograd.test_backward import KEY_PROGRAMS

    submission = build_stage(tmp_path / "stage", "1.2")
    for i, program in enumerate(KEY_PROGRAMS):
        code = reproducer(program, 2, retain_graph=retain)
        assert ("retain_graph=True" in code) == retain and ("for _ in" in code) != retain
        rc, out, err = run_script(code, submission, tmp_path / f"run{i}")
        assert rc == 0, err
        expected = oracle.leaf_grads(program, 1 if retain else 2)
        got = _printed_grads(out)
        assert len(got) == len(expected), out
        for g, e in zip(got, expected, strict=True):
            e = (2 * e if retain else e).ravel()
            # the Tensor repr prints 4 decimals
            np.testing.assert_allclose(g, e, atol=1e-4 + 1e-4 * np.abs(e).max(), err_msg=out)
