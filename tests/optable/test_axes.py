"""The axes every op table entry is checked along (issue 19): layouts drawn for every tensor
argument and rebuilt by the probe, special values, low-precision and mixed dtypes, and
failure messages that name the axis. Mutants that only one axis can catch are caught, and
the message says which axis."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graders.optable import OPS
from graders.optable.spec import AXES, axes_note
from graders.probes.ops import layout
from graders.strategies.ops import LAYOUTS, LOW_PRECISION, SPECIALS, Draw, Sample, T, layouts_for

from ..conftest import grade_forked, task_scores
from ..mutants import all_mutants

FAST = settings(max_examples=40, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("name", LAYOUTS)
def test_the_probe_rebuilds_each_layout(name):
    """The wire sends contiguous values; the probe's view has the layout's strides."""
    a = np.arange(12.0).reshape(3, 4)
    view = layout(a, name)
    np.testing.assert_array_equal(view, a)
    expected = {"contiguous": lambda v: v.flags.c_contiguous,
                "transposed": lambda v: v.flags.f_contiguous and not v.flags.c_contiguous,
                "sliced": lambda v: v.strides[-1] == 2 * v.itemsize,
                "offset": lambda v: v.base is not None and v.base.size > v.size
                and not v.flags.c_contiguous,
                "flipped": lambda v: all(s < 0 for s in v.strides)}[name]
    assert expected(view), (name, view.strides)


def test_incoming_gradient_layouts_are_enumerated_per_op(monkeypatch):
    """The backward check gives each op's backward every layout its outputs can take, by
    construction: the test's own samples go through the round, and when one admits none
    of the layouts left (a 0-d loss), another sample of the op that does is checked
    too. A sample seen again (a replayed failure) gets the same checks."""
    from types import SimpleNamespace

    from graders.suites import _opchecks

    monkeypatch.setattr(_opchecks, "_grad_layout_state", {})
    monkeypatch.setattr(_opchecks, "_admitted",
                        lambda op, sample: layouts_for(sample.args[0].value.shape))
    op = SimpleNamespace(name="loss")
    wide = iter([Sample((T(np.full((2, 3), float(k))),)) for k in range(100)])
    given_layouts = []
    for k in range(6):  # the test's own samples: distinct 0-d outputs
        sample = Sample((T(np.asarray(float(k))),))
        checks = _opchecks._grad_layouts(op, sample, ["contiguous"], lambda: next(wide))
        again = _opchecks._grad_layouts(op, sample, ["contiguous"], lambda: next(wide))
        assert checks[0] == (sample, "contiguous")
        assert [name for _, name in again] == [name for _, name in checks]
        given_layouts += [name for _, name in checks]
    assert set(given_layouts) == set(LAYOUTS), given_layouts


def test_layouts_are_drawn_for_every_tensor_argument():
    """Across draws, the second tensor of a binary op and the tensors of cat take every
    layout (not only the first argument)."""
    seen: dict[tuple[str, int], set[str]] = {}
    ops = [op for op in OPS if op.name in ("add", "cat", "where", "linear")]

    # derandomized and more draws: add's second operand is also drawn as a Python scalar
    # (the options axis), so 40 random draws did not always give it every layout
    @settings(FAST, max_examples=200, derandomize=True)
    @given(data=st.data())
    def draw(data):
        d = Draw(data)
        for op in ops:
            for i, t in enumerate(op.sample(d, d.pick(op.dtypes)).tensors()):
                seen.setdefault((op.name, i), set()).add(t.layout)

    draw()
    assert seen[("add", 1)] >= {"contiguous", "sliced", "offset", "flipped"}, seen[("add", 1)]
    assert seen[("linear", 1)] >= set(LAYOUTS)


def test_exemptions_name_known_axes_with_reasons():
    for op in OPS:
        assert set(op.exempt) <= set(AXES), op.name
        assert all(len(reason) > 20 for reason in op.exempt.values()), op.name
        assert {d.name for d in op.dtypes} >= {"float32", "float64"}, op.name


def test_special_values_reach_the_inputs():
    kinds = set()

    @FAST
    @given(data=st.data())
    def draw(data):
        d = Draw(data)
        sample = Sample((T(d.uniform((3, 4), np.float32)), T(d.uniform((4,), np.float64))))
        kind = d.special_values(sample)
        values = np.concatenate([t.value.ravel() for t in sample.tensors()])
        if kind == "nan":
            assert np.isnan(values).any()
        if kind == "mixed":
            assert (~np.isfinite(values) | (np.signbit(values) & (values == 0))).any()
        if kind == "inf":
            assert np.isinf(values).any()
        if kind == "neg_zero":
            assert (np.signbit(values) & (values == 0)).any()
        if kind == "neg_inf_slice":
            assert np.isneginf(values).any()
        assert [t.value.dtype for t in sample.tensors()] == [np.float32, np.float64]
        kinds.add(kind)

    draw()
    assert kinds == set(SPECIALS)


def test_axes_note_names_each_axis():
    a = T(np.zeros((2, 3), LOW_PRECISION[0]), layout="contiguous")
    b = T(np.zeros((2, 3), LOW_PRECISION[0]), layout="sliced")
    note = axes_note(Sample((a, b)), "nan", grad_layout="transposed")
    assert note == (" with a strided second operand, with float16 inputs, with NaN inputs, "
                    "with a transposed gradient")
    assert axes_note(Sample((T(np.zeros(3, np.float32)),))) == ""
    assert "mixed float32 and float64" in axes_note(
        Sample((T(np.zeros(3, np.float32)), T(np.zeros(3, np.float64)))))
    assert layouts_for(()) == ["contiguous"]


AXIS_MUTANTS = {
    "maximum-by-comparison-drops-nan": "with NaN",
    "mul-reads-second-operand-in-memory-order": ("transposed", "negative-stride"),
    "view-backward-sets-shape-in-place": "gradient",
}


@pytest.mark.parametrize("mutant_id", list(AXIS_MUTANTS))
def test_a_mutant_only_an_axis_catches_is_caught_and_named(mutant_id, tmp_path):
    mutant = next(m for m in all_mutants() if m.id == mutant_id)
    mutant.apply(tmp_path / "submission")
    score = grade_forked(tmp_path / "submission", tmp_path / "out", "--tasks", mutant.task,
                         "--no-shrink")
    got, full = task_scores(score)[mutant.task]
    assert got < full, f"{mutant.id} was not caught"
    messages = [t["message"] for task in score["tasks"] for t in task["tests"]
                if t["status"] != "passed"]
    names = AXIS_MUTANTS[mutant_id]
    names = (names,) if isinstance(names, str) else names
    assert any(name in m for m in messages for name in names), messages


def _rename_saved_store(root, name="_kept_for_backward"):
    """The reference with ``save_for_backward``'s store under another private name (the
    node and Function.apply are the submission's own files: nothing fixes the name)."""
    for rel in ("autograd/node.py", "autograd/function.py", "amp/opmath.py"):
        path = root / "tinytrain" / rel
        path.write_text(path.read_text().replace("_to_save", name))


def test_ownership_of_saved_arrays_does_not_rely_on_the_private_name(tmp_path):
    """The probe finds what forward saved without ``ctx._to_save`` (the public
    ``saved_tensors``, the ctx's own attributes, and a second backward that must agree
    with the first): a backward that writes into an array it saved is caught whatever the
    store is called, and the renamed reference itself keeps full marks."""
    wrong = next(m for m in all_mutants() if m.id == "mse-loss-backward-scales-saved-diff")
    wrong.apply(tmp_path / "wrong")
    _rename_saved_store(tmp_path / "wrong")
    score = grade_forked(tmp_path / "wrong", tmp_path / "out-wrong", "--tasks", "2.7",
                         "--no-shrink")
    got, full = task_scores(score)["2.7"]
    assert got < full, "a backward writing into its saved array passed under a renamed store"
    messages = [t["message"] for task in score["tasks"] for t in task["tests"]
                if t["status"] != "passed"]
    assert any("ownership" in m for m in messages), messages
    correct = next(m for m in all_mutants() if m.id == "mse-loss-backward-scales-saved-diff")
    correct = type(correct)(id="renamed", task="2.7", file=correct.file, find=correct.find,
                            replace=correct.find, why="")
    correct.apply(tmp_path / "right")
    _rename_saved_store(tmp_path / "right")
    score = grade_forked(tmp_path / "right", tmp_path / "out-right", "--tasks", "2.1,2.7",
                         "--no-shrink")
    assert all(got == full for got, full in task_scores(score).values()), task_scores(score)
