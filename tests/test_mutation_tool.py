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
        mutants.update({m.id: m for m in mt.file_mutants(text, file, titles, operators=mt.OPERATOR_SETS)})
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


# ----------------------------------------------------------------------------- student rewrites

REWRITES_SOURCE = '''\
import numpy as np
import triton.language as tl
from torch import distributed as dist


def first(a, b, x, n, group):
    # BEGIN SOLUTION 1.1
    m = np.maximum(a, b)
    m2 = np.minimum(a, b, out=a)
    c = np.ascontiguousarray(x)
    d = x.copy()
    e = a.sum(axis=-1, keepdims=True)
    mask = a < n
    if a < n:
        pass
    for i in range(1, n):
        x = x + b
    x -= b
    x -= 1
    r = dist.get_rank(group)
    src = dist.get_process_group_ranks(group)[0]
    f = np.exp(x - x.max(axis=-1))
    g = np.swapaxes(a, -1, -2)
    h = x.reshape(4, 2).astype(np.float32)
    k = np.zeros(3, dtype=a.dtype)
    w = np.array(a, copy=True)
    offs = tl.load(p, mask=tl.arange(0, 8) < n, other=0.0).to(tl.float32)
    launch(kernel, (1,), a, BLOCK=4)
    y = b[1:n]
    with np.errstate(over="ignore"):
        z = x + 1
    if d is None:
        d = getattr(a, "data", a)
    q = counts.get(a, 0) if a is not b else max(1, n)
    for hook in list(hooks):
        hooks.setdefault(a, [])
    t = float(n) if float("-inf") else bool(n)
    # END SOLUTION
    return np.maximum(a, b) + (a < n) + x.copy()
'''

EXPECTED_REWRITES = {  # (operator, original, mutated): at least one case of every operator
    ("where_for_max", "np.maximum(a, b)", "np.where(a > b, a, b)"),
    ("nan_ignoring", "np.maximum(a, b)", "np.fmax(a, b)"),
    ("nan_ignoring", "np.minimum(a, b, out=a)", "np.fmin(a, b, out=a)"),
    ("nan_ignoring", "x.max(axis=-1)", "np.nanmax(x, axis=-1)"),
    ("asarray_for_contiguous", "np.ascontiguousarray(x)", "np.asarray(x)"),
    ("view_for_copy", "x.copy()", "x"),
    ("view_for_copy", "np.array(a, copy=True)", "np.asarray(a)"),
    ("reshape_memory_order", "x.reshape(4, 2)", 'x.ravel(order="K").reshape(4, 2)'),
    ("dropped_keyword_out", "np.minimum(a, b, out=a)", "np.minimum(a, b)"),
    ("dropped_keyword_keepdims", "a.sum(axis=-1, keepdims=True)", "a.sum(axis=-1)"),
    ("dropped_keyword_axis", "a.sum(axis=-1, keepdims=True)", "a.sum(keepdims=True)"),
    ("dropped_keyword_dtype", "np.zeros(3, dtype=a.dtype)", "np.zeros(3)"),
    ("dropped_keyword_mask", "tl.load(p, mask=tl.arange(0, 8) < n, other=0.0)",
     "tl.load(p, other=0.0)"),
    ("mask_bound", "a < n", "a <= n"),
    ("mask_bound", "tl.arange(0, 8) < n", "tl.arange(0, 8) <= n"),
    ("mask_bound_minus_one", "tl.arange(0, 8) < n", "tl.arange(0, 8) < n - 1"),
    ("range_end", "range(1, n)", "range(1, n - 1)"),
    ("range_start", "range(1, n)", "range(1 + 1, n)"),
    ("range_end", "1:n", "1:n - 1"),
    ("range_start", "1:n", "1 + 1:n"),
    ("global_rank", "dist.get_rank(group)", "dist.get_rank()"),
    ("global_rank", "dist.get_process_group_ranks(group)[0]", "0"),
    ("dtype_float32", "dtype=a.dtype", "dtype=np.float32"),
    ("dtype_float64", "dtype=a.dtype", "dtype=np.float64"),
    ("dropped_cast", "x.reshape(4, 2).astype(np.float32)", "x.reshape(4, 2)"),
    ("dropped_cast", "tl.load(p, mask=tl.arange(0, 8) < n, other=0.0).to(tl.float32)",
     "tl.load(p, mask=tl.arange(0, 8) < n, other=0.0)"),
    ("unstable_exp", "np.exp(x - x.max(axis=-1))", "np.exp(x)"),
    ("two_d_axes", "np.swapaxes(a, -1, -2)", "a.T"),
    ("two_d_axes", "axis=-1", "axis=1"),
    ("inplace", "x = x + b", "x += b"),
    ("truthiness_for_none", "d is None", "not d"),
    ("equality_for_identity", "is not b", "!= b"),
    ("iterate_original", "list(hooks)", "hooks"),
    ("dropped_default", 'getattr(a, "data", a)', "a.data"),
    ("dropped_default", "counts.get(a, 0)", "counts[a]"),
    ("dropped_default", "hooks.setdefault(a, [])", "hooks.get(a, [])"),
    ("dropped_guard", "max(1, n)", "n"),
    ("dropped_cast", "float(n)", "n"),
    ("dropped_cast", "bool(n)", "n"),
    ("out_of_place", "x -= b", "x = x - b"),
}


def _rewrites(source: str = REWRITES_SOURCE) -> list:
    return mt.file_mutants(source, "m.py", {"1.1": "first"}, operators=("rewrites",))


def test_rewrites_make_the_expected_mutants():
    mutants = _rewrites()
    made = {(m.operator, m.original.strip().rstrip(","), m.mutated.strip().rstrip(","))
            for m in mutants}
    assert EXPECTED_REWRITES <= made, sorted(EXPECTED_REWRITES - made)
    for method in dir(mt.RewriteVisitor):  # every operator has a case above
        if method.startswith("rewrite_"):
            name = method.removeprefix("rewrite_")
            assert any(op.startswith(name) for op, _, _ in EXPECTED_REWRITES), name
    spans = _region_lines_of(REWRITES_SOURCE)
    original = REWRITES_SOURCE.splitlines()
    for m in mutants:
        assert m.operators == "rewrites" and m.task == "1.1" and m.compiles(), m
        changed = {i + 1 for i, (a, b) in enumerate(zip(original, m.code().splitlines())) if a != b}
        assert changed and changed <= spans, (m.id, changed)


def test_rewrites_do_not_apply_where_they_must_not():
    mutants = _rewrites()
    lines = REWRITES_SOURCE.splitlines()

    def on(text: str) -> set[str]:
        number = next(i + 1 for i, line in enumerate(lines) if line.strip() == text)
        return {m.operator for m in mutants if m.line == number}

    # a max with out= has no where form (a where cannot write into out)
    assert "where_for_max" not in on("m2 = np.minimum(a, b, out=a)")
    # the comparison assigned to `mask` is a mask; the same one in an `if` is not
    assert {"mask_bound", "mask_bound_minus_one"} <= on("mask = a < n")
    assert on("if a < n:") == set()
    # a Triton constexpr keyword (upper case) and np.errstate's keywords are never dropped
    assert on("launch(kernel, (1,), a, BLOCK=4)") == set()
    assert on('with np.errstate(over="ignore"):') == set()
    # float("-inf") is a constant, not a cast to drop; `x -= 1` on a number only rebinds
    assert not any(m.original == 'float("-inf")' for m in mutants)
    assert "out_of_place" not in on("x -= 1")
    # nothing outside the region: the return line's max, comparison and copy stay
    assert all(m.line in _region_lines_of(REWRITES_SOURCE) for m in mutants)
    # a region with none of the patterns has no rewrites
    plain = "def first(x):\n    # BEGIN SOLUTION 1.1\n    return x + 1\n    # END SOLUTION\n"
    assert _rewrites(plain) == []


def _region_lines_of(source: str) -> set[int]:
    lines = source.splitlines()
    start = next(i for i, line in enumerate(lines) if "BEGIN SOLUTION" in line)
    end = next(i for i in range(start, len(lines)) if "END SOLUTION" in lines[i])
    return set(range(start + 2, end + 1))


def test_rewrite_ids_are_stable_and_distinct_from_mutmut():
    before = _rewrites()
    shifted = REWRITES_SOURCE.replace("import numpy as np\n", "import numpy as np\nimport math\n")
    after = _rewrites(shifted)
    assert [m.id for m in before] == [m.id for m in after]
    assert len({m.id for m in before}) == len(before)
    assert all(m.id.startswith("1.1-") and len(m.id) == len("1.1-") + 10 for m in before)
    mutmut = mt.file_mutants(REWRITES_SOURCE, "m.py", {"1.1": "first"})
    assert mutmut and not {m.id for m in mutmut} & {m.id for m in before}
    assert {m.operators for m in mutmut} == {"mutmut"}
    both = mt.file_mutants(REWRITES_SOURCE, "m.py", {"1.1": "first"},
                           operators=("mutmut", "rewrites"))
    assert [m.id for m in both] == [m.id for m in mutmut] + [m.id for m in before]
    with pytest.raises(ValueError, match="unknown operator set"):
        mt.file_mutants(REWRITES_SOURCE, "m.py", {"1.1": "first"}, operators=("cosmic",))
