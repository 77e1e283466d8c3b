"""Task 5.1: Module (parameters, buffers, submodules, state_dict, train/eval) against
torch.nn. Each model is built from the same spec on both sides (see
``graders.probes._modules``); names, order and values must match PyTorch's."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from graders.checks import assert_close, assert_equal, assert_raises_like
from graders.checks.structure import Kind, conform, loose
from graders.oracle import modules as oracle
from graders.strategies.modules import describe, module_specs, revalue, walk
from graders.suites._seed import case_rng, grading_seed, seeded_values
from graders.suites._support import examples, task


def _model(spec: dict[str, Any]) -> str:
    lines = describe(spec).splitlines()
    return "the model, built as\n" + "\n".join("    " + line for line in lines)


@task("5.1")
@settings(max_examples=examples(40))
@given(spec=module_specs())
def test_named_parameters_buffers_and_modules(submission, spec):
    """named_parameters / named_buffers / named_modules / named_children: names and order
    as PyTorch (own tensors first, then children depth first; shared ones once)."""
    got = submission.call("modules.structure", spec)
    expected = oracle.run("structure", spec)
    conform(got, loose(expected), what="modules.structure")
    for key, value in expected.items():
        assert_equal(got[key], value, what=key, case=_model(spec))


@task("5.1")
@settings(max_examples=examples(30))
@given(spec=module_specs())
def test_state_dict_matches_torch(submission, spec):
    """state_dict: keys (parameters then persistent buffers, module by module), values
    sharing storage with the model, without autograd history; keep_vars returns the
    registered tensors."""
    got = submission.call("modules.state_dict_view", spec)
    expected = oracle.run("state_dict_view", spec)
    conform(got, loose(expected), what="modules.state_dict_view")
    case = _model(spec)
    assert_equal(got["keys"], expected["keys"], what="state_dict().keys()", case=case)
    for key, g, e in zip(expected["keys"], got["values"], expected["values"], strict=True):
        assert_close(g, e, what=f"state_dict()[{key!r}]", rtol=0, atol=0, case=case)
    assert_equal(got["requires_grad"], expected["requires_grad"],
                 what="requires_grad of each state_dict() value (values are detached)", case=case)
    assert_equal(got["is_parameter"], expected["is_parameter"],
                 what="whether each state_dict() value is a Parameter", case=case)
    assert_equal(got["shares_storage"], expected["shares_storage"],
                 what="whether each state_dict() value shares storage with the model's tensor "
                      "(PyTorch returns references, not copies)", case=case)
    assert_equal(got["keep_vars_keys"], expected["keep_vars_keys"],
                 what="state_dict(keep_vars=True).keys()", case=case)
    assert_equal(got["keep_vars_is_registered_tensor"], expected["keep_vars_is_registered_tensor"],
                 what="state_dict(keep_vars=True) values are the registered tensors themselves",
                 case=case)


@task("5.1")
@settings(max_examples=examples(25))
@given(spec=module_specs(), seed=st.integers(0, 2**31))
def test_load_state_dict_round_trip(submission, spec, seed):
    """load_state_dict copies every value into the existing parameters and buffers (the
    Parameter objects stay the same) and reports no missing or unexpected keys."""
    other = revalue(spec, seed)
    got = submission.call("modules.load_round_trip", spec, other)
    expected = oracle.run("load_round_trip", spec, other)
    conform(got, loose(expected), what="modules.load_round_trip")
    case = _model(spec) + "\nmodel_b (same structure, other values).load_state_dict(" \
        "model_a.state_dict())"
    assert_equal(got["missing_keys"], [], what="missing_keys", case=case)
    assert_equal(got["unexpected_keys"], [], what="unexpected_keys", case=case)
    assert_equal(sorted(got["loaded"]), sorted(expected["loaded"]),
                 what="keys of model_b.state_dict() after loading", case=case)
    for key, value in expected["loaded"].items():
        assert_close(got["loaded"][key], value, what=f"model_b {key!r} after loading",
                     rtol=0, atol=0, case=case)
    assert_equal(got["same_parameter_objects"], True,
                 what="model_b keeps its Parameter objects (values are copied into them)",
                 case=case)
    for key, value in expected["after_changing_source"].items():
        assert_close(got["after_changing_source"][key], value,
                     what=f"model_b {key!r} after model_a's parameters change in place "
                          "(loading must copy, not alias)", rtol=0, atol=0, case=case)


@st.composite
def _load_error_case(draw: Any) -> tuple[dict[str, Any], list[list[Any]], bool]:
    spec = draw(module_specs(max_depth=2))
    keys = oracle.run("state_dict_view", spec)["keys"]
    edits: list[list[Any]] = []
    for key in keys:
        choice = draw(st.integers(0, 7))
        if choice == 0:
            edits.append(["drop", key])
        elif choice == 1:
            edits.append(["reshape", key, np.zeros((4, 4), np.float32)])
    paths = [p for p, _ in walk(spec)]
    for _ in range(draw(st.integers(0, 2))):
        path = draw(st.sampled_from(paths))
        edits.append(["add", f"{path}.extra" if path else "extra", np.zeros(1, np.float32)])
    nonpersistent = [f"{p}.{name}" if p else name for p, n in walk(spec) if n["kind"] == "block"
                     for name, value, persistent in n["buffers"]
                     if value is not None and not persistent]
    if nonpersistent and draw(st.booleans()):
        edits.append(["add", draw(st.sampled_from(nonpersistent)), np.zeros(1, np.float32)])
    return spec, edits, draw(st.booleans())


def _quoted(line: str) -> list[str]:
    return sorted(re.findall(r'"([^"]*)"', line))


def _error_lines(message: str) -> dict[str, Any]:
    lines = message.split("\n\t")
    out: dict[str, Any] = {"header": lines[0], "missing": [], "unexpected": [], "size": []}
    for line in lines[1:]:
        if line.startswith("Missing key(s) in state_dict:"):
            out["missing"] = _quoted(line)
        elif line.startswith("Unexpected key(s) in state_dict:"):
            out["unexpected"] = _quoted(line)
        elif line.startswith("size mismatch for "):
            out["size"].append(line[len("size mismatch for "):].split(":")[0])
    out["size"].sort()
    return out


@task("5.1")
@settings(max_examples=examples(30))
@given(case=_load_error_case())
def test_load_state_dict_reports_bad_keys(submission, case):
    """Missing, unexpected and wrongly shaped entries: strict=True raises PyTorch's
    RuntimeError listing them; strict=False returns (missing_keys, unexpected_keys) and
    still raises for size mismatches."""
    spec, edits, strict = case
    got = submission.call("modules.load_errors", spec, edits, strict)
    expected = oracle.run("load_errors", spec, edits, strict)
    conform(got, loose(expected), what="modules.load_errors")
    what = f"load_state_dict(strict={strict}) of a state_dict edited by {_edits(edits)}"
    context = _model(spec)
    raised = expected["raised"]
    assert_raises_like(got["raised"], raised["type"], what=what, case=context,
                       contains=("Error(s) in loading state_dict for",) if raised["type"] else ())
    if raised["type"]:
        g, e = _error_lines(got["raised"]["message"]), _error_lines(raised["message"])
        for key, label in (("header", "first line"), ("missing", "keys listed as Missing"),
                           ("unexpected", "keys listed as Unexpected"),
                           ("size", "keys reported with a size mismatch")):
            assert_equal(g[key], e[key], what=f"{what}: the error's {label}", case=context)
        return
    assert_equal(sorted(got["missing_keys"]), sorted(expected["missing_keys"]),
                 what=f"{what}: missing_keys", case=context)
    assert_equal(sorted(got["unexpected_keys"]), sorted(expected["unexpected_keys"]),
                 what=f"{what}: unexpected_keys", case=context)


def _edits(edits: list[list[Any]]) -> str:
    words = []
    for edit in edits:
        if edit[0] == "drop":
            words.append(f"deleting {edit[1]!r}")
        elif edit[0] == "add":
            words.append(f"adding {edit[1]!r}")
        else:
            words.append(f"giving {edit[1]!r} shape (4, 4)")
    return ", ".join(words) or "nothing"


@st.composite
def _train_eval_case(draw: Any) -> tuple[dict[str, Any], list[list[str]]]:
    spec = draw(module_specs(links=draw(st.booleans())))
    paths = [p for p, _ in walk(spec)]
    script = [[draw(st.sampled_from(paths)), draw(st.sampled_from(["train", "eval",
                                                                    "train_false"]))]
              for _ in range(draw(st.integers(1, 4)))]
    script.insert(0, ["", "eval"])
    return spec, script


@task("5.1")
@settings(max_examples=examples(25))
@given(case=_train_eval_case())
def test_train_and_eval_reach_every_submodule(submission, case):
    """train(mode) / eval() set ``training`` on the module and all its submodules, return
    the module, and reject a non-bool mode."""
    spec, script = case
    got = submission.call("modules.train_eval", spec, script)
    expected = oracle.run("train_eval", spec, script)
    conform(got, loose(expected), what="modules.train_eval")
    calls = []
    for (path, op), g, e in zip(script, got["steps"], expected["steps"], strict=True):
        call = {"train": "train()", "eval": "eval()", "train_false": "train(False)"}[op]
        calls.append(f"model{'.' + path if path else ''}.{call}")
        assert_equal(g["returned_self"], True, what=f"{calls[-1]} returns the module itself")
        assert_equal(g["training"], e["training"],
                     what="[name, training] of every module after " + "; ".join(calls),
                     case=_model(spec))
    assert_raises_like(got["non_bool"], "ValueError", what="model.train('no')",
                       contains=("training mode is expected to be boolean",))


@task("5.1")
@settings(max_examples=examples(10))
@given(spec=module_specs())
def test_zero_grad(submission, spec):
    """Module.zero_grad() sets every parameter's grad to None; set_to_none=False zeroes
    the existing gradient tensors in place."""
    got = submission.call("modules.zero_grad", spec)
    expected = oracle.run("zero_grad", spec)
    conform(got, loose(expected), what="modules.zero_grad")
    case = _model(spec) + "\n(each parameter's .grad set to a constant tensor first)"
    assert_equal([g is None for g in got["set_to_none"]], [True] * len(expected["set_to_none"]),
                 what="grads are None after model.zero_grad()", case=case)
    assert_equal(len(got["zeros"]), len(expected["zeros"]), what="number of parameters")
    for i, (g, e) in enumerate(zip(got["zeros"], expected["zeros"], strict=True)):
        assert_close(g, e, what=f"parameter #{i} grad after zero_grad(set_to_none=False)",
                     case=case)
    assert_equal(got["same_grad_objects"], expected["same_grad_objects"],
                 what="zero_grad(set_to_none=False) keeps the same grad tensors", case=case)


@task("5.1")
@settings(max_examples=examples(15))
@given(spec=module_specs(), seed=st.integers(0, 2**31))
def test_framework_writes_count_as_versions(submission, spec, seed):
    """load_state_dict copies into each parameter and buffer in place, a write PyTorch
    counts (``_version`` + 1 per state_dict entry naming the tensor: a tied parameter is
    copied twice; a non-persistent buffer not at all), so a state_dict taken before the
    load sees the loaded values; zero_grad(set_to_none=False) zeroes each grad in place
    (+ 1). A tensor saved for backward and overwritten by them is then detected."""
    other = revalue(spec, seed)
    got = submission.call("modules.versions", spec, other)
    expected = oracle.run("versions", spec, other)
    conform(got, {"load_state_dict": [Kind(int)] * len(expected["load_state_dict"]),
                  "earlier_state_dict": Kind(dict),
                  "zero_grad": [Kind(int)] * len(expected["zero_grad"])},
            what="modules.versions")
    case = _model(spec) + "\nmodel_b (same structure, other values)"
    assert_equal(got["load_state_dict"], expected["load_state_dict"], case=case,
                 what="change of _version of each of model_b's parameters, then buffers "
                      "(named_parameters(), named_buffers()), over "
                      "model_b.load_state_dict(model_a.state_dict())")
    assert_equal(sorted(got["earlier_state_dict"]), sorted(expected["earlier_state_dict"]),
                 what="keys of sd = model_b.state_dict()", case=case)
    for key, value in expected["earlier_state_dict"].items():
        assert_close(got["earlier_state_dict"][key], value, rtol=0, atol=0, case=case,
                     what=f"sd[{key!r}] (taken before model_b.load_state_dict(...)) after the "
                          "load: it shares the tensor's storage, which the load overwrote")
    assert_equal(got["zero_grad"], expected["zero_grad"], case=case,
                 what="change of _version of each parameter's grad over "
                      "model_b.zero_grad(set_to_none=False)")


@task("5.1")
@settings(max_examples=examples(10))
@given(spec=module_specs())
def test_to_float64(submission, spec):
    """model.to(tt.float64) converts floating point parameters, their grads and buffers
    (integer buffers stay), keeps the Parameter objects and returns the model."""
    got = submission.call("modules.to_float64", spec)
    expected = oracle.run("to_float64", spec)
    conform(got, loose(expected), what="modules.to_float64")
    case = _model(spec) + "\nmodel.to(tt.float64)"
    assert_equal(got["returned_self"], True, what="to() returns the module", case=case)
    assert_equal(got["same_parameter_objects"], True,
                 what="to() keeps the Parameter objects (converts their data)", case=case)
    for kind in ("parameters", "buffers"):
        assert_equal([[n, d] for n, d, _ in got[kind]], [[n, d] for n, d, _ in expected[kind]],
                     what=f"[name, dtype] of the {kind} after to(float64)", case=case)
        for (name, _, g), (_, _, e) in zip(got[kind], expected[kind], strict=True):
            assert_close(g, e, what=f"{name} after to(float64)", case=case)
    assert_equal(got["grads"], expected["grads"], what="dtype of each parameter's grad",
                 case=case)
    assert_equal(got["requires_grad"], expected["requires_grad"],
                 what="requires_grad of the parameters", case=case)


@task("5.1")
@settings(max_examples=examples(15))
@given(spec=module_specs())
def test_apply_visits_children_first(submission, spec):
    """Module.apply(fn) calls fn on every submodule (children first, each once) and then
    on the module itself."""
    got = submission.call("modules.apply_order", spec)
    expected = oracle.run("apply_order", spec)
    conform(got, loose(expected), what="modules.apply_order")
    assert_equal(got, expected, what="modules visited by apply(fn), by name", case=_model(spec))


KEY_NAMES = ["alpha", "beta", "gamma", "delta", "eps", "head", "tail", "left", "right", "mid"]


def _container_params() -> dict | None:
    """test_containers' numbers, out-of-range indices and ModuleDict keys: the probe's
    defaults at grading seed 0, else drawn from the seed."""
    if grading_seed() == 0:
        return None
    rng = case_rng(0, "5.1 containers")
    keys = [KEY_NAMES[i] for i in rng.permutation(len(KEY_NAMES))[:5]]
    return {"k": int(rng.integers(2, 100)), "a": int(rng.integers(2, 100)),
            "b": int(rng.integers(2, 100)), "seq_index": int(rng.integers(4, 50)),
            "list_index": int(rng.integers(7, 200)), "keys": keys[:3], "missing": keys[3],
            "nested_key": keys[4]}


@task("5.1")
def test_containers(submission):
    """Sequential, ModuleList and ModuleDict: indexing, slicing, len, del (renumbering),
    append / extend / insert, keys, and PyTorch's repr."""
    params = _container_params()
    got = submission.call("modules.containers", params)
    expected = oracle.run("containers", params)
    conform(got, loose(expected), what="modules.containers")
    for key, value in expected.items():
        if isinstance(value, dict) and "type" in value:
            assert_raises_like(got[key], value["type"], what=key,
                               contains=(value["message"],))
        else:
            assert_equal(got[key], value, what=key,
                         case="see graders/probes/_modules.py: containers() for the steps")


@task("5.1")
def test_traversals_of_a_module_cycle(submission):
    """A submodule that keeps a reference to its parent (a registered cycle):
    named_parameters, named_buffers, named_modules and parameters list each module and
    tensor once, as PyTorch's (they skip modules already seen), and end."""
    fill = seeded_values([1.0, 0.0], "5.1 cycle") if grading_seed() else None
    got = submission.call("modules.cycle", fill)
    expected = oracle.run("cycle", fill)
    # an error in a traversal (a RecursionError) is observed as a string: compared below
    conform(got, {key: Kind(type(value), str) for key, value in expected.items()},
            what="modules.cycle")
    for key, value in expected.items():
        assert_equal(got[key], value, what=key,
                     case="model = Block(); model.weight = Parameter(ones(2)); "
                          "model.register_buffer('mean', zeros(2)); model.child = Block(); "
                          "model.child.bias = Parameter(zeros(3)); model.child.parent = model "
                          "(see graders/probes/_modules.py: cycle)")


_REGISTRATION_ERRORS = {
    "plain tensor to a parameter name": ("as parameter 'weight'",),
    "list to a buffer name": ("as buffer 'mean'",),
    "dot in a buffer name": ("buffer name", 'contain "."'),
    "empty parameter name": ("parameter name", 'be empty string ""'),
    "buffer over an existing attribute": ("attribute 'note' already exists",),
    "non-tensor buffer": ("to buffer 'bad'",),
    "missing attribute": ("'Block' object has no attribute 'nothing_here'",),
    "parameter before Module.__init__": ("cannot assign parameters before Module.__init__()",),
}


@task("5.1")
def test_attribute_registration(submission):
    """Assigning Parameters, Modules, tensors and None to attributes registers and
    unregisters them as PyTorch does (seen through named_parameters, named_buffers,
    state_dict), with PyTorch's errors for invalid assignments."""
    fill = seeded_values([1.0, 0.0, 5.0], "5.1 registration") if grading_seed() else None
    got = submission.call("modules.registration", fill)
    expected = oracle.run("registration", fill)
    conform(got, loose(expected), what="modules.registration")
    for key, value in expected.items():
        if key in _REGISTRATION_ERRORS:
            assert_raises_like(got[key], value["type"], what=key,
                               contains=_REGISTRATION_ERRORS[key])
        elif isinstance(value, np.ndarray):
            assert_close(got[key], value, what=key)
        else:
            assert_equal(got[key], value, what=f"after {key}" if isinstance(value, dict) else key,
                         case="see graders/probes/_modules.py: registration() for the steps")
