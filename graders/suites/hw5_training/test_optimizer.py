"""Task 5.2: the Optimizer base class: zero_grad, state_dict and load_state_dict, graded
with a small optimizer of the probes' own (``Toy``: trace = decay * trace + grad,
p -= lr * trace) so that this task does not depend on SGD or Adam."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graders.checks import assert_close, assert_equal, assert_raises_like
from graders.checks.optim import assert_run_matches, steps_template
from graders.checks.structure import RAISED, Kind, ListOf, Shaped, conform
from graders.oracle import optim as oracle
from graders.strategies.optim import SHAPES
from graders.suites._seed import case_rng, grading_seed
from graders.suites._support import examples, task

TOY = ("Toy, defined in graders/probes/optim.py: state['step'] += 1; "
       "trace = decay * trace + grad; p -= lr * trace")


@st.composite
def _toy_run(draw, max_steps=4):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    groups, shapes = [], []
    for g in range(draw(st.integers(1, 3))):
        group_shapes = draw(st.lists(st.sampled_from(SHAPES), min_size=1, max_size=2))
        shapes.extend(group_shapes)
        group = {"params": [rng.standard_normal(s).astype(np.float32) for s in group_shapes]}
        if g and draw(st.booleans()):
            group["options"] = {"lr": draw(st.floats(0.01, 1.0))}
        groups.append(group)
    # some parameters never get a gradient, so they never get state
    never = {i for i in range(len(shapes)) if rng.random() < 0.25}

    def grads(n):
        return [[None if i in never or rng.random() < 0.2 else
                 rng.standard_normal(s).astype(np.float32) for i, s in enumerate(shapes)]
                for _ in range(n)]

    return groups, grads(draw(st.integers(1, max_steps))), grads(draw(st.integers(1, max_steps)))


@task("5.2")
def test_zero_grad(submission):
    """optimizer.zero_grad() sets every grad of every group to None; with
    set_to_none=False it zeroes the same gradient tensors in place, a write that bumps
    their _version as PyTorch's zero_() does."""
    shapes = [[3], [2, 2], [1]]
    if grading_seed():
        rng = case_rng(0, "5.2 zero_grad")
        shapes = [[int(d) for d in rng.integers(1, 5, rng.integers(1, 3))] for _ in range(3)]
    got = submission.call("optim.zero_grad", shapes)
    conform(got, {"set_to_none": [Kind(bool)] * 3, "zeros": [Kind(None, np.ndarray)] * 3,
                  "grad_versions": [Kind(int)] * 3,
                  "same_objects": [Kind(bool)] * 3,
                  "params_unchanged": [Shaped(tuple(s)) for s in shapes]},
            what="optim.zero_grad")
    assert_equal(got["set_to_none"], [True, True, True],
                 what="p.grad is None after opt.zero_grad(), for each parameter")
    for i, (z, shape) in enumerate(zip(got["zeros"], shapes, strict=True)):
        assert_close(z, np.zeros(shape, np.float32),
                     what=f"parameter #{i} grad after opt.zero_grad(set_to_none=False)")
    assert_equal(got["same_objects"], [True, True, True],
                 what="zero_grad(set_to_none=False) keeps each grad tensor (zeroes it in place)")
    assert_equal(got["grad_versions"], [1, 1, 1],
                 what="change of each grad's _version over zero_grad(set_to_none=False) "
                      "(PyTorch's zero_() is a write it counts)")
    for i, (p, shape) in enumerate(zip(got["params_unchanged"], shapes, strict=True)):
        assert_close(p, np.ones(shape, np.float32), what=f"parameter #{i} value (zero_grad "
                     "must not touch parameters)")


@task("5.2")
@settings(max_examples=examples(25))
@given(case=_toy_run(), extra=st.booleans())
def test_state_dict_matches_torch(submission, case, extra):
    """state_dict(): "state" keyed by each parameter's position (ints, counted across
    groups), only for parameters that have state; "param_groups" with each group's
    hyperparameters and "params" as positions; add_param_group extends the numbering."""
    groups, grads, _ = case
    extra_group = {"params": [np.zeros(2, np.float32)], "options": {"lr": 0.3}} if extra else None
    got = submission.call("optim.toy_state_dict", groups, grads, extra_group)
    expected = oracle.toy_state_dict(groups, grads, extra_group)
    conform(got, {"state_keys": ListOf(None), "state": Kind(dict),
                  "param_groups": ListOf(Kind(dict))}, what="optim.toy_state_dict")
    what = f"state_dict() of {TOY}, after {len(grads)} steps" + \
        (" and add_param_group({'params': [p], 'lr': 0.3})" if extra else "")
    assert_equal(sorted(got["state_keys"]), sorted(expected["state_keys"]),
                 what=f"{what}: [type, value] of the keys of sd['state']")
    for key, state in expected["state"].items():
        assert_equal(sorted(got["state"][key]), sorted(state),
                     what=f"{what}: keys of sd['state'][{key}]")
        for name, value in state.items():
            assert_close(np.asarray(got["state"][key][name]), value,
                         what=f"{what}: sd['state'][{key}][{name!r}]")
    assert_equal(got["param_groups"], expected["param_groups"],
                 what=f"{what}: sd['param_groups']")


@task("5.2")
@settings(max_examples=examples(25))
@given(case=_toy_run(), float64=st.booleans())
def test_load_state_dict_resumes_training(submission, case, float64):
    """load_state_dict() into a new optimizer over other parameters: hyperparameters and
    state come from the dict (state cast to the parameters' dtype, except "step"), the
    parameters stay the new optimizer's own, and training continues exactly as torch's."""
    groups, before, after = case
    if float64:
        after = [[None if g is None else g.astype(np.float64) for g in step] for step in after]
    got = submission.call("optim.toy_resume", groups, before, after, float64)
    expected = oracle.toy_resume(groups, before, after, float64)
    n = sum(len(g["params"]) for g in groups)
    conform(got, {"loaded": {"hyper": ListOf(None), "params_are_own": [Kind(bool)] * len(groups),
                             "state": [Kind(dict)] * n, "state_dtypes": [Kind(dict)] * n},
                  "steps": steps_template({"groups": groups, "grads": after})},
            what="optim.toy_resume")
    what = (f"{TOY}: after {len(before)} steps, state_dict() loaded into a new Toy(lr=0.7, "
            f"decay=0.9) over {'float64 ' if float64 else ''}copies of the parameters")
    loaded, exp_loaded = got["loaded"], expected["loaded"]
    assert_equal(loaded["hyper"], exp_loaded["hyper"],
                 what=f"{what}: [lr, decay] of each group after loading")
    assert_equal(loaded["params_are_own"], [True] * len(groups),
                 what=f"{what}: each group's 'params' are still the new optimizer's parameters")
    for i, (g, e) in enumerate(zip(loaded["state_dtypes"], exp_loaded["state_dtypes"],
                                   strict=True)):
        assert_equal(g, e, what=f"{what}: dtype of each loaded state entry of parameter #{i}")
    for i, (g, e) in enumerate(zip(loaded["state"], exp_loaded["state"], strict=True)):
        assert_equal(sorted(g), sorted(e), what=f"{what}: state keys of parameter #{i}")
        for name, value in e.items():
            assert_close(np.asarray(g[name]), value, what=f"{what}: parameter #{i} state[{name!r}]")
    run = {"kind": "Toy", "options": {"lr": 0.7, "decay": 0.9}, "groups": groups, "grads": after}
    assert_run_matches(got["steps"], expected["steps"], run)


@task("5.2")
def test_load_state_dict_errors(submission):
    """A state_dict with another number of groups, or groups of other sizes, is refused
    with PyTorch's ValueErrors."""
    saved, one, other = [1, 2], [3], [2, 1]
    if grading_seed():  # other sizes: the saved groups' differ, the other sizes swap them
        rng = case_rng(0, "5.2 load errors")
        a, b = (int(v) for v in rng.choice(np.arange(1, 6), 2, replace=False))
        saved, one, other = [a, b], [int(rng.integers(1, 6))], [b, a]
    got = submission.call("optim.load_state_dict_errors", [saved, one, other])
    conform(got, {"groups": RAISED, "sizes": RAISED}, what="optim.load_state_dict_errors")
    assert_raises_like(got["groups"], "ValueError",
                       what=f"loading a 2-group state_dict (sizes {saved}) into a 1-group "
                            f"optimizer (size {one[0]})",
                       contains=("loaded state dict has a different number of parameter groups",))
    assert_raises_like(got["sizes"], "ValueError",
                       what=f"loading groups of sizes {saved} into groups of sizes {other}",
                       contains=("doesn't match the size of optimizer's group",))


LEAVES_IT = {"count": 3, "scale": 0.5, "buf": [1.0, 1.0], "lr": 0.1, "new_lr": 9.0}


def _leaves_it_values() -> dict[str, Any]:
    """load_state_dict_leaves_it's numbers: LEAVES_IT at grading seed 0, else drawn."""
    if grading_seed() == 0:
        return LEAVES_IT
    rng = case_rng(0, "5.2 leaves it")
    return {"count": int(rng.integers(1, 50)), "scale": float(rng.integers(1, 64)) / 64,
            "buf": [float(v) for v in rng.integers(-8, 9, 2) / 4],
            "lr": float(rng.integers(1, 20)) / 40, "new_lr": float(rng.integers(2, 20))}


def _torch_load_state_dict_leaves_it(v):
    """graders/probes/optim.py: load_state_dict_leaves_it, with torch.optim.Optimizer."""

    def make():
        return torch.optim.Optimizer([torch.nn.Parameter(torch.zeros(2)) for _ in range(2)],
                                     {"lr": v["lr"]})

    def plain(opt):
        state = opt.state[opt.param_groups[0]["params"][0]]
        return {k: v.numpy().copy() if isinstance(v, torch.Tensor) else v
                for k, v in state.items()}

    first = make()
    state = first.state[first.param_groups[0]["params"][0]]
    state["count"], state["scale"] = v["count"], v["scale"]
    state["buf"] = torch.tensor(v["buf"], dtype=torch.float32)
    saved = first.state_dict()
    second = make()
    second.load_state_dict(saved)
    second.param_groups[0]["lr"] = v["new_lr"]
    third = make()
    third.load_state_dict(saved)
    return {"loaded": plain(second),
            "saved params": [type(i).__name__ for i in saved["param_groups"][0]["params"]],
            "saved lr": saved["param_groups"][0]["lr"], "loaded again": plain(third)}


@task("5.2")
def test_load_state_dict_leaves_the_dict(submission):
    """load_state_dict keeps state entries that are not tensors (Python numbers) and
    leaves the dict it loads as it was: its groups still list positions and keep their
    lr when the loaded optimizer's changes, and it loads again into another optimizer,
    as in PyTorch."""
    v = _leaves_it_values()
    got = submission.call("optim.load_state_dict_leaves_it", v)
    expected = _torch_load_state_dict_leaves_it(v)
    case = (f"opt = Optimizer([p0, p1], {{'lr': {v['lr']}}}); opt.state[p0] = {{'count': "
            f"{v['count']}, 'scale': {v['scale']}, 'buf': tensor({v['buf']})}}; "
            f"sd = opt.state_dict(); opt2.load_state_dict(sd); opt2.param_groups[0]['lr'] = "
            f"{v['new_lr']}; opt3.load_state_dict(sd) (opt2, opt3: Optimizers like opt; see "
            "graders/probes/optim.py: load_state_dict_leaves_it)")
    conform(got, {"loaded": Kind(dict), "saved params": ListOf(Kind(str)), "saved lr": Kind(float),
                  "load again": RAISED, "loaded again": Kind(None, dict)},
            what="optim.load_state_dict_leaves_it")
    for key in ("loaded", "loaded again"):
        if key == "loaded again":
            assert_raises_like(got["load again"], None, what="opt3.load_state_dict(sd)",
                               case=case)
        assert_equal(sorted(got[key]), sorted(expected[key]), what=f"{key}: state keys of p0",
                     case=case)
        for name in ("count", "scale"):
            assert_equal(got[key][name], expected[key][name],
                         what=f"{key}: state[{name!r}] of p0", case=case)
        assert_close(got[key]["buf"], expected[key]["buf"], what=f"{key}: state['buf'] of p0",
                     case=case)
    assert_equal(got["saved params"], expected["saved params"],
                 what="the types in sd['param_groups'][0]['params'] after loading it "
                      "(positions, not the parameters)", case=case)
    assert_equal(got["saved lr"], expected["saved lr"],
                 what="sd['param_groups'][0]['lr'] after opt2's lr was set", case=case)
