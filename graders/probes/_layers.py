"""Layer scenarios written once against PyTorch's ``nn`` API (as ``_modules``): the
probes run them with the submission's tinytrain, the oracle with torch.

A layer is described as plain data (a *spec*):
``{"kind": "Linear", "args": [3, 4], "kwargs": {"bias": True}, "params": {name: array},
"inputs": [array, ...], "grads": [bool, ...], "grad_output": array | None,
"train": bool}``. The scenario builds ``nn.<kind>(*args, **kwargs)``, overwrites its
parameters with the spec's values (so both sides hold identical weights), calls it on the
inputs and runs backward. Parameters are read from ``module._parameters`` (not
``named_parameters``), so these graders do not depend on task 5.1.
Nothing here imports torch or the submission.
"""

from __future__ import annotations

from typing import Any


def run(lib: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """Forward and backward of one layer with the spec's weights and inputs."""
    module = getattr(lib.nn, spec["kind"])(*spec.get("args", []), **spec.get("kwargs", {}))
    for name, value in spec.get("params", {}).items():
        lib.set_data(getattr(module, name), value)
    if not spec.get("train", True):
        module.eval()
    inputs = [lib.tensor(value, bool(g)) for value, g in zip(spec["inputs"], spec["grads"])]
    out = module(*inputs)
    if any(spec["grads"]) or any(p is not None for p in module._parameters.values()):
        lib.backward(out, spec.get("grad_output"))
    return {
        "output": lib.array(out),
        "parameters": [[name, None if p is None else list(p.shape)]
                       for name, p in module._parameters.items()],
        "param_grads": {name: lib.grad(p) for name, p in module._parameters.items()
                        if p is not None},
        "input_grads": [lib.grad(t) if g else None for t, g in zip(inputs, spec["grads"])],
    }


def initial_parameters(lib: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """The parameters a freshly built layer starts with (its values where the init is
    deterministic, as LayerNorm's ones and zeros)."""
    module = getattr(lib.nn, spec["kind"])(*spec.get("args", []), **spec.get("kwargs", {}))
    return {name: None if p is None else lib.array(p) for name, p in module._parameters.items()}
