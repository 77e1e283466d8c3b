"""Task 5.6: TensorDataset, DataLoader (batching, collation, seeded shuffling, drop_last)
and random_split. Batches and split sizes are compared with torch.utils.data; shuffling
and splitting need not reproduce torch's random stream, so their properties are checked
(a permutation, fixed by the seed, different for other seeds and other epochs)."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graders.checks import assert_close, assert_equal, assert_raises_like
from graders.checks.structure import RAISED, Kind, ListOf, conform
from graders.oracle import data as oracle
from graders.suites._seed import case_rng, case_seed, grading_seed
from graders.suites._support import examples, task


def _assert_same_batch(got, expected, what):
    """Compare two described batches (see graders/probes/_data.py: describe)."""
    assert_equal(got[0], expected[0], what=f"{what}: container type")
    if expected[0] == "tensor":
        assert_equal(got[1], expected[1], what=f"{what}: dtype")
        assert_close(got[2], expected[2], what=f"{what}: values", rtol=0, atol=0)
    elif expected[0] == "dict":
        assert_equal([k for k, _ in got[1]], [k for k, _ in expected[1]], what=f"{what}: keys")
        for (key, g), (_, e) in zip(got[1], expected[1], strict=True):
            _assert_same_batch(g, e, f"{what}[{key!r}]")
    elif expected[0] in ("list", "tuple"):
        assert_equal(len(got[1]), len(expected[1]), what=f"{what}: length")
        for i, (g, e) in enumerate(zip(got[1], expected[1], strict=True)):
            _assert_same_batch(g, e, f"{what}[{i}]")
    else:
        assert_equal(got, expected, what=what)


@task("5.6")
@settings(max_examples=examples(20))
@given(n=st.integers(2, 23), batch_size=st.integers(1, 8), drop_last=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_batches_in_order(submission, n, batch_size, drop_last, seed):
    """DataLoader(TensorDataset(x, y), batch_size, drop_last) without shuffling: the same
    batches as torch (stacked samples, the last one shorter unless drop_last), and len()."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    y = rng.integers(0, 5, n).astype(np.int64)
    got = submission.call("data.batches", x, y, batch_size, drop_last)
    expected = oracle.batches(x, y, batch_size, drop_last)
    conform(got, {"len(dataset)": Kind(int), "dataset[1]": Kind(list), "len(loader)": Kind(int),
                  "batches": ListOf(Kind(list))}, what="data.batches")
    case = (f"ds = tt.data.TensorDataset(x (shape ({n}, 3), float32), y (shape ({n},), int64)); "
            f"loader = tt.data.DataLoader(ds, batch_size={batch_size}, drop_last={drop_last})")
    for key in ("len(dataset)", "len(loader)"):
        assert_equal(got[key], expected[key], what=key, case=case)
    _assert_same_batch(got["dataset[1]"], expected["dataset[1]"], "ds[1]")
    assert_equal(len(got["batches"]), len(expected["batches"]), what="number of batches",
                 case=case)
    for i, (g, e) in enumerate(zip(got["batches"], expected["batches"], strict=True)):
        _assert_same_batch(g, e, f"batch #{i}")


@task("5.6")
@pytest.mark.parametrize("kind", ["tuple", "dict", "nested"])
def test_default_collate(submission, kind):
    """Default collation as torch's default_collate: tensors and arrays stacked, Python
    floats to float64, ints to int64, bools to bool, strings kept in a list; dicts key by
    key, tuples and lists position by position (into lists)."""
    n, size = (5, 2) if grading_seed() == 0 else \
        (int(v) for v in case_rng(0, "5.6 collate", kind).integers((4, 2), (9, 4)))
    got = submission.call("data.collate", kind, n, size)
    expected = oracle.collate(kind, n, size)
    conform(got, ListOf(Kind(list)), what="data.collate")
    assert_equal(len(got), len(expected), what="number of batches")
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        _assert_same_batch(g, e, f"batch #{i} of {kind} samples "
                                 "(see graders/probes/_data.py: sample)")


def _flat(epoch):
    return [i for batch in epoch for i in batch]


@task("5.6")
@settings(max_examples=examples(15))
@given(n=st.integers(10, 40), batch_size=st.integers(1, 7), drop_last=st.booleans(),
       seeds=st.lists(st.integers(0, 2**31), min_size=2, max_size=3, unique=True))
def test_shuffle_is_a_seeded_permutation(submission, n, batch_size, drop_last, seeds):
    """shuffle=True: every epoch visits a permutation of the samples (drop_last drops the
    incomplete tail), the generator's seed fixes it, other seeds and later epochs give
    other orders; without a generator, tt.manual_seed fixes it."""
    got = submission.call("data.shuffle_orders", n, batch_size, drop_last, seeds, seeds[:2])
    epoch = ListOf(ListOf(Kind(int)))
    conform(got, {"by_seed": [[epoch, epoch]] * len(seeds),
                  "by_seed_again": [[epoch, epoch]] * len(seeds), "global": [[epoch]] * 2,
                  "global_again": [[epoch]] * 2, "no_shuffle": [epoch],
                  "len(loader)": Kind(int)}, what="data.shuffle_orders")
    case = (f"loader = tt.data.DataLoader(tt.data.TensorDataset(tt.arange({n})), "
            f"batch_size={batch_size}, shuffle=True, drop_last={drop_last}, "
            "generator=tt.Generator().manual_seed(seed))")
    full, count = n // batch_size, n // batch_size if drop_last else -(-n // batch_size)
    assert_equal(got["len(loader)"], count, what="len(loader)", case=case)
    assert_equal(_flat(got["no_shuffle"][0]), list(range(n)) if not drop_last
                 else list(range(full * batch_size)), what="order with shuffle=False", case=case)
    for seed, epochs in zip(seeds, got["by_seed"], strict=True):
        for e, epoch in enumerate(epochs):
            what = f"seed {seed}, epoch {e + 1}"
            sizes = [len(b) for b in epoch]
            expected_sizes = [batch_size] * full + ([n % batch_size] if n % batch_size and
                                                    not drop_last else [])
            assert_equal(sizes, expected_sizes, what=f"{what}: batch sizes", case=case)
            flat = _flat(epoch)
            assert_equal(len(set(flat)), len(flat), what=f"{what}: no sample twice in an epoch",
                         case=case)
            if not drop_last:
                assert_equal(sorted(flat), list(range(n)),
                             what=f"{what}: the epoch visits every sample once", case=case)
            else:
                assert_equal(set(flat) <= set(range(n)), True, what=f"{what}: valid indices")
        assert_equal(_flat(epochs[0]) != _flat(epochs[1]), True,
                     what=f"seed {seed}: epoch 2 reshuffles (a new permutation per epoch)",
                     case=case)
    assert_equal(got["by_seed_again"], got["by_seed"],
                 what="orders from a fresh generator with the same seed (must repeat)", case=case)
    firsts = [_flat(epochs[0]) for epochs in got["by_seed"]]
    assert_equal(len({tuple(f) for f in firsts}), len(seeds),
                 what=f"first-epoch orders for the different seeds {seeds} (must differ)",
                 case=case)
    assert_equal(got["global_again"], got["global"],
                 what="orders without a generator after the same tt.manual_seed (must repeat)",
                 case=case)
    assert_equal(got["global"][0] != got["global"][1], True,
                 what=f"orders without a generator after tt.manual_seed({seeds[0]}) and "
                      f"tt.manual_seed({seeds[1]}) (must differ)", case=case)


SUBSET = {"len": Kind(int), "indices": ListOf(Kind(int)), "items": ListOf(Kind(int))}


@st.composite
def _drawn_fractions(draw):
    """Fractions along the values axis: sixteenths (zeros and 1.0 included) that add up
    to 1 exactly, or k equal parts 1/k (summing to 1 within isclose, maybe just below:
    [0.1] * 10 is 0.9999999999999999), so floor(n * fraction) and the round-robin
    remainder (from the first split) vary."""
    if draw(st.booleans()):  # (1/9 * 9 adds up above 1: lengths for torch, an error)
        k = draw(st.sampled_from([k for k in range(1, 11) if sum([1 / k] * k) <= 1]))
        return [1 / k] * k
    cuts = sorted(draw(st.lists(st.integers(0, 16), min_size=0, max_size=4)))
    edges = [0, *cuts, 16]
    return [(b - a) / 16 for a, b in itertools.pairwise(edges)]


def _lengths():
    fractions = st.sampled_from([[0.8, 0.1, 0.1], [0.5, 0.5], [0.7, 0.2, 0.1], [0.25] * 4,
                                 [1.0], [0.6, 0.4], [0.1] * 10, [0.3, 0.3, 0.4]])
    return st.one_of(fractions, _drawn_fractions(),
                     st.lists(st.integers(0, 8), min_size=1, max_size=4))


@task("5.6")
@settings(max_examples=examples(25))
@given(data=st.data(), seeds=st.lists(st.integers(0, 2**31), min_size=2, max_size=2,
                                      unique=True))
def test_random_split(submission, data, seeds):
    """random_split: subset sizes as torch (fractions: floor, then the remainder round
    robin), disjoint subsets covering the dataset, subset[i] == dataset[indices[i]], the
    generator's seed fixing the split and other seeds giving another."""
    lengths = data.draw(_lengths())
    n = sum(lengths) if isinstance(lengths[0], int) else data.draw(st.integers(1, 60))
    got = submission.call("data.split", n, lengths, seeds)
    conform(got, {"first": [ListOf(SUBSET)] * len(seeds), "again": [ListOf(SUBSET)] * len(seeds)},
            what="data.split")
    sizes = oracle.split_sizes(n, lengths)
    case = (f"tt.data.random_split(tt.data.TensorDataset(10 * tt.arange({n})), {lengths}, "
            "generator=tt.Generator().manual_seed(seed))")
    for seed, subsets in zip(seeds, got["first"], strict=True):
        assert_equal([s["len"] for s in subsets], sizes, what=f"subset sizes (seed {seed})",
                      case=case)
        indices = [i for s in subsets for i in s["indices"]]
        assert_equal(sorted(indices), list(range(n)),
                     what=f"all subsets' indices together (seed {seed}): each sample exactly "
                          "once", case=case)
        for k, s in enumerate(subsets):
            assert_equal(s["items"], [10 * i for i in s["indices"]],
                         what=f"subset #{k}[i] == dataset[subset.indices[i]]", case=case)
    assert_equal(got["again"], got["first"], what="the split with the same seeds again",
                 case=case)
    if n >= 10 and max(sizes) < n:
        orders = [[i for s in subsets for i in s["indices"]] for subsets in got["first"]]
        assert_equal(orders[0] != orders[1], True,
                     what=f"splits with seeds {seeds} (must differ)", case=case)


@task("5.6")
@pytest.mark.parametrize("n", [10, 100, 1000, 7, 33, 2])
def test_train_val_test_80_10_10(submission, n):
    """The course's split: random_split(ds, [0.8, 0.1, 0.1]) sizes as torch's."""
    got = submission.call("data.split", n, [0.8, 0.1, 0.1],
                          [case_seed(0, "5.6 80-10-10", n) % 2**31])
    conform(got, {"first": [ListOf(SUBSET)]}, what="data.split")
    assert_equal([s["len"] for s in got["first"][0]], oracle.split_sizes(n, [0.8, 0.1, 0.1]),
                 what=f"[train, val, test] sizes for {n} samples",
                 case=f"tt.data.random_split(ds of {n} samples, [0.8, 0.1, 0.1])")


def _torch_split_error(n, lengths):
    try:
        torch.utils.data.random_split(range(n), lengths)
    except ValueError as exc:
        return str(exc)
    raise AssertionError(f"torch's random_split(range({n}), {lengths}) raised nothing")


@task("5.6")
def test_random_split_errors(submission):
    """Lengths that do not add up to the dataset size, fractions that add up to 1 but
    one of which is outside [0, 1], and fractions whose float sum is just above 1, are
    refused with torch's ValueError."""
    size, short, long = 10, [3, 3], [5, 6]
    if grading_seed():  # another size, lengths summing to less and to more than it
        rng = case_rng(0, "5.6 split errors")
        size = int(rng.integers(10, 40))
        a = int(rng.integers(1, size - 1))
        short = [a, int(rng.integers(0, size - a))]
        long = [a, size - a + int(rng.integers(1, 5))]
    # [0.05] * 20 adds up to 1.0000000000000002: close to 1 but above it, so torch takes
    # them as lengths (which then do not add up to n)
    for n, lengths in ((size, short), (size, long), (size, [0.5, 0.4]), (size, [1.5, -0.5]),
                       (size, [-0.5, 1.5]), (size, [0.5, 1.2, -0.7]), (size, [0.05] * 20)):
        got = submission.call("data.split_errors", n, lengths)
        conform(got, RAISED, what="data.split_errors")
        assert_raises_like(got, "ValueError",
                           what=f"random_split(ds of {n} samples, {lengths})",
                           contains=(_torch_split_error(n, lengths),))


RAGGED = ([[3], [2]], [[3], [3], [2, 1]], [[2, 3], [3, 2]], [[4], [4], [4], [1]])


@task("5.6")
@pytest.mark.parametrize("shapes", RAGGED, ids=lambda s: "-".join(map(str, s)))
def test_collate_refuses_unequal_tensors(submission, shapes):
    """A batch of tensors of different shapes is refused with torch.stack's RuntimeError,
    naming the first sample's shape and the first shape that differs."""
    grow = int(case_rng(0, "5.6 ragged", shapes).integers(1, 5)) if grading_seed() else 0
    shapes = [[d + grow for d in s] for s in shapes]  # the same mismatches, other sizes
    got = submission.call("data.collate_ragged", shapes)
    conform(got, RAISED, what="data.collate_ragged")
    batch = [torch.zeros(s) for s in shapes]
    try:
        torch.utils.data.default_collate(batch)
    except RuntimeError as exc:
        message = str(exc)
    else:
        raise AssertionError(f"torch's default_collate of shapes {shapes} raised nothing")
    # torch ends with "at entry i" for the second shape: its index is not required
    message = re.sub(r" at entry \d+$", "", message)
    assert_raises_like(got, "RuntimeError", what="next(iter(loader))", contains=(message,),
                       case=f"tt.data.DataLoader(a Dataset of tensors of shapes {shapes}, "
                            f"batch_size={len(shapes)})")
