"""Task 6.7: the cuda device. One entry per operator the device must run with the
assignment's kernels (forward and backward under autograd), checked against torch; the
fused Adam step on device parameters; assignment 5's GPT trained on the device."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..strategies.cuda import Values

# every op on the device runs a few float32 kernels in another order than torch's CPU ops
# (blocked sums, fused formulas, exp2): a few units of float32 rounding at the scale of
# the values
DEVICE_TOLERANCE = (1e-5, 1e-5)


@dataclass(frozen=True)
class DeviceOpInfo:
    """An operator on device tensors: how to draw its inputs (``{"array", "grad"}`` dicts,
    kwargs) and which kernels of the assignment it must launch."""

    name: str
    draw: Callable[[Values], tuple[list[dict[str, Any]], dict[str, Any], str]]
    kernels: tuple[str, ...]
    task: str = "6.7"
    examples: int = 3
    # the gradients' atol where it is not DEVICE_TOLERANCE's (from the inputs and the
    # output's gradient)
    grad_atol: Callable[[list[dict[str, Any]], np.ndarray], float] | None = None


def _f(v: Values, name: str, shape: tuple[int, ...], scale: float = 1.0,
       shift: float = 0.0) -> dict[str, Any]:
    """A float32 input that needs a gradient; of 2 dims or more, stored contiguous or as
    the transpose of a leaf (a view with its last two dims swapped in memory), drawn for
    each input on its own."""
    spec = {"array": v.normal(name, shape, "float32", scale, shift), "grad": True}
    if len(shape) >= 2:
        spec["layout"] = v.pick(("contiguous", "transposed"))
    return spec


def said(inputs: list[dict[str, Any]]) -> str:
    """The inputs' layouts, for a case's description."""
    laid = [f"input {k} transposed" for k, i in enumerate(inputs)
            if i.get("layout") == "transposed"]
    return f" ({', '.join(laid)})" if laid else ""


def _linear(v: Values) -> tuple[list[dict[str, Any]], dict[str, Any], str]:
    b, t, i, o = v.integer(1, 3), v.integer(1, 9), v.integer(1, 40), v.integer(1, 40)
    inputs = [_f(v, "x", (b, t, i)), _f(v, "weight", (o, i)), _f(v, "bias", (o,))]
    return inputs, {}, f"F.linear(x {(b, t, i)}, weight {(o, i)}, bias {(o,)})"


def _matmul(v: Values) -> tuple[list[dict[str, Any]], dict[str, Any], str]:
    batch = (v.integer(1, 2), v.integer(1, 2))
    m, k, n = v.integer(1, 20), v.integer(1, 20), v.integer(1, 20)
    b_shape = batch if v.flag() else batch[1:]  # b's batch dims broadcast
    inputs = [_f(v, "a", (*batch, m, k)), _f(v, "b", (*b_shape, k, n))]
    return inputs, {}, f"a {(*batch, m, k)} @ b {(*b_shape, k, n)}"


def _gelu(v: Values) -> tuple[list[dict[str, Any]], dict[str, Any], str]:
    shape = (v.integer(1, 4), v.integer(1, 50))
    approximate = v.pick(("none", "tanh"))
    return [_f(v, "x", shape, 2.0)], {"approximate": approximate}, \
        f"F.gelu(x {shape}, approximate={approximate!r})"


def _softmax(v: Values) -> tuple[list[dict[str, Any]], dict[str, Any], str]:
    shape = (v.integer(1, 2), v.integer(1, 3), v.integer(1, 12))  # at most 36 rows
    dim = v.integer(-3, 2)
    return [_f(v, "x", shape, 3.0)], {"dim": dim}, f"F.softmax(x {shape}, dim={dim})"


def _log_softmax(v: Values) -> tuple[list[dict[str, Any]], dict[str, Any], str]:
    inputs, kwargs, _ = _softmax(v)
    return inputs, kwargs, f"F.log_softmax(x {inputs[0]['array'].shape}, dim={kwargs['dim']})"


def _layer_norm(v: Values) -> tuple[list[dict[str, Any]], dict[str, Any], str]:
    shape = (v.integer(1, 3), v.integer(1, 6), v.integer(1, 40))
    inputs = [_f(v, "x", shape, 2.0), _f(v, "weight", shape[-1:], 0.3, 1.0),
              _f(v, "bias", shape[-1:])]
    return inputs, {"eps": 1e-5}, f"F.layer_norm(x {shape}, ({shape[-1]},), weight, bias)"


def _layer_norm_grad_atol(inputs: list[dict[str, Any]], grad: np.ndarray) -> float:
    """dx = rstd (g - mean g - xhat mean(g xhat)) cancels: its float32 rounding is at the
    scale of rstd |w| |dy| (a row of one column: rstd = 1/sqrt(eps) = 316 and dx exactly 0,
    torch's residue 1.5e-5), as the kernel table's LayerNorm backward."""
    x, w = (np.asarray(i["array"], np.float64) for i in inputs[:2])
    if not x.size:
        return DEVICE_TOLERANCE[1]
    rstd = 1 / np.sqrt(x.var(-1) + 1e-5)
    scale = float(rstd.max() * np.abs(w).max() * np.abs(grad.astype(np.float64)).max())
    return DEVICE_TOLERANCE[1] * max(1.0, scale)


def _cross_entropy(v: Values) -> tuple[list[dict[str, Any]], dict[str, Any], str]:
    rows, classes = v.integer(1, 12), v.integer(1, 40)
    reduction = v.pick(("mean", "sum", "none"))
    targets = v.integers("targets", (rows,), 0, classes)
    if rows > 1:
        targets[-1] = -100
        v.note("targets[-1] = -100")
    inputs = [_f(v, "logits", (rows, classes), 3.0), {"array": targets, "grad": False}]
    return inputs, {"reduction": reduction}, \
        f"F.cross_entropy(logits {(rows, classes)}, targets, reduction={reduction!r})"


def _sdpa(v: Values) -> tuple[list[dict[str, Any]], dict[str, Any], str]:
    shape = (v.integer(1, 2), v.integer(1, 2), v.integer(1, 24), 16)
    causal = v.flag()
    inputs = [_f(v, name, shape) for name in ("q", "k", "v")]
    return inputs, {"is_causal": causal}, \
        f"F.scaled_dot_product_attention(q, k, v {shape}, is_causal={causal})"


DEVICE_OPS = [
    DeviceOpInfo("linear", _linear, ("matmul_kernel",)),
    DeviceOpInfo("matmul", _matmul, ("matmul_kernel",)),
    DeviceOpInfo("gelu", _gelu, ("bias_gelu_kernel", "bias_gelu_backward_kernel")),
    DeviceOpInfo("softmax", _softmax, ("softmax_kernel", "softmax_backward_kernel")),
    DeviceOpInfo("log_softmax", _log_softmax, ("softmax_kernel", "softmax_backward_kernel")),
    DeviceOpInfo("layer_norm", _layer_norm, ("layer_norm_kernel", "layer_norm_backward_kernel",
                                             "layer_norm_dwdb_kernel"),
                 grad_atol=_layer_norm_grad_atol),
    DeviceOpInfo("cross_entropy", _cross_entropy, ("cross_entropy_kernel",)),
    DeviceOpInfo("scaled_dot_product_attention", _sdpa,
                 ("flash_attention_kernel", "flash_attention_backward_preprocess_kernel",
                  "flash_attention_backward_dkdv_kernel", "flash_attention_backward_dq_kernel")),
]


def grad_output(v: Values, shape: tuple[int, ...]) -> np.ndarray:
    return v.normal("grad_output", shape, "float32")
