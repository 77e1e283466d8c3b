"""Task 4.5: a precision policy per layer (``tt.amp.apply_layer_policy``).

The models are trees of the probes' recording blocks (class names Embedding,
CausalSelfAttention, MLP, Block, Head): each block records, when called, whether autocast
was on, its input's dtype and its parameter's dtype. The oracle
(graders/oracle/opt_levels.py) names the modules with torch.nn on the same tree and
follows the policy's rules: a module's own rule by qualified name, else by class name,
else its parent's level; a module whose level differs from its parent's casts its inputs
(O0: float32, O3: float16), runs with autocast on (O1) or off (O0, O3, even inside an
autocast region), and hands float32 back (O0, O3).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from graders.checks import assert_close, assert_equal, assert_raises_like
from graders.checks.structure import RAISED, Kind, conform, loose
from graders.oracle import opt_levels as oracle
from graders.strategies.opt_levels import names_in, policies
from graders.suites._seed import case_rng, grading_seed
from graders.suites._support import examples, task


def _block(name: str, children: list | None = None, w: np.ndarray | None = None) -> dict:
    return {"kind": "block", "name": name,
            "params": [["w", np.array([1.0, 0.1], np.float32) if w is None else w]],
            "buffers": [], "children": children or []}


def _gpt(block: Any) -> dict:
    return block("GPT", [
        ["wte", block("Embedding")],
        ["h", {"kind": "seq", "children": [["0", block("Block", [
            ["attn", block("CausalSelfAttention")], ["mlp", block("MLP")]])]]}],
        ["head", block("Head")],
    ])


# The course's policy on a GPT-shaped tree: every draw also runs it.
GPT_TREE = _gpt(_block)


def gpt_tree(tree: dict, *key: object) -> dict:
    """``tree`` itself, unless it is GPT_TREE at a grading seed other than 0: then the
    same modules with parameters of other sizes and values, drawn from the seed."""
    if tree is not GPT_TREE or grading_seed() == 0:
        return tree
    rng = case_rng(0, "4.5 tree", *key)
    return _gpt(lambda name, children=None: _block(
        name, children, rng.uniform(-1, 1, int(rng.integers(1, 5))).astype(np.float32)))
COURSE = {"Embedding": "O0", "CausalSelfAttention": "O1", "MLP": "O3"}


def _case(spec: dict, rules: dict, outer: bool = False) -> str:
    tree = "\n".join(f"  {name or '(model)'}: {kind}" for name, kind in names_in(spec))
    call = "with tt.amp.autocast('cuda'): model(x)" if outer else "model(x)"
    return (f"modules (qualified name: class):\n{tree}\n"
            f"tt.amp.apply_layer_policy(model, {rules!r}); x float32; {call}")


@task("4.5")
@settings(max_examples=examples(20))
@given(policy=policies())
@example(policy=(GPT_TREE, COURSE))
def test_levels_resolve_by_name_class_and_parent(submission, policy):
    """tt.amp.resolve_levels: each module's level."""
    spec, rules = policy
    spec = gpt_tree(spec, "resolve", rules)
    got = submission.call("opt_levels.resolved_levels", spec, rules)
    expected = oracle.resolved_levels(spec, rules)
    assert_equal(got, expected, what="resolve_levels(model, rules)",
                 case=_case(spec, rules))


@task("4.5")
@settings(max_examples=examples(20))
@given(policy=policies(), outer=st.booleans())
@example(policy=(GPT_TREE, COURSE), outer=False)
@example(policy=(GPT_TREE, COURSE), outer=True)
# attention and MLP inherit the Block's O3: not wrapped, they hand back float16
@example(policy=(GPT_TREE, {"Block": "O3", "Embedding": "O0"}), outer=False)
def test_each_layer_runs_at_its_level(submission, policy, outer):
    """What every layer sees when the model runs: autocast on or off, its input's
    dtype, its parameters' dtype; what each layer hands back to its parent (float32 from
    a layer whose level differs from its parent's, else uncast); and the model's output
    dtype."""
    spec, rules = policy
    spec = gpt_tree(spec, "run", rules, outer)
    got = submission.call("opt_levels.layer_policy_run", spec, rules, outer)
    expected = oracle.layer_policy_run(spec, rules, outer)
    conform(got, {**loose(expected), "seen": Kind(dict), "returned": Kind(dict)},
            what="opt_levels.layer_policy_run")
    case = _case(spec, rules, outer)
    assert_equal(got["param_dtypes"], expected["param_dtypes"],
                 what="parameter dtypes after apply_layer_policy", case=case)
    for key, want in expected["param_values"].items():
        value = got["param_values"].get(key)
        assert_equal(None if value is None else np.asarray(value, np.float64).tolist(),
                     np.asarray(want, np.float64).tolist(), case=case,
                     what=f"parameter {key}: its values after apply_layer_policy (cast once "
                          "from float32 for its own module's level, never rounded through "
                          "another module's dtype)")
    for name, calls in expected["seen"].items():
        assert_equal(got["seen"].get(name), calls, case=case,
                     what=f"module {name or '(model)'}: [autocast on?, input dtype, "
                          "parameter dtype] seen in its forward")
    for name, dtypes in expected["returned"].items():
        assert_equal(got["returned"].get(name), dtypes, case=case,
                     what=f"module {name}: the dtype of what each of its calls returned to "
                          "its parent")
    assert_equal(got["output_dtype"], expected["output_dtype"], what="dtype of model(x)",
                 case=case)


@task("4.5")
def test_o2_is_refused_per_layer(submission):
    """O2 needs master weights in the optimizer: a per-layer policy refuses it."""
    got = submission.call("opt_levels.resolve_error", gpt_tree(GPT_TREE, "O2"), {"MLP": "O2"})
    conform(got, RAISED, what="opt_levels.resolve_error")
    assert_raises_like(got, "ValueError", contains=("O2",),
                       what="resolve_levels(model, {'MLP': 'O2'})")


@task("4.5")
@settings(max_examples=2)
@given(outer=st.booleans())
def test_a_layer_back_at_an_outer_level_is_wrapped(submission, outer):
    """A module whose level differs from its parent's is wrapped even when it equals the
    level of a module further up: attention at O1 inside a Block at O3 inside a model at
    O1 runs under autocast (its parent is the Block, not the model)."""
    rules = {"GPT": "O1", "Block": "O3", "CausalSelfAttention": "O1"}
    tree = gpt_tree(GPT_TREE, "outer level", outer)
    got = submission.call("opt_levels.layer_policy_run", tree, rules, outer)
    expected = oracle.layer_policy_run(tree, rules, outer)
    conform(got, {**loose(expected), "seen": Kind(dict), "returned": Kind(dict)},
            what="opt_levels.layer_policy_run")
    case = _case(tree, rules, outer)
    for name, calls in expected["seen"].items():
        assert_equal(got["seen"].get(name), calls, case=case,
                     what=f"module {name or '(model)'}: [autocast on?, input dtype, "
                          "parameter dtype] seen in its forward")


# An O3 layer around layers at other levels: casting each module's parameters with
# parameters() (recurse=True) instead of parameters(recurse=False) rounds the inner
# layers' float32 parameters through float16 before they are cast back.
NESTED_RULES = (
    {"GPT": "O3", "Block": "O1"},
    {"GPT": "O3", "Embedding": "O0", "CausalSelfAttention": "O1"},
    {"Block": "O3", "MLP": "O0", "Head": "O3"},
)


@task("4.5")
def test_nested_layers_keep_their_own_parameters(submission):
    """Each module casts its own parameters (recurse=False), once, from their float32
    values: a layer inside an O3 layer but at O0 or O1 keeps its float32 values exactly
    (torch: ``module.parameters(recurse=False)`` per module)."""
    rng = case_rng(0, "4.5 nested levels")
    for rules in NESTED_RULES:
        tree = _gpt(lambda name, children=None: _block(
            name, children, rng.uniform(-1, 1, 3).astype(np.float32)))
        got = submission.call("opt_levels.layer_policy_params", tree, rules)
        expected = oracle.layer_policy_params(tree, rules)
        conform(got, loose(expected), what="opt_levels.layer_policy_params")
        case = _case(tree, rules)
        assert_equal(sorted(got), sorted(expected), case=case,
                     what="parameters of the model after apply_layer_policy")
        for name, want in expected.items():
            assert_close(got[name], want, rtol=0, atol=0, case=case,
                         what=f"parameter {name} after apply_layer_policy, with a layer "
                              "nested inside one at another level (each module casts its "
                              "own parameters: recurse=False)")
