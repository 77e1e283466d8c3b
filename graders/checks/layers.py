"""Comparing a layer run (``graders.probes._layers.run``) with torch's, with a tinytrain
reproducer of the run."""

from __future__ import annotations

from typing import Any

import numpy as np

from .compare import assert_close, assert_equal, literal


def _array(value: np.ndarray) -> str:
    return f"np.array({literal(value)}, dtype=np.{value.dtype.name})"


def describe(spec: dict[str, Any]) -> str:
    """The layer call in one line: constructor, input shapes and dtypes, mode."""
    args = [repr(a) for a in spec.get("args", [])]
    args += [f"{k}={v!r}" for k, v in spec.get("kwargs", {}).items()]
    inputs = ", ".join(f"{np.asarray(v).dtype.name}{list(np.shape(v))}" for v in spec["inputs"])
    mode = "" if spec.get("train", True) else " in eval mode"
    return f"tt.nn.{spec['kind']}({', '.join(args)}){mode} on {inputs}"


def reproducer(spec: dict[str, Any]) -> str:
    """tinytrain code that builds the layer with the spec's weights and runs it."""
    args = [repr(a) for a in spec.get("args", [])]
    args += [f"{k}={v!r}" for k, v in spec.get("kwargs", {}).items()]
    lines = ["import numpy as np", "import tinytrain as tt",
             f"layer = tt.nn.{spec['kind']}({', '.join(args)})"]
    for name, value in spec.get("params", {}).items():
        lines.append(f"layer.{name}.data = {_array(value)}")
    if not spec.get("train", True):
        lines.append("layer.eval()")
    names = []
    for i, (value, g) in enumerate(zip(spec["inputs"], spec["grads"])):
        names.append(f"x{i}")
        flag = ", requires_grad=True" if g else ""
        lines.append(f"x{i} = tt.tensor({_array(np.asarray(value))}{flag})")
    lines.append(f"out = layer({', '.join(names)})")
    grad = spec.get("grad_output")
    lines.append("out.backward()" if grad is None else f"out.backward(tt.tensor({_array(grad)}))")
    shown = ["out"] + [f"layer.{n}.grad" for n in spec.get("params", {})]
    shown += [f"{n}.grad" for n, g in zip(names, spec["grads"]) if g]
    lines.append(f"print({', '.join(shown)})")
    return "\n".join(lines)


def assert_layer_matches(got: dict[str, Any], expected: dict[str, Any],
                         spec: dict[str, Any],
                         tolerances: dict[str, tuple[float, float]] | None = None) -> None:
    """Registered parameters (names, shapes, None entries), output, every parameter's
    gradient and every input's gradient must be torch's, within torch.testing's tolerance
    for their dtype unless ``tolerances`` ({dtype name: (rtol, atol)}) says otherwise."""
    case, repro = describe(spec), reproducer(spec)
    rtol, atol = (tolerances or {}).get(np.asarray(expected["output"]).dtype.name, (None, None))
    assert_equal(got["parameters"], expected["parameters"],
                 what="the layer's registered parameters [name, shape or None] "
                      "(module._parameters)", case=case)
    close = {"rtol": rtol, "atol": atol, "case": case, "reproducer": repro}
    assert_close(got["output"], expected["output"], what="output", **close)
    assert_equal(sorted(got["param_grads"]), sorted(expected["param_grads"]),
                 what="parameters whose gradients were reported", case=case)
    for name, value in expected["param_grads"].items():
        assert_close(got["param_grads"][name], value, what=f"gradient of {name}", **close)
    for i, (g, e) in enumerate(zip(got["input_grads"], expected["input_grads"], strict=True)):
        assert_close(g, e, what=f"gradient of input x{i}", **close)
