"""Task 3.1: in-place ops, version counters, the saved-tensor version check, history rebase.

The random programs mix out-of-place ops and views (probe Functions that save what
torch's ops save) with the submission's in-place ops at random points, some under
no_grad; the same program runs in torch.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from graders.checks import assert_close, assert_equal, assert_raises_like
from graders.checks.compare import literal
from graders.checks.structure import RAISED, Kind, ListOf, conform
from graders.oracle import inplace as oracle
from graders.probes.inplace import CONST_BASE_CASES, VIEW_CASES
from graders.strategies.inplace import fold_weights, inplace_programs, reproducer
from graders.strategies.programs import functions_source
from graders.suites._seed import seeded_values
from graders.suites._support import examples, task

VERSION_HINT = "is at version"


def _run(submission, program):
    weights = fold_weights(program)
    got, expected = submission.call("inplace.run_program", program, weights), \
        oracle.run(program, weights)
    conform(got, {"raised_at": Kind(None, int), "step_error": Kind(None, dict)},
            what="inplace.run_program")
    return got, expected


def _conform_run(got, expected):
    """A run without a step error: every value's flags, then backward's outcome and, when
    it raised nothing, a gradient (or None) per leaf."""
    template = {"versions": [Kind(int)] * len(expected["versions"]),
                "requires_grad": [Kind(bool)] * len(expected["versions"]),
                "is_leaf": [Kind(bool)] * len(expected["versions"]),
                "backward_error": RAISED}
    conform(got, template, what="inplace.run_program")
    if got["backward_error"]["type"] is None:
        conform(got, {"grads": [Kind(None, np.ndarray)] * len(expected["grads"] or [])
                      if expected["grads"] is not None else None},
                what="inplace.run_program")


def _check_step_errors(got, expected, program):
    case = "the program below, in torch and in tinytrain"
    code = reproducer(program)
    if got["raised_at"] is not None:
        conform(got, {"step_error": RAISED}, what="inplace.run_program")
    if expected["raised_at"] is None:
        if got["raised_at"] is not None:
            step = got["raised_at"]
            raise AssertionError(
                f"step {step} raised {got['step_error']['type']}: {got['step_error']['message']}"
                f"\n  PyTorch runs every step of this program without an error\n  case: {case}"
                f"\n  reproduce:\n" + _indent(code))
        _conform_run(got, expected)
        return False
    step, message = expected["raised_at"], expected["step_error"]["message"]
    assert_equal(got["raised_at"], step, what=f"the step that raises (PyTorch: step {step}, "
                 f"'{message[:90]}')", case=case, reproducer=code)
    assert_raises_like(got["step_error"], "RuntimeError", what=f"step {step}",
                       contains=(message.split(".")[0],), case=case, reproducer=code)
    return True


def _indent(code):
    return "\n".join("    " + line for line in code.splitlines())


@task("3.1")
@settings(max_examples=examples(40))
@given(program=inplace_programs())
def test_versions_follow_torch(submission, program):
    """After random in-place writes (through views too), every tensor's _version,
    requires_grad and is_leaf are torch's; in-place steps raise where torch's raise."""
    got, expected = _run(submission, program)
    if _check_step_errors(got, expected, program):
        return
    code = reproducer(program)
    for key in ("versions", "requires_grad", "is_leaf"):
        for i, (g, e) in enumerate(zip(got[key], expected[key], strict=True)):
            name = "_version" if key == "versions" else key
            assert_equal(g, e, what=f"value {i}: {name} (values numbered leaves first)",
                         case="before backward", reproducer=code)


def _check_backward(got, expected, program):
    code = reproducer(program)
    expected_error = expected["backward_error"]
    if expected_error["type"] is None:
        assert_raises_like(got["backward_error"], None, what="loss.backward()", reproducer=code)
        for i, (g, e) in enumerate(zip(got["grads"], expected["grads"], strict=True)):
            assert_close(g, e, what=f"x{i}.grad", reproducer=code)
        return
    assert_raises_like(got["backward_error"], "RuntimeError", what="loss.backward()",
                       contains=("modified by an inplace operation", VERSION_HINT),
                       reproducer=code)
    stale = oracle.stale_saved_versions(program)
    versions = oracle.versions_in(got["backward_error"]["message"])
    allowed = ", ".join(f"'is at version {a}; expected version {b}'" for a, b in sorted(stale))
    assert versions in stale, (
        f"loss.backward(): the error names the versions {versions}, but the tensors saved "
        f"for backward and modified since have (current, saved) versions {sorted(stale)}; "
        f"the message should say one of {allowed}\n  got: {got['backward_error']['message']}"
        f"\n  reproduce:\n" + _indent(code))


@task("3.1")
@settings(max_examples=examples(40))
@given(program=inplace_programs(views=False))
def test_backward_after_inplace_writes(submission, program):
    """In-place writes on whole tensors: backward raises exactly when torch does (a saved
    tensor was modified; the message names its versions) and otherwise gives torch's
    gradients through the rebased histories."""
    got, expected = _run(submission, program)
    if not _check_step_errors(got, expected, program):
        _check_backward(got, expected, program)


@task("3.1")
@settings(max_examples=examples(60))
@given(program=inplace_programs())
def test_backward_after_writes_through_views(submission, program):
    """The same with views (narrow, select, t) and setitem: a write through a view
    changes its base (and every other view of it), as in torch."""
    got, expected = _run(submission, program)
    if not _check_step_errors(got, expected, program):
        _check_backward(got, expected, program)


@task("3.1")
def test_version_counter_values(submission):
    """_version counts in-place writes; views share their base's counter; a detached
    tensor shares it too; setitem is one write."""
    start = seeded_values(np.arange(6.0).reshape(2, 3), "3.1 versions", low=-8.0, high=8.0)
    got = submission.call("inplace.version_counters", start)
    x = torch.tensor(np.asarray(start, np.float32))
    expected = {"start": x._version}
    x.add_(1.0)
    expected["after_add_"] = x._version
    x.mul_(2.0).zero_()
    expected["after_chained"] = x._version
    row, col = x.select(0, 1), x.t().narrow(0, 0, 2)
    expected["view_starts_at_base"] = [row._version, col._version]
    row.fill_(3.0)
    expected["after_view_write"] = [x._version, row._version, col._version]
    x[0, 1:] = 7.0
    expected["after_setitem"] = [x._version, row._version, col._version]
    d = x.detach()
    d += 1.0
    expected["after_detached_write"] = [x._version, d._version]
    y, y2 = torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0])
    y.copy_(y2)
    expected["other_untouched"] = y2._version
    conform(got, {**expected, "values": x.numpy()}, what="inplace.version_counters")
    for key, value in expected.items():
        assert_equal(got[key], value, what=key.replace("_", " ") + " (_version)",
                     reproducer=VERSIONS_CODE)
    assert_close(got["values"], x.numpy(), what="x after the writes", reproducer=VERSIONS_CODE)


VERSIONS_CODE = f"""import numpy as np
import tinytrain as tt

{functions_source(["select", "narrow", "transpose"])}


x = tt.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))
print("start:", x._version)
x.add_(1.0)
print("after add_:", x._version)
x.mul_(2.0).zero_()
print("after chained:", x._version)
row = Select.apply(x, 1)  # x[1]
col = Narrow.apply(Transpose.apply(x), 0, 2)  # x.t()[0:2]
print("view starts at base:", [row._version, col._version])
row.fill_(3.0)
print("after view write:", [x._version, row._version, col._version])
x[0, 1:] = 7.0
print("after setitem:", [x._version, row._version, col._version])
d = x.detach()
d += 1.0
print("after detached write:", [x._version, d._version])
y, y2 = tt.tensor([1.0, 2.0]), tt.tensor([1.0, 2.0])
y.copy_(y2)
print("other untouched:", y2._version)
print("x after the writes:", x)"""


@task("3.1")
def test_inplace_ops_return_the_same_tensor(submission):
    """add_, mul_, ..., and +=, -=, *=, /= return the tensor they modified (the same
    object) and bump its version once per write."""
    values = seeded_values([1.0, -2.0, 3.0], "3.1 returns self")
    others = seeded_values([2.0, 2.0, 2.0], "3.1 returns self other", low=0.5, high=3.0)
    got = submission.call("inplace.returns_self", values, others)
    names = ["add_", "sub_", "mul_", "div_", "clamp_", "relu_", "fill_", "copy_", "zero_",
             "operators"]
    conform(got, {"same": dict.fromkeys(names, True), "values": np.zeros(3),
                  "version": Kind(int)}, what="inplace.returns_self")
    for name in names:
        assert_equal(got["same"][name], True, what=f"{name} returns the tensor it modified")
    x = torch.tensor(values, dtype=torch.float32)
    other = torch.tensor(others, dtype=torch.float32)
    x.add_(other).sub_(1.0).mul_(other).div_(2.0).clamp_(-1.0, 1.0).relu_()
    x.fill_(0.5).copy_(other).zero_()
    x += other
    x -= 1.0
    x *= other
    x /= 4.0
    assert_close(got["values"], x.numpy(), what="values after the chain of writes")
    assert_equal(got["version"], x._version, what="_version after 13 writes")


@task("3.1")
@settings(max_examples=examples(10))
@given(data=st.data())
def test_inplace_forward_values(submission, data):
    """Each in-place op computes what torch's does (broadcast other, scalar operands)."""
    x = data.draw(arrays(np.float64, (2, 3), elements=st.floats(-2, 2)))
    other = data.draw(arrays(np.float64, data.draw(st.sampled_from([(3,), (2, 3), (1, 3)])),
                             elements=st.floats(0.25, 2)))
    k = data.draw(st.sampled_from([-1.5, 0.5, 2.0]))
    got = submission.call("inplace.inplace_values", x, other, k)
    conform(got, dict.fromkeys(["add_", "sub_", "mul_", "div_", "mul_scalar", "clamp_",
                                "clamp_min", "relu_", "fill_", "copy_", "zero_"], x),
            what="inplace.inplace_values")
    o = torch.tensor(other)
    calls = {
        "add_": lambda t: t.add_(o, alpha=k), "sub_": lambda t: t.sub_(o),
        "mul_": lambda t: t.mul_(o), "div_": lambda t: t.div_(o),
        "mul_scalar": lambda t: t.mul_(k), "clamp_": lambda t: t.clamp_(-abs(k), abs(k)),
        "clamp_min": lambda t: t.clamp_(min=k), "relu_": lambda t: t.relu_(),
        "fill_": lambda t: t.fill_(k), "copy_": lambda t: t.copy_(o), "zero_": lambda t: t.zero_(),
    }
    for name, call in calls.items():
        t = torch.tensor(x)
        call(t)
        assert_close(got[name], t.numpy(), what=f"x.{name}(...)",
                     case=f"x = {literal(x)}, other = {literal(other)}, k = {k}")


@task("3.1")
def test_inplace_errors_match_torch(submission):
    """PyTorch refuses in-place writes into a leaf that requires grad or a view of one
    (with grad mode on), into a view made under no_grad (or a view of one) when the write
    would be recorded or its base requires grad, and into an inference tensor outside
    inference_mode."""
    got = submission.call("inplace.inplace_errors", seeded_values([1.0, 2.0, 3.0], "3.1 errors"))
    leaf = "a leaf Variable that requires grad is being used in an in-place operation."
    view = "a view of a leaf Variable that requires grad is being used in an in-place operation."
    no_grad_view = "A view was created in no_grad mode and is being modified inplace"
    no_grad_view_any = "created in no_grad mode and is being modified inplace with grad mode enabled"
    inference = "Inplace update to inference tensor outside InferenceMode is not allowed"
    cases = [
        ("leaf", leaf, "x.add_(1.) for a leaf x that requires grad"),
        ("leaf_operator", leaf, "x *= 2. for a leaf x that requires grad"),
        ("view_of_leaf", view, "x[0:2].mul_(2.) for a leaf x that requires grad"),
        ("setitem_leaf", view, "x[0] = 5. for a leaf x that requires grad"),
        ("leaf_no_grad", None, "x.add_(1.) under no_grad"),
        ("view_of_leaf_no_grad", None, "x[0:2].mul_(2.) under no_grad"),
        ("no_grad_view_const", None, "v.mul_(2.) for v = c[0:2] made under no_grad"),
        ("no_grad_view_recorded", no_grad_view,
         "v.mul_(x[0:2]) for v = c[0:2] made under no_grad, x requiring grad"),
        ("inference_inside", None, "t.add_(1.) inside inference_mode"),
        ("inference_outside", inference, "t.add_(1.) for an inference tensor t"),
        ("inference_outside_no_grad", inference, "t.mul_(2.) under no_grad, t an inference tensor"),
        ("no_grad_view_of_nonleaf", no_grad_view_any,
         "v.mul_(2.) for v = y[0:2] made under no_grad, y = x * 2. requiring grad"),
        ("no_grad_view_of_leaf", no_grad_view_any,
         "v.mul_(2.) for v = x[1:3] made under no_grad, x a leaf requiring grad (the no_grad "
         "view's error comes first)"),
        ("view_of_no_grad_view", no_grad_view_any,
         "v[0:1].mul_(2.) for v = y[1:3] made under no_grad (a view of it inherits the rule)"),
        ("int_target", "result type Float can't be cast to the desired output type Long",
         "tt.tensor([1, 2, 3]).add_(0.5)"),
        ("broadcast_target", "doesn't match the broadcast shape",
         "tt.ones(3).add_(tt.ones(2, 3))"),
    ]
    conform(got, {**{key: RAISED for key, _, _ in cases}, "leaf_version": Kind(int),
                  "no_grad_view_versions": [Kind(int), Kind(int)]},
            what="inplace.inplace_errors")
    for key, message, what in cases:
        assert_raises_like(got[key], None if message is None else "RuntimeError", what=what,
                           contains=() if message is None else (message,))
    assert_equal(got["leaf_version"], 2, what="_version of the leaf after its two writes "
                 "under no_grad (the refused writes do not count)")
    assert_equal(got["no_grad_view_versions"], [0, 2],
                 what="[y._version, x._version] after the refused writes through no_grad views")


SAVED_CASES = {
    "input_saved": ("z = y.sin(); y.mul_(3.)", lambda y: (y.sin(), y.mul_(3.0))[0]),
    "output_saved": ("z = y.exp(); z.add_(1.)", lambda y: y.exp().add_(1.0)),
    "input_of_exp": ("z = y.exp(); y.add_(1.)", lambda y: (y.exp(), y.add_(1.0))[0]),
    "relu_result": ("z = (y * 1.).relu_()", lambda y: (y * 1.0).relu_()),
    "twice": ("z = y.sin(); y.add_(1.).add_(1.)", lambda y: (y.sin(), y.add_(1.0).add_(1.0))[0]),
    "view_modified": ("z = y.sin(); y[1:3].zero_()", lambda y: (y.sin(), y[1:3].zero_())[0]),
    "base_modified": ("v = y[0]; z = v.sin(); y.mul_(2.)",
                      lambda y: (y[0].sin(), y.mul_(2.0))[0]),
}


def _leaf_values(*key):
    """The leaf x of the hand-written cases: [0.5, -1, 2] at grading seed 0, else three
    values drawn from the seed."""
    return seeded_values([0.5, -1.0, 2.0], "3.1 leaf", *key)


def _torch_saved_case(case, values):
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    if case == "leaf_no_grad":
        z = x.sin()
        with torch.no_grad():
            x.add_(1.0)
    elif case == "retain_then_modify":
        y = x * 2.0
        z = y.sin()
        z.sum().backward(retain_graph=True)
        y.add_(1.0)
    elif case == "no_grad_view_modified":
        y = x * 2.0
        z = y.sin()
        with torch.no_grad():
            y[0:2].mul_(2.0)
    else:
        z = SAVED_CASES[case][1](x * 2.0)
    try:
        z.sum().backward()
    except RuntimeError as exc:
        return {"type": "RuntimeError", "message": str(exc)}, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {"type": None, "message": ""}, x.grad.numpy()


@task("3.1")
def test_saved_tensor_version_check(submission):
    """Backward raises PyTorch's error, naming the versions and the saved tensor (type,
    shape, the output of which node), exactly when a tensor saved for backward was written
    after it was saved (through itself, a view or its base)."""
    for case in [*SAVED_CASES, "leaf_no_grad", "retain_then_modify", "no_grad_view_modified"]:
        values = _leaf_values("saved", case)
        got = submission.call("inplace.saved_and_modified", case, x=values)
        error, grad = _torch_saved_case(case, values)
        conform(got, {"error": RAISED, "grad": Kind(None, np.ndarray)},
                what=f"inplace.saved_and_modified({case!r})")
        code = SAVED_CASES[case][0] if case in SAVED_CASES else case.replace("_", " ")
        what = (f"backward after: x = tt.tensor({values}, requires_grad=True); y = x * 2.; "
                f"{code}")
        if error["type"] is None:
            assert_raises_like(got["error"], None, what=what)
            assert_close(got["grad"], grad, what=f"x.grad ({code})")
            continue
        a, b = oracle.versions_in(error["message"])
        assert_raises_like(got["error"], "RuntimeError", what=what, contains=(
            "one of the variables needed for gradient computation has been modified by an "
            "inplace operation", f"is at version {a}; expected version {b} instead",
            _described_as(error["message"], case)))


# The cases where the saved tensor is the output of one of the grader's Functions that
# torch names alike (exp: Exp); elsewhere it is the output of the submission's in-place op
# (torch: Mul, Add ...) or of the grader's scale (torch: Mul), whose names differ.
NODE_NAMED = {"output_saved"}


def _described_as(message, case):
    """How the version error names the saved tensor, from torch's message in tinytrain's
    words: [type shape], and for a non-leaf which output it is (of which node, in the
    NODE_NAMED cases)."""
    found = re.search(r"inplace operation: (.*?) is at version", message)
    assert found, f"torch's version error has an unexpected form: {message}"
    described = found.group(1).replace("[torch.", "[tinytrain.")
    if case in NODE_NAMED or ", which is output" not in described:
        return described + " is at version"
    return re.sub(r"(, which is output \d+ of ).*,$", r"\1", described)


def _torch_view_case(case, values):
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    before = others = None
    if case == "base_write_seen_by_view":
        y = x * 2.0
        out = y[0:2]
        y.mul_(3.0)
    elif case == "const_base_gets_history":
        c = torch.zeros(3, dtype=torch.float64)
        out = c[1:3]
        before = [out.requires_grad, out.is_leaf]
        c.add_(x)
    elif case == "sibling_view_write":
        y = x * 1.0
        out = y[0:2]
        y[1:3].mul_(10.0)
    elif case == "view_of_view_write":
        y = x * 1.0
        y[1:3][1].mul_(4.0)
        out = y
    elif case == "write_view_then_base":
        y = x * 1.0
        out = y[0:2]
        out.mul_(x[1:3])
        y.add_(1.0)
    elif case in CONST_BASE_CASES:
        c = (torch.ones if case == "mul_into_const_base" else torch.zeros)(3, dtype=torch.float64)
        sibling = c[0:2]
        before = [c.requires_grad, sibling.requires_grad]
        view = None
        if case == "copy_into_const_base":
            view = c[1:3]
            view.copy_(x[0:2] * 2.0)
        elif case == "mul_into_const_base":
            view = c[0:2]
            view.mul_(x[1:3])
        elif case == "const_view_sees_write":
            view = c[1:3]
            view.copy_(x[0:2])
        else:
            c[1] = x[0] * 3.0
        out = sibling if case == "const_view_sees_write" else c
        others = [[t.requires_grad, t.is_leaf, t.grad_fn is not None]
                  for t in (c, sibling, c if view is None else view)]
    else:  # no_grad_write_through_no_grad_view
        y = x * 2.0
        with torch.no_grad():
            y[0:2].mul_(2.0)
        out = y
    flags = [out.requires_grad, out.is_leaf]
    weights = torch.arange(1.0, 1.0 + out.numel(), dtype=torch.float64).reshape(out.shape)
    (out * weights).sum().backward()
    return {"flags": flags, "grad": x.grad.numpy(), "out": out.detach().numpy(), "before": before,
            "others": others, "version": out._version}


@task("3.1")
def test_writes_reach_every_view(submission):
    """A write into a base, or through one of its views, changes the history of every view
    of that base (torch regenerates their grad_fn): views see the write in backward. A
    write through a view into a base that does not require grad, with a value that does,
    gives the base a history (requires_grad, not a leaf) and the gradient reaches the
    value; a write under no_grad through a view made under no_grad is not recorded."""
    for case, code in VIEW_CASES.items():
        values = _leaf_values("view", case)
        got = submission.call("inplace.view_case", case, x=values)
        expected = _torch_view_case(case, values)
        template = {"flags": [Kind(bool), Kind(bool)], "grad": Kind(None, np.ndarray),
                    "out": expected["out"], "version": Kind(int), "backward_error": RAISED}
        template.update((k, expected[k]) for k in ("before", "others") if expected[k] is not None)
        conform(got, template, what=f"inplace.view_case({case!r})")
        what = f"x = tt.tensor({values}, requires_grad=True); {code}"
        if expected["before"] is not None:
            first = "[out.requires_grad, out.is_leaf] before c.add_(x)" \
                if case == "const_base_gets_history" else \
                "[c.requires_grad, c[0:2].requires_grad] before the write"
            assert_equal(got["before"], expected["before"], what=first, case=what)
        if expected["others"] is not None:
            for name, g, e in zip(("c", "c[0:2] (made before the write)", "the view written"),
                                  got["others"], expected["others"], strict=True):
                assert_equal(g, e, what=f"[requires_grad, is_leaf, has a grad_fn] of {name} "
                             "after the write (the base now has history: its grad_fn "
                             "is the write's CopySlices, and its views' grad_fns "
                             "read from it)", case=what)
        assert_equal(got["flags"], expected["flags"], what="[out.requires_grad, out.is_leaf]",
                     case=what)
        assert_equal(got["version"], expected["version"], what="out._version", case=what)
        assert_raises_like(got["backward_error"], None, what="(out * [1, 2, ...]).sum()"
                           ".backward()", case=what)
        assert_close(got["out"], expected["out"], what="out", case=what)
        assert_close(got["grad"], expected["grad"],
                     what="x.grad of (out * [1, 2, ...]).sum()", case=what)


@task("3.1")
def test_retain_grad_and_hooks_across_a_write(submission):
    """After y.mul_(3.), y.retain_grad() still holds (y.grad is the gradient of the new
    value) while a hook registered before the write sees the gradient of the old one."""
    values = seeded_values([1.0, 2.0, 3.0], "3.1 retain and hooks")
    weights = seeded_values([1.0, 10.0, 100.0], "3.1 retain and hooks weights", high=100.0)
    got = submission.call("inplace.retain_and_hooks", x=values, weights=weights)
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    y = x * 2.0
    y.retain_grad()
    seen = []
    y.register_hook(lambda g: seen.append(g.numpy().copy()))
    y.mul_(3.0)
    (y * torch.tensor(weights, dtype=torch.float64)).sum().backward()
    case = (f"x = tt.tensor({values}, requires_grad=True); y = x * 2.; y.retain_grad(); "
            f"y.register_hook(h); y.mul_(3.); (y * tt.tensor({weights})).sum().backward()")
    conform(got, {"retains": Kind(bool), "grad": Kind(None, np.ndarray),
                  "hook": ListOf(Kind(np.ndarray)), "x": x.grad.numpy()},
            what="inplace.retain_and_hooks")
    assert_equal(got["retains"], True, what="y.retains_grad after the write", case=case)
    assert_close(got["grad"], y.grad.numpy(), what="y.grad", case=case)
    assert_equal(len(got["hook"]), 1, what="calls of the hook", case=case)
    assert_close(got["hook"][0], seen[0], what="gradient the hook saw", case=case)
    assert_close(got["x"], x.grad.numpy(), what="x.grad", case=case)


def _torch_copy_slices(x, w, view, op, k, layout):
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    base = xt * 1.0
    target = (base.narrow(0, 0, 1) if view == "narrow" else base.select(0, 1)
              if view == "select" else base.t().select(0, 1))
    other = None
    if op == "mul":
        target.mul_(k)
    else:
        other = torch.full(target.shape, k, dtype=torch.float64, requires_grad=True)
        target.add_(other)
    base.retain_grad()
    kept = []
    base.register_hook(lambda g: kept.append(g))
    wt = torch.tensor(w, dtype=torch.float64)
    loss = (base.t() * wt.t()).sum() if layout == "t" else (base * wt).sum()
    loss.backward()
    return {"x_grad": xt.grad.numpy(), "other_grad": None if other is None else other.grad.numpy(),
            "base_grad": base.grad.numpy(), "kept": [g.numpy() for g in kept]}


_VIEW_TEXT = {"narrow": "base.narrow(0, 0, 1)", "select": "base[1]", "column": "base.t()[1]"}


@task("3.1")
@settings(max_examples=examples(10))
@given(x=arrays(np.float64, (2, 3), elements=st.floats(-1.5, 1.5)),
       w=arrays(np.float64, (2, 3), elements=st.sampled_from([-2.0, -0.75, 0.5, 1.25, 3.0])),
       view=st.sampled_from(["narrow", "select", "column"]), op=st.sampled_from(["mul", "add"]),
       k=st.sampled_from([-2.0, 0.5, 3.0]))
@example(x=np.array([[0.5, -1.0, 1.5], [0.25, 1.0, -0.75]]),
         w=np.array([[1.0, -2.0, 0.5], [1.5, 2.0, -1.0]]), view="column", op="mul", k=-2.0)
def test_gradient_through_a_written_view_by_layout_and_ownership(submission, x, w, view, op,
                                                                  k):
    """The gradient reaching a base written through a view may arrive transposed (not
    C-ordered): the base's old value still gets torch's gradient; and it is the caller's
    (a hook's tensor, base.grad): the write's backward works on its own copy, as torch's
    CopySlices does. Every drawn case runs in both layouts."""
    for layout in ("c", "t"):
        _check_copy_slices_gradient(submission, x, w, view, op, k, layout)


def _check_copy_slices_gradient(submission, x, w, view, op, k, layout):
    got = submission.call("inplace.copy_slices_gradient", x, w, view, op, k, layout)
    expected = _torch_copy_slices(x, w, view, op, k, layout)
    conform(got, {"x_grad": Kind(np.ndarray), "base_grad": Kind(np.ndarray),
                  "other_grad": Kind(None, np.ndarray) if op == "mul" else Kind(np.ndarray),
                  "kept": ListOf(Kind(np.ndarray))}, what="inplace.copy_slices_gradient")
    write = f"{_VIEW_TEXT[view]}." + (f"mul_({k})" if op == "mul" else f"add_(full({k}))")
    loss = "(base.t() * w.t()).sum()" if layout == "t" else "(base * w).sum()"
    case = (f"x = {literal(x)}, w = {literal(w)}; base = x * 1.; {write}; base.retain_grad(); "
            f"base.register_hook(lambda g: kept.append(g)); {loss}.backward()")
    axis = ("with the gradient arriving transposed (layout)" if layout == "t"
            else "with a C-ordered gradient")
    assert_close(got["x_grad"], expected["x_grad"], what=f"x.grad {axis}", case=case)
    if op == "add":
        assert_close(got["other_grad"], expected["other_grad"],
                     what=f"the added tensor's .grad {axis}", case=case)
    assert_equal(len(got["kept"]), 1, what="calls of the hook on base", case=case)
    assert_close(got["kept"][0], expected["kept"][0],
                 what=f"the gradient tensor the hook on base kept, read after backward {axis} "
                 "(ownership: the write's backward must not write into it)", case=case)
    assert_close(got["base_grad"], expected["base_grad"],
                 what=f"base.grad after backward {axis} (ownership)", case=case)
