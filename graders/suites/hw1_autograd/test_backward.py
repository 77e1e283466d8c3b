"""Task 1.2: backward (topological order, sums over paths, accumulation, errors).

The engine is graded on graphs recorded by the probes' own copy of task 1.1's ``record``
(``graders.probes._functions.own_recording``), so a 1.1 mistake costs 1.1 only. The
programs hold Functions with two outputs (gradients must reach the right one, or none when
an output is unused), integer outputs, and ``zero``, whose backward returns None: the
nodes below a node that received no gradient must still run their share."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from graders.checks import assert_close, assert_conforms, assert_equal, assert_raises_like
from graders.checks.compare import literal
from graders.oracle import programs as oracle
from graders.strategies.programs import (
    backward_reach,
    describe,
    functions_source,
    layout,
    needs_grad,
    operands,
    outputs,
    programs,
    reproducer,
)
from graders.suites._seed import reseeded, seeded_program, seeded_values
from graders.suites._support import examples, task

small_vectors = arrays(np.float64, st.integers(1, 5), elements=st.floats(-1.5, 1.5))

# fixed programs every grading runs besides the drawn ones
ZERO_BELOW = {  # y = Zero(b) + a with b = a * a, a = sin(x): torch gives x.grad = cos(x)
    "leaves": [[np.array([0.5, -1.0]), True]],
    "ops": [["sin", 0], ["square", 1], ["zero", 2], ["add", 3, 1], ["sum", 4]]}
SHARED_ARRAY = {  # Add hands one gradient array to both leaves
    "leaves": [[np.array([0.5, -1.0]), True], [np.array([2.0, 3.0]), True]],
    "ops": [["add", 0, 1], ["sum", 2]]}
ONE_OUTPUT_USED = {  # sin(x), cos(x) = SinCos(x); only cos is used
    "leaves": [[np.array([0.5, -1.0, 2.0]), True]],
    "ops": [["sincos", 0], ["scale", 2, 3.0], ["add", 3, 0], ["sum", 4]]}
KEY_PROGRAMS = [ZERO_BELOW, SHARED_ARRAY, ONE_OUTPUT_USED]


def _key_programs(**extra):
    """Add the key programs as explicit examples (with ``extra`` arguments)."""

    def decorate(test):
        for program in reversed(KEY_PROGRAMS):
            test = example(program=program, **extra)(test)
        return test

    return decorate


def _observe(submission, program, **kwargs):
    """Run programs.backward and check the answer's structure against the program."""
    got = submission.call("programs.backward", program, **kwargs)
    n_leaves = len(program["leaves"])
    n_values = n_leaves + sum(len(outputs(op)) for op, *_ in program["ops"])
    n_given = len(kwargs.get("root_grads") or [])
    assert_conforms(got, {"grads": [None] * n_leaves, "non_leaf_has_grad": [True] * (
        n_values - n_leaves), "calls": None, "output": None,
        "given_unchanged": [True] * n_given, "shares_memory": [True] * n_leaves},
        what="the backward observation")
    if not isinstance(got["calls"], list) or not all(isinstance(c, str) for c in got["calls"]):
        raise AssertionError(f"the backward observation['calls']: malformed answer: "
                             f"{got['calls']!r}")
    return got


def _check_grads(got, expected, program, calls=1, roots=None, note="", root_grads=None,
                 retain_graph=False, hooks=None):
    how = {"roots": roots, "root_grads": root_grads, "retain_graph": retain_graph,
           "hooks": hooks}
    repro = reproducer(program, calls, **how)
    case = describe(program) + note + ("" if roots is None else
                                       f"; tt.autograd.backward of {[f'v{r}' for r in roots]}")
    for i, (g, e) in enumerate(zip(got["grads"], expected, strict=True)):
        assert_close(g, e, what=f"x{i}.grad", case=case, reproducer=repro)
    shared = [f"x{i}" for i, s in enumerate(got["shares_memory"]) if s]
    if shared:
        raise AssertionError(
            f"the .grad of {', '.join(shared)} shares memory with another leaf's .grad or "
            "with a gradient given to backward (torch never does: accumulating into it "
            f"later would change the other one too)\n  case: {case}\n  reproduce:\n"
            + _indent(reproducer(program, calls, **how, sharing=True)))
    changed = [k for k, same in enumerate(got["given_unchanged"]) if not same]
    if changed:
        raise AssertionError(
            f"backward changed the values of the gradient tensor(s) given to it (g{changed[0]}"
            f"): torch never writes into them\n  case: {case}\n  reproduce:\n"
            + _indent(reproducer(program, calls, **how, sharing=True)))


def _indent(code):
    return "\n".join("    " + line for line in code.splitlines())


@task("1.2")
@settings(max_examples=examples(20))
@given(x=small_vectors)
def test_worked_example(submission, x):
    """The course's example: y = x * exp(x^2) has dy/dx = exp(x^2) * (1 + 2x^2)."""
    got = submission.call("autograd.worked_example", x)
    assert_conforms(got, {"y": None, "grad": None}, what="the observation")
    t = torch.tensor(x, requires_grad=True)
    (t * torch.exp(t * t)).sum().backward()
    # the probe's y = Mul(x, Exp(Square(x))), summed (its own Functions, not 2.x's ops)
    repro = reproducer({"leaves": [[x, True]],
                        "ops": [["square", 0], ["exp", 1], ["mul", 0, 2], ["sum", 3]]})
    assert_close(got["grad"], t.grad.numpy(), what="x.grad", case=f"x = {literal(x)}",
                 reproducer=repro)
    assert_close(got["grad"], np.exp(x * x) * (1 + 2 * x * x), what="x.grad vs the formula",
                 case=f"x = {literal(x)}", reproducer=repro)


@task("1.2")
@settings(max_examples=examples(30))
@given(program=programs(extended=True))
@_key_programs()
def test_random_graphs(submission, program):
    """Leaf gradients match torch on random graphs with branches, reused values, two-output
    and integer-output Functions, and nodes that receive no gradient (below a backward
    that returns None)."""
    program = reseeded(program, KEY_PROGRAMS, "1.2 test_random_graphs")
    got = _observe(submission, program)
    _check_grads(got, oracle.leaf_grads(program), program)


@task("1.2")
@settings(max_examples=examples(10))
@given(program=programs(max_ops=4, extended=True))
@_key_programs()
def test_each_node_runs_once_after_its_consumers(submission, program):
    """Every node that receives a gradient runs its backward exactly once, after all nodes
    that feed it a gradient; nodes backward cannot reach never run. (A node reached only
    below a backward that returned None may run, with zeros, as a torch Function does,
    or be skipped; either way the nodes below it must still get their gradients.)"""
    program = reseeded(program, KEY_PROGRAMS, "1.2 test_each_node_runs_once_after_its_consumers")
    got = _observe(submission, program)
    live, dead = backward_reach(program)
    first = layout(program)
    labels = {f"v{first[i]}": i for i in range(len(program["ops"]))}
    calls = got["calls"]
    for label, i in labels.items():
        count = calls.count(label)
        if i in live:
            assert_equal(count, 1, what=f"number of backward calls of {label}",
                         case=describe(program))
        elif i in dead:
            assert count <= 1, (f"backward of {label} ran {count} times\n"
                                f"  case: {describe(program)}")
        else:
            assert_equal(count, 0, what=f"number of backward calls of {label}, which no "
                         "path from the output reaches", case=describe(program))
    position = {label: calls.index(label) for label in labels if label in calls}
    producer = {}
    for i, (op, *_) in enumerate(program["ops"]):
        for k in range(len(outputs(op))):
            producer[first[i] + k] = f"v{first[i]}"
    for i, (op, *args) in enumerate(program["ops"]):
        consumer = f"v{first[i]}"
        for a in operands(op, args):
            if a not in producer:
                continue
            if producer[a] in position and consumer in position:
                assert position[consumer] < position[producer[a]], (
                    f"backward of {producer[a]} ran before backward of {consumer}, which "
                    f"sends it a gradient (a node must wait for all its consumers)\n"
                    f"  case: {describe(program)}\n  order: {calls}")


@task("1.2")
@settings(max_examples=examples(10))
@given(program=programs(max_ops=5, extended=True), calls=st.integers(2, 3))
@_key_programs(calls=2)
def test_leaf_grads_accumulate_across_calls(submission, program, calls):
    """Calling backward again (on a new forward) adds into .grad instead of replacing it,
    and into an array of the leaf's own (not one the engine handed to another leaf)."""
    program = reseeded(program, KEY_PROGRAMS, "1.2 test_leaf_grads_accumulate_across_calls")
    got = _observe(submission, program, calls=calls, rebuild=True)
    _check_grads(got, oracle.leaf_grads(program, calls), program, calls)


@task("1.2")
@settings(max_examples=examples(10))
@given(program=programs(max_ops=5, extended=True))
@_key_programs()
def test_retain_graph_allows_a_second_backward(submission, program):
    """backward(retain_graph=True) keeps saved tensors: a second pass doubles the grads."""
    program = reseeded(program, KEY_PROGRAMS, "1.2 test_retain_graph_allows_a_second_backward")
    got = _observe(submission, program, calls=2, retain_graph=True)
    expected = [None if g is None else 2 * g for g in oracle.leaf_grads(program)]
    _check_grads(got, expected, program, 2, retain_graph=True)


@task("1.2")
def test_non_leaf_grad_stays_none(submission):
    """Only leaves get .grad: intermediate values keep .grad None (without retain_grad)."""
    program = seeded_program({"leaves": [[np.array([0.5, -1.0]), True]],
                              "ops": [["sin", 0], ["mul", 1, 0], ["sum", 2]]}, "1.2 non-leaf")
    got = _observe(submission, program)
    assert_equal(got["non_leaf_has_grad"], [False, False, False],
                 what="which non-leaf values have a .grad")
    _check_grads(got, oracle.leaf_grads(program), program)


_RAISED = {"type": None, "message": ""}


@task("1.2")
def test_backward_errors_match_torch(submission):
    """PyTorch's errors: backward twice, non-scalar implicit grad, no grad to compute."""
    got = submission.call("autograd.backward_errors",
                          seeded_values([1.0, 2.0, 3.0, 0.5], "1.2 errors"))
    assert_conforms(got, {k: _RAISED for k in ("twice", "non_scalar", "no_grad_tensor",
                                               "one_element")}, what="the observation")
    assert_raises_like(got["twice"], "RuntimeError", what="a second backward without retain_graph",
                       contains=("backward through the graph a second time",),
                       reproducer=ERRORS_CODE)
    assert_raises_like(got["non_scalar"], "RuntimeError", what="backward() of a non-scalar",
                       contains=("grad can be implicitly created only for scalar outputs",),
                       reproducer=ERRORS_CODE)
    assert_raises_like(got["no_grad_tensor"], "RuntimeError",
                       what="backward() of a tensor that does not require grad",
                       contains=("does not require grad",), reproducer=ERRORS_CODE)
    assert_raises_like(got["one_element"], None, what="backward() of a one-element [[x]] tensor",
                       reproducer=ERRORS_CODE)


ERRORS_CODE = f"""import numpy as np
import tinytrain as tt

{functions_source(["mul", "sin", "sum"])}


def show(what, run):
    try:
        run()
        print(what, "raised nothing")
    except Exception as error:
        print(what, "raised", type(error).__name__, error)


x = tt.tensor([1.0, 2.0, 3.0], dtype=tt.float64, requires_grad=True)
s = Sum.apply(Mul.apply(x, x))
s.backward()
# PyTorch: RuntimeError: Trying to backward through the graph a second time ...
show("a second backward without retain_graph:", lambda: s.backward())
# PyTorch: RuntimeError: grad can be implicitly created only for scalar outputs
show("backward() of a non-scalar:", lambda: Sin.apply(x).backward())
# PyTorch: RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn
show("backward() of a tensor that does not require grad:",
     lambda: tt.tensor([1.0], dtype=tt.float64).backward())
# PyTorch raises nothing
one = Sin.apply(tt.tensor([[0.5]], dtype=tt.float64, requires_grad=True))
show("backward() of a one-element [[x]] tensor:", lambda: one.backward())"""


@task("1.2")
@settings(max_examples=examples(10))
@given(data=st.data())
def test_explicit_gradient_argument(submission, data):
    """y.backward(g) for a non-scalar y computes the vector-Jacobian product g^T dy/dx."""
    x = data.draw(small_vectors)
    # + 1/3: not exact in float32, so a gradient rounded through float32 shows
    g = data.draw(arrays(np.float64, x.shape, elements=st.floats(-2, 2))) + 1.0 / 3.0
    got = submission.call("autograd.explicit_gradient", x, g)
    assert_conforms(got, {"grad": None}, what="the observation")
    t = torch.tensor(x, requires_grad=True)
    (torch.sin(t) * t).backward(torch.tensor(g))
    repro = (f"import numpy as np\nimport tinytrain as tt\n\n"
             f"{functions_source(['mul', 'sin'])}\n\n\n"
             f"x = tt.tensor({literal(x)}, dtype=tt.float64, requires_grad=True)\n"
             f"y = Mul.apply(Sin.apply(x), x)\n"
             f"y.backward(tt.tensor({literal(g)}, dtype=tt.float64))\nprint(\"x.grad:\", x.grad)")
    # float64 all through (a float32 rounding of g is ~1e-8 off, torch.testing's float64
    # tolerance 1e-7 would hide it); sin and cos differ from torch's by an ulp at most
    assert_close(got["grad"], t.grad.numpy(), what="x.grad (float64 x and g: the dtype axis)",
                 rtol=1e-12, atol=1e-12,
                 case=f"x = {literal(x)}, g = {literal(g)}", reproducer=repro)


@st.composite
def _roots(draw, program):
    """Two to four values requiring grad, the output always among them (so every other
    root is one of its ancestors), in any order, repeats allowed."""
    needs = needs_grad(program)
    output = len(needs) - 1
    candidates = [v for v, n in enumerate(needs) if n]
    others = draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=3))
    roots = [output, *others]
    return draw(st.permutations(roots))


def _value_shapes(program):
    shape = np.shape(program["leaves"][0][0])
    n_values = len(program["leaves"]) + sum(len(outputs(op)) for op, *_ in program["ops"])
    return [shape] * (n_values - 1) + [()]


@task("1.2")
@settings(max_examples=examples(12))
@given(program=programs(max_ops=5, extended=True), data=st.data())
def test_backward_from_several_roots(submission, program, data):
    """tt.autograd.backward(roots, grads) with several roots, one an ancestor of another
    (or the same root twice, or a leaf), runs one pass that sums every root's
    contribution; the given gradient tensors are left as they were."""
    roots = data.draw(_roots(program))
    shapes = _value_shapes(program)
    grads = [data.draw(arrays(np.float64, shapes[r], elements=st.floats(-2, 2))) for r in roots]
    got = _observe(submission, program, roots=roots, root_grads=grads)
    expected = oracle.leaf_grads(program, roots=roots, root_grads=grads)
    _check_grads(got, expected, program, roots=roots, root_grads=grads)


@st.composite
def _partial_roots(draw, program):
    """One or two values requiring grad other than the final output (an intermediate, one
    output of a two-output op, a leaf): a backward from only some outputs of the graph."""
    needs = needs_grad(program)
    candidates = [v for v, n in enumerate(needs[:-1]) if n]
    assume(candidates)
    return draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=2, unique=True))


@task("1.2")
@settings(max_examples=examples(10))
@given(program=programs(max_ops=5, extended=True), data=st.data())
def test_backward_from_only_some_outputs(submission, program, data):
    """Backward from some values of the graph only, never its final output: gradients
    reach only the leaves below those roots (a leaf elsewhere, or one that does not
    require grad, keeps .grad None), as torch (control flow: a partial backward)."""
    roots = data.draw(_partial_roots(program))
    shapes = _value_shapes(program)
    grads = [data.draw(arrays(np.float64, shapes[r], elements=st.floats(-2, 2))) for r in roots]
    got = _observe(submission, program, roots=roots, root_grads=grads)
    expected = oracle.leaf_grads(program, roots=roots, root_grads=grads)
    _check_grads(got, expected, program, roots=roots, root_grads=grads,
                 note=" (a backward from only some outputs)")


@task("1.2")
@settings(max_examples=examples(10))
@given(program=programs(max_ops=5, extended=True), data=st.data())
def test_engine_applies_tensor_hooks(submission, program, data):
    """Before a node's backward runs (and before a leaf accumulates), the engine lets the
    node apply its tensor hooks (``node._run_tensor_hooks(grads)``, here the probes' own
    copy): a hook's result is the gradient that flows on."""
    needs = needs_grad(program)
    candidates = [v for v, n in enumerate(needs) if n]
    chosen = data.draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=3,
                                unique=True))
    hooks = [[v, data.draw(st.sampled_from([0.5, -2.0, 3.0]))] for v in chosen]
    got = _observe(submission, program, hooks=hooks)
    described = "; ".join(f"v{v}.register_hook(lambda g: g * {k})" for v, k in hooks)
    _check_grads(got, oracle.leaf_grads(program, hooks=hooks), program,
                 note=f"; hooks: {described}", hooks=hooks)


@task("1.2")
@settings(max_examples=examples(3))
@given(x=arrays(np.float32, st.integers(1, 4), elements=st.floats(-2, 2, width=32)))
def test_implicit_gradient_has_the_output_dtype(submission, x):
    """backward() of a float32 scalar starts from a float32 one (torch.ones_like), as the
    output's hooks see it, and x.grad is float32."""
    got = submission.call("autograd.implicit_root_gradient", x)
    assert_conforms(got, {"root_grads": [np.empty(())], "root_dtypes": [""], "grad": x,
                          "grad_dtype": ""}, what="the observation")
    t = torch.tensor(x, requires_grad=True)
    s = torch.sin(t).sum()
    seen = []
    s.register_hook(lambda g: seen.append(g.detach().clone()))
    s.backward()
    case = (f"x = {literal(x)} (float32); s = Sum(Sin(x)), the grader's own Functions; "
            "s.backward()")
    repro = _root_gradient_reproducer(x, "Sum", "s = SeenSum.apply(Sin.apply(x))\ns.backward()")
    assert_equal(got["root_dtypes"], [str(seen[0].dtype).replace("torch.", "")],
                 what="dtype of the gradient backward starts from (a hook on s sees it)",
                 case=case, reproducer=repro)
    assert_close(got["root_grads"][0], seen[0].numpy(), what="the gradient of s", case=case,
                 reproducer=repro)
    assert_equal(got["grad_dtype"], "float32", what="x.grad's dtype", case=case,
                 reproducer=repro)
    assert_close(got["grad"], t.grad.numpy(), what="x.grad", case=case, reproducer=repro)


def _root_gradient_reproducer(x, last: str, body: str) -> str:
    """A stage-1 script: the grader's Functions, the last one printing the gradient its
    backward receives (what a hook on the output sees, without task 1.4's hooks)."""
    return (f"import numpy as np\nimport tinytrain as tt\n\n"
            f"{functions_source(sorted({'sin', last.lower()}))}\n\n\n"
            f"class Seen{last}({last}):  # {last}, printing the gradient backward starts from\n"
            "    @staticmethod\n"
            "    def backward(ctx, grad):\n"
            "        print(\"gradient received:\", np.asarray(grad).dtype, np.asarray(grad))\n"
            f"        return {last}.backward(ctx, grad)\n\n\n"
            f"x = tt.tensor(np.array({literal(x)}, dtype=np.float32), requires_grad=True)\n"
            f"{body}\n"
            "print(\"x.grad:\", x.grad, x.grad.dtype)")


@task("1.2")
def test_gradient_of_the_wrong_shape_is_refused(submission):
    """A gradient whose shape is not the output's is PyTorch's RuntimeError ("Mismatch in
    shape: grad_output[0] has a shape of ... and output[0] has a shape of ..."), from
    y.backward(g) and from tt.autograd.backward, before anything is accumulated."""
    got = submission.call("autograd.gradient_shape_errors",
                          seeded_values([0.5, 1.0, 1.5, 1.0, 1.0], "1.2 shape errors"))
    assert_conforms(got, {"method": _RAISED, "function": _RAISED, "x_grad_is_none": True},
                    what="the observation")
    for key, call in (("method", "y.backward(g)"), ("function", "tt.autograd.backward([y], [g])")):
        assert_raises_like(got[key], "RuntimeError", contains=("Mismatch in shape",),
                           what=f"{call} with y of shape (3,) and g of shape (2,)")
    assert_equal(got["x_grad_is_none"], True, what="x.grad is None after the refused backward")


@task("1.2")
@settings(max_examples=examples(3))
@given(x=arrays(np.float32, st.integers(1, 4), elements=st.floats(-2, 2, width=32)))
def test_given_gradient_takes_the_output_dtype(submission, x):
    """y.backward(g) with a float64 g for a float32 y starts from g cast to float32 (torch
    casts it to the output's dtype), as the output's hooks see it."""
    g = np.linspace(-1.0, 1.0, len(x)) + 1 / 3  # not exact in float32
    got = submission.call("autograd.explicit_root_gradient", x, g)
    assert_conforms(got, {"root_grads": [x], "root_dtypes": [""], "grad": x},
                    what="the observation")
    t = torch.tensor(x, requires_grad=True)
    y = torch.sin(t)
    seen = []
    y.register_hook(lambda grad_: seen.append(grad_.detach().clone()))
    y.backward(torch.tensor(g))
    case = (f"x = {literal(x)} (float32); y = Sin(x), the grader's own Function; "
            f"y.backward(tt.tensor({literal(g)}, dtype=tt.float64))")
    repro = _root_gradient_reproducer(
        x, "Sin", f"y = SeenSin.apply(x)\ny.backward(tt.tensor({literal(g)}, dtype=tt.float64))")
    assert_equal(got["root_dtypes"], [str(seen[0].dtype).replace("torch.", "")],
                 what="dtype of the gradient backward starts from (a hook on y sees it)",
                 case=case, reproducer=repro)
    assert_close(got["root_grads"][0], seen[0].numpy(), what="the gradient of y", case=case,
                 reproducer=repro)
    assert_close(got["grad"], t.grad.numpy(), what="x.grad", case=case, reproducer=repro)
