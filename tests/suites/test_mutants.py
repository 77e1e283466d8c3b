"""Each known-wrong variant loses points in its own task and in no other task of its
assignment (tests/mutants/ lists them), except integration tasks (``integration = true`` in
the rubric: the GPT and end-to-end training run every layer, so any layer's bug shows
there too). Gradings skip shrinking (``--no-shrink``): the same scores, and most
of the time a failing grading takes goes into shrinking."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from graders import rubric
from graders.harness.pristine import given_files

from ..conftest import grade_forked as grade
from ..conftest import task_scores
from ..mutants import all_alternatives, all_mutants

ALL_MUTANTS = all_mutants()
ALL_ALTERNATIVES = all_alternatives()
INTEGRATION = {t.id for t in rubric.load().tasks if t.integration}
# Every variant is graded over its whole assignment: all of them take over an hour on two
# cores. By default (CI) the first mutant listed for each task and the first alternative of
# each assignment run; TINYTRAIN_ALL_MUTANTS=1 runs every one (before a release, and after
# changing a suite).
EVERY_VARIANT = os.environ.get("TINYTRAIN_ALL_MUTANTS") == "1"


def _first_per(variants: list, key: Callable) -> list:
    seen: set[str] = set()
    kept = []
    for v in variants:
        if key(v) not in seen:
            seen.add(key(v))
            kept.append(v)
    return kept


MUTANTS = ALL_MUTANTS if EVERY_VARIANT else _first_per(ALL_MUTANTS, lambda m: m.task)
ALTERNATIVES = (ALL_ALTERNATIVES if EVERY_VARIANT
                else _first_per(ALL_ALTERNATIVES, lambda m: m.assignment))


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.id for m in MUTANTS])
def test_mutant_is_caught_by_its_task(mutant, tmp_path):
    mutant.apply(tmp_path / "submission")
    score = grade(tmp_path / "submission", tmp_path / "out", "--tasks", mutant.assignment,
                  "--no-shrink")
    assert score["_exit"] == 0, score["_stderr"]
    scores = task_scores(score)
    got, full = scores[mutant.task]
    assert got < full, f"{mutant.id} ({mutant.why}) was not caught by task {mutant.task}"
    others = {tid: s for tid, s in scores.items()
              if tid not in (mutant.task, *INTEGRATION) and s[0] < s[1]}
    assert not others, f"{mutant.id} also cost points in {others}: it must only hit {mutant.task}"
    assert_messages_given(score)


def assert_messages_given(score: dict) -> None:
    """Every test that did not pass says why: an empty message tells a student nothing."""
    silent = [f"{task['id']} {test['name']} ({test['status']})" for task in score["tasks"]
              for test in task["tests"] if test["status"] != "passed" and not test["message"]]
    assert not silent, f"failed without a message: {silent}"


def test_a_failed_check_is_never_silent(tmp_path):
    """A check written as a comparison keeps its message (pytest's assertion rewriting,
    with the terminal plugin off, once replaced it with an empty AssertionError)."""
    mutant = next(m for m in ALL_MUTANTS if m.id == "cast-gradient-in-output-dtype")
    mutant.apply(tmp_path / "submission")
    score = grade(tmp_path / "submission", tmp_path / "out", "--tasks", mutant.task,
                  "--no-shrink")
    failed = [t for task in score["tasks"] for t in task["tests"] if t["status"] == "failed"]
    assert failed and all(t["message"] for t in failed)
    assert any("reproduce:" in t["message"] for t in failed)
    assert_messages_given(score)


def test_every_variant_edits_a_homework_file():
    """The grader puts the given files (no homework region) back before grading, so a
    variant of one of them would grade as the reference: it stands for no student's bug."""
    given = set(given_files())
    on_given = [m.id for m in ALL_MUTANTS + ALL_ALTERNATIVES if f"tinytrain/{m.file}" in given]
    assert not on_given


@pytest.mark.parametrize("alternative", ALTERNATIVES, ids=[m.id for m in ALTERNATIVES])
def test_correct_alternative_keeps_full_marks(alternative, tmp_path):
    alternative.apply(tmp_path / "submission")
    score = grade(tmp_path / "submission", tmp_path / "out", "--tasks", alternative.assignment,
                  "--no-shrink")
    assert score["_exit"] == 0, score["_stderr"]
    lost = {tid: s for tid, s in task_scores(score).items() if s[0] < s[1]}
    assert not lost, f"{alternative.id} ({alternative.why}) is correct but lost points: {lost}"


def test_mutant_ids_are_unique():
    ids = [m.id for m in ALL_MUTANTS + ALL_ALTERNATIVES]
    assert len(ids) == len(set(ids))


def test_every_task_has_a_mutant():
    covered = {m.task for m in ALL_MUTANTS}
    missing = [t.id for t in rubric.load().tasks if t.id not in covered]
    assert not missing, f"tasks without a known-wrong variant: {missing}"


def test_every_variant_applies(tmp_path):
    """Each variant's snippet is found exactly once and the result compiles, including
    those that only TINYTRAIN_ALL_MUTANTS=1 grades."""
    for i, variant in enumerate(ALL_MUTANTS + ALL_ALTERNATIVES):
        variant.apply(tmp_path / str(i))


def test_an_assert_without_message_names_its_check(tmp_path):
    import runpy

    from graders.runner.plugin import classify

    check = tmp_path / "check.py"  # run as plain Python: pytest rewrites this file's asserts
    check.write_text("def check():\n    assert 1 + 1 == 3\n")
    try:
        runpy.run_path(str(check))["check"]()
    except AssertionError as exc:
        status, message = classify(exc)
    assert status == "failed"
    assert message == "a check failed: assert 1 + 1 == 3 (check.py, line 2)"
