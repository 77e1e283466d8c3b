"""Probes for assignment 3.1: in-place ops, version counters, the saved-tensor check.

Out-of-place ops and views are probe Functions (``_functions``) that save what torch's
ops save; the in-place ops (``add_`` ..., ``x[key] = v``) are the submission's.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any

import numpy as np

from . import probe
from ._functions import apply, functions
from ._observe import array, grad, raised


def _run_step(tt: Any, fns: Any, step: dict[str, Any], values: list[Any]) -> Any:
    op = step["op"]
    args = [values[i] for i in step["args"]]
    if op in ("sin", "exp", "square"):
        return apply(fns, op, args)
    if op == "scale":
        return apply(fns, "scale", [args[0], float(step["k"])])
    if op == "add":
        return apply(fns, "add", args)
    if op == "mul":
        return apply(fns, "torch_mul", args)
    if op == "narrow":
        return apply(fns, "narrow", [args[0], *step["key"]])
    if op == "select":
        return apply(fns, "select", [args[0], step["key"][0]])
    if op == "t":
        return apply(fns, "transpose", args)
    target = args[0]
    operand = args[1] if len(args) > 1 else step.get("k")
    if op == "setitem":
        key = step["key"]
        target[key[1] if key[0] == "index" else slice(key[1], key[2])] = operand
        return target
    if op in ("add_", "sub_"):
        out = getattr(target, op)(operand, alpha=step.get("alpha", 1))
    elif op in ("mul_", "div_", "copy_", "fill_"):
        out = getattr(target, op)(operand)
    elif op == "clamp_":
        out = target.clamp_(*step["bounds"])
    else:  # relu_, zero_
        out = getattr(target, op)()
    if out is not target:
        raise AssertionError(f"{op} must return the tensor it modified (the same object)")
    return out


def _fold(tt: Any, fns: Any, values: list[Any], weights: list[float]) -> Any:
    loss = None
    for v, w in zip(values, weights):
        term = apply(fns, "sum", [apply(fns, "scale", [v, float(w)])])
        loss = term if loss is None else apply(fns, "add", [loss, term])
    return loss


@probe
def run_program(tt: Any, program: dict[str, Any], weights: list[float]) -> dict[str, Any]:
    """Run a program (see ``graders.strategies.inplace``): the step that raised (if one
    did), else the error backward raised (if any) and the leaves' gradients; and every
    value's ``_version``, ``requires_grad`` and ``is_leaf`` before backward."""
    with np.errstate(all="ignore"):
        return _run_program(tt, program, weights)


def _run_program(tt: Any, program: dict[str, Any], weights: list[float]) -> dict[str, Any]:
    fns = functions(tt)
    values = [tt.tensor(np.asarray(v), requires_grad=bool(rg)) for v, rg in program["leaves"]]
    out: dict[str, Any] = {"raised_at": None, "step_error": None, "backward_error": None,
                           "grads": None, "versions": None}
    for i, step in enumerate(program["steps"]):
        mode = tt.no_grad() if step.get("no_grad") else contextlib.nullcontext()
        result: list[Any] = []

        def run(step: dict[str, Any] = step, mode: Any = mode, result: list[Any] = result) -> None:
            with mode:
                result.append(_run_step(tt, fns, step, values))

        error = raised(run)
        if error["type"] is not None:
            out["raised_at"], out["step_error"] = i, error
            return out
        values.append(result[0])
    out["versions"] = [int(v._version) for v in values]
    out["requires_grad"] = [bool(v.requires_grad) for v in values]
    out["is_leaf"] = [bool(v.is_leaf) for v in values]
    n = len(program["leaves"])
    loss = _fold(tt, fns, values, weights)
    out["backward_error"] = raised(lambda: loss.backward())
    if out["backward_error"]["type"] is None:
        out["grads"] = [grad(v) for v in values[:n]]
    return out


@probe
def version_counters(tt: Any, start: Any = None) -> dict[str, Any]:
    """``_version`` after in-place writes on a tensor (``start``, 2 x 3 values from the
    grader; an arange by default), its views and a detached alias."""
    fns = functions(tt)
    values = np.arange(6.0).reshape(2, 3) if start is None else np.asarray(start, np.float64)
    x = tt.tensor(values.astype(np.float32))
    seen = {"start": int(x._version)}
    x.add_(1.0)
    seen["after_add_"] = int(x._version)
    x.mul_(2.0).zero_()
    seen["after_chained"] = int(x._version)
    row = apply(fns, "select", [x, 1])
    col = apply(fns, "narrow", [apply(fns, "transpose", [x]), 0, 2])
    seen["view_starts_at_base"] = [int(row._version), int(col._version)]
    row.fill_(3.0)
    seen["after_view_write"] = [int(x._version), int(row._version), int(col._version)]
    x[0, 1:] = 7.0
    seen["after_setitem"] = [int(x._version), int(row._version), int(col._version)]
    d = x.detach()
    d += 1.0
    seen["after_detached_write"] = [int(x._version), int(d._version)]
    y = tt.tensor([1.0, 2.0])
    y2 = tt.tensor([1.0, 2.0])
    y.copy_(y2)
    seen["other_untouched"] = int(y2._version)
    seen["values"] = array(x)
    return seen


@probe
def returns_self(tt: Any, x: Any = None, other: Any = None) -> dict[str, Any]:
    """In-place methods and operators return the tensor they modified (the same object)."""
    x = tt.tensor([1.0, -2.0, 3.0] if x is None else [float(v) for v in x])
    other = tt.tensor([2.0, 2.0, 2.0] if other is None else [float(v) for v in other])
    same = {}
    for name, call in [
        ("add_", lambda t: t.add_(other)), ("sub_", lambda t: t.sub_(1.0)),
        ("mul_", lambda t: t.mul_(other)), ("div_", lambda t: t.div_(2.0)),
        ("clamp_", lambda t: t.clamp_(-1.0, 1.0)), ("relu_", lambda t: t.relu_()),
        ("fill_", lambda t: t.fill_(0.5)), ("copy_", lambda t: t.copy_(other)),
        ("zero_", lambda t: t.zero_()),
    ]:
        same[name] = call(x) is x
    y = x
    y += other
    y -= 1.0
    y *= other
    y /= 4.0
    same["operators"] = y is x
    return {"same": same, "values": array(x), "version": int(x._version)}


@probe
def inplace_values(tt: Any, x: np.ndarray, other: np.ndarray, k: float) -> dict[str, Any]:
    """Forward values of each in-place op (on fresh copies of ``x``)."""
    o = tt.tensor(other)
    calls = {
        "add_": lambda t: t.add_(o, alpha=k), "sub_": lambda t: t.sub_(o),
        "mul_": lambda t: t.mul_(o), "div_": lambda t: t.div_(o),
        "mul_scalar": lambda t: t.mul_(k), "clamp_": lambda t: t.clamp_(-abs(k), abs(k)),
        "clamp_min": lambda t: t.clamp_(min=k), "relu_": lambda t: t.relu_(),
        "fill_": lambda t: t.fill_(k), "copy_": lambda t: t.copy_(o), "zero_": lambda t: t.zero_(),
    }
    out = {}
    for name, call in calls.items():
        t = tt.tensor(x)
        with np.errstate(all="ignore"):
            call(t)
        out[name] = array(t)
    return out


@probe
def inplace_errors(tt: Any, values: Any = None) -> dict[str, Any]:
    """The errors of in-place writes PyTorch refuses, and the ones it allows (the
    tensors hold ``values``, three numbers from the grader, by default 1, 2, 3)."""
    fns = functions(tt)
    values = [1.0, 2.0, 3.0] if values is None else [float(v) for v in values]
    leaf = tt.tensor(values, requires_grad=True)
    out = {
        "leaf": raised(lambda: leaf.add_(1.0)),
        "leaf_operator": raised(lambda: leaf.__imul__(2.0)),
        "view_of_leaf": raised(lambda: apply(fns, "narrow", [leaf, 0, 2]).mul_(2.0)),
        "setitem_leaf": raised(lambda: leaf.__setitem__(0, 5.0)),
    }
    with tt.no_grad():
        out["leaf_no_grad"] = raised(lambda: leaf.add_(1.0))
        view = apply(fns, "narrow", [leaf, 0, 2])
        out["view_of_leaf_no_grad"] = raised(lambda: view.mul_(2.0))
    out["leaf_version"] = int(leaf._version)
    const = tt.tensor(values)
    with tt.no_grad():
        no_grad_view = apply(fns, "narrow", [const, 0, 2])
    out["no_grad_view_const"] = raised(lambda: no_grad_view.mul_(2.0))
    out["no_grad_view_recorded"] = raised(
        lambda: no_grad_view.mul_(apply(fns, "narrow", [leaf, 0, 2])))
    with tt.inference_mode():
        inference = tt.tensor(values[:2])
        out["inference_inside"] = raised(lambda: inference.add_(1.0))
    out["inference_outside"] = raised(lambda: inference.add_(1.0))
    with tt.no_grad():
        out["inference_outside_no_grad"] = raised(lambda: inference.mul_(2.0))
    # views made under no_grad of a base that requires grad (a leaf, or not)
    nonleaf = apply(fns, "scale", [leaf, 2.0])
    with tt.no_grad():
        of_nonleaf = apply(fns, "narrow", [nonleaf, 0, 2])
        of_leaf = apply(fns, "narrow", [leaf, 1, 2])
        outer = apply(fns, "narrow", [nonleaf, 1, 2])
    inner = apply(fns, "narrow", [outer, 0, 1])  # made in grad mode, of a no_grad view
    out["no_grad_view_of_nonleaf"] = raised(lambda: of_nonleaf.mul_(2.0))
    out["no_grad_view_of_leaf"] = raised(lambda: of_leaf.mul_(2.0))
    out["view_of_no_grad_view"] = raised(lambda: inner.mul_(2.0))
    out["no_grad_view_versions"] = [int(nonleaf._version), int(leaf._version)]
    out["int_target"] = raised(lambda: tt.tensor([1, 2, 3]).add_(0.5))
    out["broadcast_target"] = raised(lambda: tt.tensor(values).add_(tt.ones(2, 3)))
    return out


@probe
def saved_and_modified(tt: Any, case: str, x: Any = None) -> dict[str, Any]:
    """One hand-written case of a saved tensor modified before backward (see the test);
    ``x``: the leaf's three values (by default 0.5, -1, 2)."""
    fns = functions(tt)
    x = tt.tensor(np.array([0.5, -1.0, 2.0] if x is None else x, np.float64),
                  requires_grad=True)
    y = apply(fns, "scale", [x, 2.0])
    if case == "input_saved":  # sin saves its input
        z = apply(fns, "sin", [y])
        y.mul_(3.0)
    elif case == "output_saved":  # exp saves its output
        z = apply(fns, "exp", [y])
        z.add_(1.0)
    elif case == "input_of_exp":  # exp does not save its input
        z = apply(fns, "exp", [y])
        y.add_(1.0)
    elif case == "relu_result":  # relu_ saves its result, at the version after its write
        z = apply(fns, "scale", [y, 1.0]).relu_()
    elif case == "twice":
        z = apply(fns, "sin", [y])
        y.add_(1.0).add_(1.0)
    elif case == "view_modified":  # a write through a view bumps the base's version
        z = apply(fns, "sin", [y])
        apply(fns, "narrow", [y, 1, 2]).zero_()
    elif case == "base_modified":  # ... and a write into the base, the view's
        v = apply(fns, "select", [y, 0])
        z = apply(fns, "sin", [v])
        y.mul_(2.0)
    elif case == "leaf_no_grad":  # a saved leaf written under no_grad
        z = apply(fns, "sin", [x])
        with tt.no_grad():
            x.add_(1.0)
    elif case == "no_grad_view_modified":  # a write through a view made under no_grad
        z = apply(fns, "sin", [y])
        with tt.no_grad():
            apply(fns, "narrow", [y, 0, 2]).mul_(2.0)
    elif case == "retain_then_modify":
        z = apply(fns, "sin", [y])
        apply(fns, "sum", [z]).backward(retain_graph=True)
        y.add_(1.0)
    else:
        raise ValueError(case)
    loss = apply(fns, "sum", [z])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {"error": raised(lambda: loss.backward()), "grad": grad(x)}


VIEW_CASES = {
    # name: tinytrain-like code; x = [0.5, -1, 2] requires grad, loss = sum(out * [1, 2, 3...])
    "base_write_seen_by_view": "y = x * 2.; v = y[0:2]; y.mul_(3.); out = v",
    "const_base_gets_history": "c = zeros(3); v = c[1:3]; c.add_(x); out = v",
    "sibling_view_write": "y = x * 1.; a = y[0:2]; b = y[1:3]; b.mul_(10.); out = a",
    "view_of_view_write": "y = x * 1.; a = y[1:3]; b = a[1]; b.mul_(4.); out = y",
    "write_view_then_base": "y = x * 1.; v = y[0:2]; v.mul_(x[1:3]); y.add_(1.); out = v",
    # writes through a view into a base that does not require grad, with a value that does
    "copy_into_const_base": "c = zeros(3); v = c[1:3]; v.copy_(x[0:2] * 2.); out = c",
    "mul_into_const_base": "c = ones(3); v = c[0:2]; v.mul_(x[1:3]); out = c",
    "setitem_into_const_base": "c = zeros(3); c[1] = x[0] * 3.; out = c",
    "const_view_sees_write": "c = zeros(3); a = c[0:2]; v = c[1:3]; v.copy_(x[0:2]); out = a",
    # a view made under no_grad of a base that requires grad, written under no_grad
    "no_grad_write_through_no_grad_view":
        "y = x * 2.; with no_grad(): v = y[0:2]; v.mul_(2.)\nout = y",
}


@probe
def view_case(tt: Any, case: str, x: Any = None) -> dict[str, Any]:
    """One of VIEW_CASES: out's requires_grad / is_leaf, and x.grad of sum(out * w);
    ``x``: the leaf's three values (by default 0.5, -1, 2)."""
    fns = functions(tt)
    x = tt.tensor(np.array([0.5, -1.0, 2.0] if x is None else x, np.float64),
                  requires_grad=True)

    def narrow(t: Any, start: int, length: int) -> Any:
        return apply(fns, "narrow", [t, start, length])

    if case == "base_write_seen_by_view":
        y = apply(fns, "scale", [x, 2.0])
        out = narrow(y, 0, 2)
        y.mul_(3.0)
    elif case == "const_base_gets_history":
        c = tt.tensor(np.zeros(3))
        out = narrow(c, 1, 2)
        before = [bool(out.requires_grad), bool(out.is_leaf)]
        c.add_(x)
    elif case == "sibling_view_write":
        y = apply(fns, "scale", [x, 1.0])
        out = narrow(y, 0, 2)
        narrow(y, 1, 2).mul_(10.0)
    elif case == "view_of_view_write":
        y = apply(fns, "scale", [x, 1.0])
        apply(fns, "select", [narrow(y, 1, 2), 1]).mul_(4.0)
        out = y
    elif case == "write_view_then_base":
        y = apply(fns, "scale", [x, 1.0])
        out = narrow(y, 0, 2)
        out.mul_(narrow(x, 1, 2))
        y.add_(1.0)
    elif case in CONST_BASE_CASES:
        c = tt.tensor(np.ones(3) if case == "mul_into_const_base" else np.zeros(3))
        sibling = narrow(c, 0, 2)
        before = [bool(c.requires_grad), bool(sibling.requires_grad)]
        view = None
        if case == "copy_into_const_base":
            view = narrow(c, 1, 2)
            view.copy_(apply(fns, "scale", [narrow(x, 0, 2), 2.0]))
        elif case == "mul_into_const_base":
            view = narrow(c, 0, 2)
            view.mul_(narrow(x, 1, 2))
        elif case == "const_view_sees_write":
            view = narrow(c, 1, 2)
            view.copy_(narrow(x, 0, 2))
        else:  # setitem
            c[1] = apply(fns, "scale", [apply(fns, "select", [x, 0]), 3.0])
        out = sibling if case == "const_view_sees_write" else c
        others = [[bool(t.requires_grad), bool(t.is_leaf), t.grad_fn is not None]
                  for t in (c, sibling, c if view is None else view)]
    elif case == "no_grad_write_through_no_grad_view":
        y = apply(fns, "scale", [x, 2.0])
        with tt.no_grad():
            narrow(y, 0, 2).mul_(2.0)
        out = y
    else:
        raise ValueError(case)
    flags = [bool(out.requires_grad), bool(out.is_leaf)]
    weights = tt.tensor(np.arange(1.0, 1.0 + out.data.size).reshape(out.shape))
    values, version = array(out), int(out._version)
    error = raised(lambda: apply(fns, "sum", [apply(fns, "torch_mul", [out, weights])])
                   .backward())
    result = {"flags": flags, "grad": grad(x), "out": values, "version": version,
              "backward_error": error}
    if case == "const_base_gets_history" or case in CONST_BASE_CASES:
        result["before"] = before
    if case in CONST_BASE_CASES:
        result["others"] = others
    return result


CONST_BASE_CASES = ("copy_into_const_base", "mul_into_const_base", "setitem_into_const_base",
                    "const_view_sees_write")


@probe
def retain_and_hooks(tt: Any, x: Any = None, weights: Any = None) -> dict[str, Any]:
    """y = 2x; y.retain_grad(); a hook on y; y.mul_(3.); loss = sum(y * weights) (x and
    weights from the grader: by default [1, 2, 3] and [1, 10, 100])."""
    fns = functions(tt)
    x = tt.tensor(np.array([1.0, 2.0, 3.0] if x is None else x, np.float64),
                  requires_grad=True)
    y = apply(fns, "scale", [x, 2.0])
    y.retain_grad()
    seen: list[np.ndarray] = []
    y.register_hook(lambda g: seen.append(array(g)))
    y.mul_(3.0)
    weights = tt.tensor(np.array([1.0, 10.0, 100.0] if weights is None else weights,
                                 np.float64))
    apply(fns, "sum", [apply(fns, "torch_mul", [y, weights])]).backward()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {"retains": bool(y.retains_grad), "grad": grad(y), "hook": seen, "x": grad(x)}


def _write_view(fns: Any, base: Any, view: str) -> Any:
    if view == "narrow":
        return apply(fns, "narrow", [base, 0, 1])
    if view == "select":
        return apply(fns, "select", [base, 1])
    return apply(fns, "select", [apply(fns, "transpose", [base]), 1])  # a column


@probe
def copy_slices_gradient(tt: Any, x: Any, w: Any, view: str, op: str, k: float,
                         layout: str) -> dict[str, Any]:
    """base = 1 * x (2-D); a view of base ("narrow": base[0:1], "select": base[1],
    "column": base.t()[1]) written in place (``op`` "mul": mul_(k); "add": add_(other),
    other a leaf of ones * k); then base.retain_grad() and a hook on base that keeps the
    gradient tensor it is given; loss = sum(base * w) (``layout`` "c") or
    sum(base.t() * w.t()) ("t": the gradient reaches the write transposed). Reports the
    leaves' gradients, base.grad and what the kept gradient holds after backward."""
    fns = functions(tt)
    xt = tt.tensor(np.asarray(x, np.float64), requires_grad=True)
    base = apply(fns, "scale", [xt, 1.0])
    target = _write_view(fns, base, view)
    other = None
    if op == "mul":
        target.mul_(float(k))
    else:
        other = tt.tensor(np.full(target.shape, float(k)), requires_grad=True)
        target.add_(other)
    base.retain_grad()
    kept: list[Any] = []
    base.register_hook(lambda g: kept.append(g))
    wt = tt.tensor(np.asarray(w, np.float64))
    if layout == "t":
        w_t = tt.tensor(np.ascontiguousarray(np.asarray(w, np.float64).T))
        product = apply(fns, "torch_mul", [apply(fns, "transpose", [base]), w_t])
    else:
        product = apply(fns, "torch_mul", [base, wt])
    apply(fns, "sum", [product]).backward()
    return {"x_grad": grad(xt), "other_grad": None if other is None else grad(other),
            "base_grad": grad(base), "kept": [array(g) for g in kept]}
