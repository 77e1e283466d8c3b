"""scripts/mutation_test.py, the mutation testing of the graders, on a small scale: mutants
only inside solution regions and attributed to their region's task, stable ids and samples,
the equivalents file, and one real mutant graded (killed, then read from the cache)."""

from __future__ import annotations

import importlib.util
import json
import re
import sys

import pytest

from .conftest import ROOT

pytest.importorskip("mutmut", reason="the mutation extra (pip install -e '.[mutation]')")

_spec = importlib.util.spec_from_file_location("mutation_test", ROOT / "scripts" / "mutation_test.py")
assert _spec is not None and _spec.loader is not None
mt = importlib.util.module_from_spec(_spec)
sys.modules["mutation_test"] = mt  # dataclasses look their module up
_spec.loader.exec_module(mt)

TITLES = {"1.1": "first", "2.3": "second"}
SOURCE = '''\
import functools


def outside(a, b):
    return a + b


def first(x):
    # BEGIN SOLUTION 1.1
    # HINT: add one
    y = x + 1
    return y * 2
    # END SOLUTION


@functools.lru_cache
def second(flag):
    if flag:
        # BEGIN SOLUTION 2.3
        return not flag or True
        # END SOLUTION
    return -1
'''


def _region_lines(source: str) -> dict[str, set[int]]:
    lines = source.splitlines()
    spans: dict[str, set[int]] = {}
    for task in TITLES:
        start = next(i for i, line in enumerate(lines) if f"BEGIN SOLUTION {task}" in line)
        end = next(i for i in range(start, len(lines)) if "END SOLUTION" in lines[i])
        spans[task] = set(range(start + 2, end + 1))  # 1-based, markers excluded
    return spans


def test_solution_lines_are_inside_the_markers():
    lines = mt.solution_lines(SOURCE, "m.py", TITLES)
    spans = _region_lines(SOURCE)
    assert lines == {n: task for task, numbers in spans.items() for n in numbers}


def test_mutants_only_in_regions_and_attributed_to_their_task():
    mutants = mt.file_mutants(SOURCE, "m.py", TITLES)
    spans = _region_lines(SOURCE)
    assert {m.task for m in mutants} == {"1.1", "2.3"}  # the decorated function too
    original = SOURCE.splitlines()
    for m in mutants:
        assert m.line in spans[m.task], (m.id, m.line)
        assert m.id.startswith(m.task + "-")
        assert m.compiles()
        changed = {i + 1 for i, (a, b) in enumerate(zip(original, m.code().splitlines()))
                   if a != b}
        assert changed and changed <= spans[m.task], (m.id, changed)
    # `a + b` outside any region is never mutated; `x + 1` inside is
    assert not any("a + b" in m.original for m in mutants)
    assert any(m.original == "x + 1" and m.mutated == "x - 1" for m in mutants)
    assert len({m.id for m in mutants}) == len(mutants)
    only = mt.file_mutants(SOURCE, "m.py", TITLES, tasks={"2.3"})
    assert only and {m.task for m in only} == {"2.3"}


def test_ids_survive_edits_elsewhere_and_samples_are_stable():
    before = mt.file_mutants(SOURCE, "m.py", TITLES)
    shifted = SOURCE.replace("import functools\n", "import functools\nimport math\n\n\n")
    after = mt.file_mutants(shifted, "m.py", TITLES)
    assert [m.id for m in before] == [m.id for m in after]
    assert [m.line + 3 for m in before] == [m.line for m in after]
    one = mt.sample(before, 2, seed=0)
    assert [m.id for m in one] == [m.id for m in mt.sample(before, 2, seed=0)]
    assert all(sum(m.task == t for m in one) <= 2 for t in TITLES)
    # dropping a mutant the sample did not take leaves the sample as it was
    rest = [m for m in before if m not in one]
    assert [m.id for m in mt.sample([*one, *rest[1:]], 2, seed=0)] == [m.id for m in one]
    assert len(mt.sample(before, 0, seed=0)) == len(before)


def test_equivalents_file_names_real_mutants(tmp_path):
    equivalents = mt.load_equivalents()
    titles = mt.rubric_titles()
    mutants = {}
    for file in sorted({entry["file"] for entry in equivalents.values()}):
        text = (mt.REFERENCE / file).read_text()
        mutants.update({m.id: m for m in mt.file_mutants(text, file, titles)})
    stale = sorted(set(equivalents) - set(mutants))
    assert not stale, f"equivalents with no such mutant any more (remove them): {stale}"
    for mutant_id, entry in equivalents.items():
        assert entry["file"] == mutants[mutant_id].file, mutant_id
    bad = tmp_path / "bad.toml"
    bad.write_text('[equivalent."1.1-0123456789"]\nfile = "autograd/function.py"\nwhy = ""\n')
    with pytest.raises(ValueError, match="needs a file and a why"):
        mt.load_equivalents(bad)


def test_one_real_mutant_is_graded_killed_and_cached(tmp_path, capsys):
    mutants = mt.all_mutants(mt.REFERENCE, {"1.1"})
    target = next(m for m in mutants
                  if m.original == "out.grad_fn = ctx" and m.mutated == "out.grad_fn = None")
    argv = ["--ids", target.id, "--no-baseline", "--out", str(tmp_path)]
    assert mt.main(argv) == 0
    report = json.loads((tmp_path / "mutants.json").read_text())
    (record,) = report["mutants"]
    assert record["id"] == target.id and record["task"] == "1.1"
    assert record["outcome"] == "killed", record
    assert record["score"] < record["max_score"]
    assert re.search(r"^-\s+out\.grad_fn = ctx$", record["diff"], re.M), record["diff"]
    assert report["tasks"][0]["score"] == 1.0
    assert "## Surviving mutants (0)" in (tmp_path / "report.md").read_text()
    capsys.readouterr()
    assert mt.main(argv) == 0  # the second run grades nothing: the result is cached
    assert "0 gradings to run, 1 cached" in capsys.readouterr().out


def test_a_grading_past_the_limit_is_a_timeout():
    got = []
    mt.Runner(jobs=1, timeout=0.5, grader_seed=0).run(
        [mt.Job("key", "1.2", None)], lambda job, result: got.append(result))
    assert [r["outcome"] for r in got] == ["timeout"], got
