"""Task 4.2: tt.amp.autocast against torch's CUDA autocast policy.

Dtype conformance: every operator of assignment 2 in the op table, called inside ``tt.autocast("cuda",
dtype=float16 or bfloat16)`` on float32, float16, bfloat16, float64 and mixed inputs,
must give the output dtypes torch's CUDA autocast gives (graders.oracle.autocast: with a
GPU, torch.autocast("cuda") itself; without one, the inputs cast per the op's category
and the op run on the CPU). The semantics of regions (nesting, enabled=False, the
decorator, the state functions), of each policy (which arguments are cast, to what), of
the weight-cast cache and of backward are checked with the probes' own Functions
(graders/probes/autocast.py), so they do not depend on the operators of assignment 2.
The op-table probe stands in for task 4.1's float32 opmath; backward through autocast's
casts uses the cast's backward, and ``x16 * 2.0`` the scalar path of task 4.1.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graders.checks import assert_equal
from graders.checks.structure import RAISED, Kind, ListOf, conform
from graders.optable import OPS
from graders.optable.spec import OpInfo, describe, reproducer, to_wire
from graders.oracle import autocast as oracle
from graders.strategies.autocast import (
    INPUT_MODES,
    LOW,
    POLICIES,
    argument_specs,
    input_dtypes,
    region_scripts,
)
from graders.strategies.ops import Draw
from graders.suites._seed import case_rng, grading_seed
from graders.suites._support import examples, task

VALUE = np.array([0.5, -1.25, 3.0], dtype=np.float64)


def value(*key: object) -> np.ndarray:
    """The probes' input tensor: VALUE at grading seed 0, else three multiples of 1/8 in
    [-4, 4] drawn from the seed (exact in float16 and bfloat16, as VALUE's are)."""
    if grading_seed() == 0:
        return VALUE
    drawn = np.round(case_rng(0, "4.2 value", *key).uniform(-4, 4, 3) * 8) / 8
    return np.where(drawn == 0, 0.125, drawn)


def _ops_params() -> list[Any]:
    # Assignment 2's operators only: the op table also holds assignment 5's layer operators
    # (embedding, layer_norm, dropout), whose forward is assignment-5 homework; with them
    # this task would depend on assignment 5 (their autocast categories ship as given code).
    return [pytest.param(op, id=op.name, marks=task("4.2")) for op in OPS
            if op.task.split(".")[0] == "2"]


def _autocast_reproducer(call: str, sample: Any, dtype: str, n_outputs: int) -> str:
    """The op-table reproducer with the call inside an autocast region."""
    lines = []
    for line in reproducer(call, sample).splitlines():
        if line.startswith("out = "):
            lines.append(f'with tt.autocast("cuda", dtype=tt.{dtype}):')
            line = "    " + line
        elif line == "print(out)":
            line = "print([o.dtype for o in out])" if n_outputs > 1 else "print(out.dtype)"
        lines.append(line)
    return "\n".join(lines)


@pytest.mark.parametrize("op", _ops_params())
@settings(max_examples=examples(3))
@given(data=st.data())
def test_op_dtypes(submission, op: OpInfo, data):
    """Output dtypes under tt.autocast("cuda", dtype=float16 / bfloat16) are torch's CUDA
    autocast's, for float32, float16, bfloat16, float64 and mixed (float32 with low
    precision) inputs: the op's
    category (lower_precision, fp32, promote or none) decides how inputs are cast, and
    float64 and integer tensors are never cast."""
    d = Draw(data)
    base = op.sample(d, np.dtype(np.float32))
    n_float = len(oracle.float_tensors(base))
    cases, samples = [], []
    for autocast_dtype in LOW:
        for mode in INPUT_MODES:
            if mode == "mixed" and n_float < 2:
                continue
            dtypes = input_dtypes(data.draw, mode, n_float, autocast_dtype)
            sample = oracle.with_dtypes(base, dtypes)
            expected = oracle.autocast_dtypes(op, sample, autocast_dtype)
            if expected is None:  # torch rejects this mix of dtypes
                continue
            cases.append([list(to_wire(sample.args)), to_wire(sample.kwargs), autocast_dtype])
            samples.append((sample, autocast_dtype, expected))
    got = submission.call("autocast.op_dtypes", op.calls[0], cases)
    conform(got, [Kind(list, dict)] * len(samples), what="autocast.op_dtypes")
    for found, (sample, autocast_dtype, expected) in zip(got, samples, strict=True):
        case = f"{describe(sample)}, inside tt.autocast(\"cuda\", dtype=tt.{autocast_dtype})"
        repro = _autocast_reproducer(op.calls[0], sample, autocast_dtype, len(expected))
        if isinstance(found, dict):
            raise AssertionError(f"{op.name} under autocast raised {found['error']}: "
                                 f"{found['message']}\n  case: {case}\n  reproduce:\n"
                                 + "\n".join("    " + line for line in repro.splitlines()))
        assert_equal(found, expected, what=f"{op.name} ({op.autocast} category): output "
                     "dtypes under autocast", case=case, reproducer=repro)


POLICY_DOC = {
    "lower_precision": "cast to the autocast dtype",
    "fp32": "cast to float32",
    "promote": "cast to the widest input type (float32 if any input is float32)",
    "none": "left as they are",
}


@task("4.2")
@settings(max_examples=examples(25))
@given(policy=st.sampled_from(POLICIES), autocast_dtype=st.sampled_from(LOW),
       specs=st.lists(argument_specs(), min_size=1, max_size=4))
def test_policy_casts(submission, policy, autocast_dtype, specs):
    """A Function with ``autocast_policy`` (the probes' own; it computes nothing) called
    inside an autocast region: what its forward receives. Floating point tensors other
    than float64 are cast by the policy; float64, integer tensors, Python numbers and None
    pass unchanged. "promote" with a bfloat16 input under float16 autocast (no float32
    input) raises RuntimeError, as torch's does. (Where torch's promote depends on the
    order of the arguments, bfloat16 and float32 inputs under float16 autocast, the case
    is not graded.)"""
    specs = [s for s in specs if oracle.received(policy, s, autocast_dtype)]
    if not specs:
        return
    cases = [{"policy": policy, "autocast_dtype": autocast_dtype, "args": s} for s in specs]
    got = submission.call("autocast.policy_casts", cases, value("policy", str(cases)))
    conform(got, [Kind(dict)] * len(specs), what="autocast.policy_casts")
    for spec, found in zip(specs, got, strict=True):
        expected = oracle.received(policy, spec, autocast_dtype)
        args = ", ".join(f"{s[1]} tensor" if s[0] == "tensor" else
                         (repr(s[1]) if s[0] == "number" else "None") for s in spec)
        what = (f"a Function with autocast_policy = {policy!r} ({POLICY_DOC[policy]}) called "
                f"with ({args}) inside tt.autocast(\"cuda\", dtype=tt.{autocast_dtype})")
        if "error" in expected:
            assert_equal(found.get("error"), expected["error"],
                         what=f"{what}: the exception raised", case="torch: 'Unexpected "
                         "floating ScalarType in at::autocast::prioritize'")
        else:
            assert "error" not in found, (f"{what}: raised {found.get('error')}: "
                                          f"{found.get('message')}")
            assert_equal(found["received"], expected["received"],
                         what=f"{what}: the dtypes its forward receives")


def _step_of(script, record):
    """The index in ``script`` of the step that gave record number ``record``."""
    k = -1
    for i, step in enumerate(script):
        if step[0] in ("call", "state", "decorated", "raise"):
            k += 1
            if k == record:
                return i
    return len(script) - 1


@task("4.2")
@settings(max_examples=examples(30))
@given(script=region_scripts())
def test_regions(submission, script):
    """Nested regions, enabled or not, float16 or bfloat16 (or, with no dtype, the
    enclosing region's), used as context managers and as decorators: inside each one the
    policy applies as that region says (enabled=False: nothing is cast, also inside an
    enabled region), is_autocast_enabled() and get_autocast_dtype() report it, and each
    exit restores what the region found, also when the region is left through an
    exception raised inside it (which propagates)."""
    got = submission.call("autocast.regions", script, value("regions", str(script)))
    expected = oracle.script_records(script)
    conform(got, ListOf(Kind(list, str)), what="autocast.regions")
    lines, k = [], 0
    for step in script:
        if step[0] in ("call", "state", "decorated", "raise"):
            mark = "  <-- here" if k < len(got) and k < len(expected) and \
                got[k] != expected[k] else ""
            lines.append(f"{step}{mark}")
            k += 1
        else:
            lines.append(str(step))
    case = "the script played (each call/state step gives one record):\n    " + \
        "\n    ".join(lines)
    assert_equal(len(got), len(expected), what="number of records", case=case)
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        if isinstance(e, list):
            kind = "state [is_autocast_enabled(), get_autocast_dtype()]"
        elif e.startswith("exception"):
            kind = "after an exception inside autocast: does it propagate out of the region"
        else:
            kind = "dtype received -> output dtype of a call"
        after_raise = any(step == ["raise"] for step in script[:_step_of(script, i) + 1])
        if after_raise and not (isinstance(e, str) and e.startswith("exception")):
            kind += " (after an exception inside autocast, at a [\"raise\"] step)"
        assert_equal(g, e, what=f"record {i} ({kind})", case=case)


@task("4.2")
def test_arguments_and_defaults(submission):
    """tt.autocast is tt.amp.autocast; "cuda" and "cpu" both apply the CUDA policy with
    float16 by default; an unknown device type raises RuntimeError; a float64 region on
    "cpu" warns and runs disabled (as torch does); outside any region nothing is cast."""
    got = submission.call("autocast.arguments", value("arguments"))
    state = [Kind(bool), Kind(str)]
    conform(got, {"same_class": Kind(bool), "outside": state, "cuda": [*state, Kind(str)],
                  "cpu": [*state, Kind(str)], "bad_device": RAISED, "float64_region": state,
                  "float64_warning": ListOf(Kind(str)), "after": state},
            what="autocast.arguments")
    assert_equal(got["same_class"], True, what="tt.autocast is tt.amp.autocast")
    assert_equal(got["outside"], [False, "float32"],
                 what="outside any region: [is_autocast_enabled(), lower_precision call on "
                      "float32]")
    for device in ("cuda", "cpu"):
        assert_equal(got[device], [True, "float16", "float16"],
                     what=f'inside tt.autocast("{device}"): [is_autocast_enabled(), '
                          "get_autocast_dtype(), lower_precision call on float32]")
    assert_equal(got["bad_device"]["type"], "RuntimeError",
                 what='tt.amp.autocast("tpu") raises', case="torch: \"User specified an "
                 "unsupported autocast device_type 'tpu'\"")
    assert_equal(got["float64_region"], [False, "float32"],
                 what='inside tt.amp.autocast("cpu", dtype=tt.float64): [is_autocast_enabled(),'
                      " lower_precision call on float32]")
    assert any("target dtype is not supported" in w for w in got["float64_warning"]), (
        'tt.amp.autocast("cpu", dtype=tt.float64) must warn that the dtype is not supported '
        '(torch: "In CPU autocast, but the target dtype is not supported. Disabling '
        'autocast.")')
    assert_equal(got["after"], [False, "float32"], what="after the regions")


CACHE_DOC = {
    "parameter": "a float32 leaf that requires grad (a weight), cast twice in one region: "
                 "the same cast tensor both times",
    "requires_grad_false": "a float32 tensor that does not require grad: cast anew each time",
    "non_leaf": "a float32 non-leaf: cast anew each time",
    "view": "a view of a float32 leaf: cast anew each time",
    "cache_enabled_false": "a weight in a region with cache_enabled=False: cast anew each time",
    "fp32_policy_cast": "a bfloat16 leaf cast to float32 (fp32 policy): not cached (only casts "
                        "to the autocast dtype are)",
    "float64": "a float64 weight: never cast (the tensor itself both times)",
    "other_dtype_region": "a weight in a bfloat16 region: its bfloat16 cast is cached",
    "cast_dtype": "dtype of the weight's cast in a float16 region",
    "disabled_region_gets_parameter": "inside enabled=False: the weight itself, not its cast",
    "enabled_under_disabled_hits": "a region inside an enabled=False region inside the first "
                                   "region: the cached cast",
    "nested_region_hits": "a nested region: the cast cached by the outer region",
    "after_nested_exit_hits": "after a nested region exits: still the cached cast",
    "next_region_misses": "the next outermost region: a new cast (the outermost exit "
                          "cleared the cache)",
    "recorded": "each cast is recorded: its grad_fn leads to the weight (so backward reaches "
                "it), in the first region and the next",
    "no_grad_then_grad_hits": "a weight cast first under no_grad, then in grad mode, in one "
                              "region: the same cached cast",
    "no_grad_cast_recorded": "that cast, made under no_grad, is still recorded (torch makes "
                             "cached casts with their graph)",
    "weights_keep_their_casts": "three weights w1, w2, w3 of one shape cast in one region: "
                                "[w2's second cast is its first, "
                                "w3's cast is not w2's, w2's cast holds w2's values, w3's "
                                "holds w3's] (the cache is keyed by the weight itself)",
}


@task("4.2")
def test_weight_cast_cache(submission):
    """The weight-cast cache, as torch's: casts of float32 leaves that require grad (and
    are not views) to the autocast dtype are cached while cache_enabled, shared by nested
    regions (enabled or not) and cleared when the outermost region exits; cached casts are
    recorded in the graph, even when made under no_grad."""
    got = submission.call("autocast.cache", value("cache"))
    conform(got, oracle.CACHE, what="autocast.cache")
    for key, expected in oracle.CACHE.items():
        assert_equal(got.get(key), expected, what=CACHE_DOC[key], reproducer=CACHE_CODE)


CACHE_CODE = """import numpy as np
import tinytrain as tt


class Received(tt.autograd.Function):  # the grader's: a lower_precision op that keeps its input
    autocast_policy = "lower_precision"
    opmath = False
    seen = []

    @staticmethod
    def forward(ctx, a):
        Received.seen.append(a)
        return a.data.copy()

    @staticmethod
    def backward(ctx, g):
        return g


def received(x):  # the tensor autocast handed to the op
    Received.apply(x)
    return Received.seen[-1]


def twice_same(x, **region):
    with tt.amp.autocast("cuda", **region):
        return received(x) is received(x)


def weight(k=1.0):
    return tt.tensor(np.array([0.5, -1.25, 3.0]) * k, dtype=tt.float32, requires_grad=True)


w = weight()
# PyTorch: True, False, False, True (casts of float32 leaves that require grad are
# cached, while cache_enabled; float64 is never cast: the tensor itself both times)
print("parameter:", twice_same(w))
print("requires_grad=False:", twice_same(tt.tensor([0.5, -1.25, 3.0])))
print("cache_enabled=False:", twice_same(w, cache_enabled=False))
print("float64:", twice_same(tt.tensor([0.5, -1.25, 3.0], dtype=tt.float64, requires_grad=True)))
with tt.amp.autocast("cuda"):
    first = received(w)
    with tt.amp.autocast("cuda", enabled=False):
        plain = received(w)
        with tt.amp.autocast("cuda"):
            under_disabled = received(w)
    with tt.amp.autocast("cuda"):
        inner = received(w)
    after_inner = received(w)
with tt.amp.autocast("cuda"):
    next_region = received(w)
# PyTorch: True each time
print("disabled region gets the parameter:", plain is w)
print("enabled under disabled, nested, after the nested exit hit the cache:",
      under_disabled is first, inner is first, after_inner is first)
print("the next region casts anew:", next_region is not first)
print("cast recorded, leading to w:", [c.grad_fn is not None and
      getattr(c.grad_fn.next_functions[0][0], "variable", None) is w for c in (first, next_region)])
w2 = weight()
with tt.amp.autocast("cuda"):
    with tt.no_grad():
        quiet = received(w2)
    loud = received(w2)
# PyTorch: True True
print("cast under no_grad, then in grad mode: same cast, recorded:", quiet is loud,
      loud.grad_fn is not None)
wb, wc = weight(2.0), weight(3.0)
with tt.amp.autocast("cuda"):
    received(weight())
    cb, cc = received(wb), received(wc)
    # PyTorch: True True, and each cast holds its own weight's values
    print("weights of one shape:", received(wb) is cb, cc is not cb, cb, cc)"""


@task("4.2")
@pytest.mark.parametrize("autocast_dtype", LOW)
def test_backward_dtypes(submission, autocast_dtype):
    """Backward runs in the dtype forward ran in: under autocast h = lower_precision(x),
    y = fp32(h), z = none(y) for a float32 leaf x (and e = lower_precision(b) for a float64
    leaf b, never cast); after the region, z.backward() and e.backward() give each
    Function a gradient of its forward's output dtype, and the leaves gradients of their
    own dtypes (the casts autocast made are in the graph)."""
    got = submission.call("autocast.backward_dtypes", value("backward", autocast_dtype),
                          autocast_dtype)
    conform(got, {"forward": {k: Kind(str) for k in "hyze"},
                  "backward": ListOf([Kind(str), Kind(str)]), "x_grad": Kind(None, str),
                  "b_grad": Kind(None, str)}, what="autocast.backward_dtypes")
    low = autocast_dtype
    assert_equal(got["forward"], {"h": low, "y": "float32", "z": "float32", "e": "float64"},
                 what="output dtypes in forward")
    assert_equal(got["backward"], [["Probe_none", "float32"], ["Probe_fp32", "float32"],
                                   ["Probe_lower_precision", low],
                                   ["Probe_lower_precision", "float64"]],
                 what="[Function, dtype of the gradient its backward received], in order")
    assert_equal([got["x_grad"], got["b_grad"]], ["float32", "float64"],
                 what="dtypes of x.grad and b.grad")


@task("4.2")
def test_inplace_and_explicit_dtype(submission):
    """In-place ops are never autocast (the target keeps its dtype, and so do the other
    arguments), and an op called with an explicit dtype runs in it: softmax(x, 0,
    dtype=tt.float16) is float16 under autocast, sum(x16, dtype=tt.float16) too; without
    one, softmax, log_softmax and sum run in float32."""
    got = submission.call("autocast.inplace_and_explicit", value("inplace"))
    conform(got, {"inplace_received": ListOf([Kind(str), Kind(str)])},
            what="autocast.inplace_and_explicit")
    assert_equal(got["inplace_received"], [["float32", "float32"], ["bfloat16", "float32"]],
                 what="what an in-place Function with autocast_policy 'lower_precision' "
                      "receives under autocast (float32, float32), then (bfloat16, float32)")
    expected = {"softmax": "float32", "softmax_dtype_float16": "float16",
                "log_softmax": "float32", "log_softmax_dtype_float64": "float64",
                "sum": "float32", "sum_dtype_float16": "float16",
                "sum_dtype_bfloat16": "bfloat16"}
    calls = {"softmax": "tt.softmax(x16, 0)",
             "softmax_dtype_float16": "tt.softmax(x32, 0, dtype=tt.float16)",
             "log_softmax": "tt.log_softmax(x16, 0)",
             "log_softmax_dtype_float64": "tt.log_softmax(x32, 0, dtype=tt.float64)",
             "sum": "tt.sum(x16)", "sum_dtype_float16": "tt.sum(x16, dtype=tt.float16)",
             "sum_dtype_bfloat16": "x32.sum(0, dtype=tt.bfloat16)"}
    for key, dtype in expected.items():
        assert_equal(got[key], dtype, what=f"dtype of {calls[key]} inside tt.autocast(\"cuda\")")
