"""Op table samples run in PyTorch: forward values, gradients from torch's autograd, and
central differences of torch's float64 forward (independent of torch's autograd)."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import torch

from ..optable.spec import OpInfo
from ..strategies.ops import Index, Sample, T

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)


def torch_args(sample: Sample, values: dict[int, np.ndarray] | None = None,
               requires_grad: bool = True, cast: dict[int, torch.dtype] | None = None,
               ) -> tuple[list[Any], dict[str, Any], list[torch.Tensor]]:
    """The sample's arguments as torch objects. ``values`` replaces some tensors' values
    and ``cast`` casts some float tensors (differentiably, as autocast does, after they
    became leaves), both by ``id`` of their ``T``. Returns (args, kwargs, differentiable
    leaves)."""
    leaves: list[torch.Tensor] = []

    def convert(x: Any) -> Any:
        if isinstance(x, T):
            value = x.value if values is None else values.get(id(x), x.value)
            tensor = with_layout(value, x.layout)
            is_float = tensor.is_floating_point()
            if x.grad and requires_grad and is_float:
                tensor.requires_grad_(True)
                leaves.append(tensor)
            if cast is not None and is_float and id(x) in cast:
                tensor = tensor.to(cast[id(x)])
            return tensor
        if isinstance(x, Index):
            return x.items
        if isinstance(x, list):
            return [convert(v) for v in x]
        if isinstance(x, tuple):
            return tuple(convert(v) for v in x)
        return x

    args = [convert(a) for a in sample.args]
    kwargs = {k: convert(v) for k, v in sample.kwargs.items()}
    return args, kwargs, leaves


def with_layout(value: np.ndarray, layout: str = "contiguous") -> torch.Tensor:
    """A torch tensor with the values (bfloat16 too) and the memory layout the probe
    gives tinytrain."""
    value = np.asarray(value)
    if value.dtype == BFLOAT16:
        return with_layout(value.astype(np.float32), layout).bfloat16()
    if layout == "transposed":
        dims = tuple(reversed(range(value.ndim)))
        return torch.from_numpy(np.ascontiguousarray(value.transpose())).permute(dims).detach()
    if layout == "sliced":
        return torch.from_numpy(np.repeat(value, 2, axis=-1))[..., ::2].detach()
    if layout == "offset":  # a view one element into each dim of a larger buffer
        base = torch.zeros(tuple(n + 1 for n in value.shape) or (2,),
                           dtype=torch.from_numpy(value[None]).dtype)
        view = base[(slice(1, None),) * value.ndim] if value.ndim else base[1:].reshape(())
        view.copy_(torch.from_numpy(np.array(value, copy=True)))
        return view.detach()
    # contiguous; and flipped: torch has no negative strides, and its values are the same
    return torch.from_numpy(np.array(value, copy=True))


def _outputs(result: Any) -> list[torch.Tensor]:
    return list(result) if isinstance(result, tuple) else [result]


def _numpy(t: torch.Tensor) -> np.ndarray:
    if t.dtype == torch.bfloat16:  # NumPy has no bfloat16: through float32 (exact)
        return t.detach().float().numpy().astype(BFLOAT16)
    return np.array(t.detach().numpy(), copy=True)


def forward(op: OpInfo, sample: Sample) -> list[np.ndarray]:
    """torch's outputs for the sample."""
    args, kwargs, _ = torch_args(sample, requires_grad=False)
    return [_numpy(o) for o in _outputs(op.torch(*args, **kwargs))]


def result_dtype(op: OpInfo, sample: Sample) -> np.dtype:
    """The dtype of torch's first output."""
    return forward(op, sample)[0].dtype


def grad_outputs(op: OpInfo, outputs: list[np.ndarray], rng: np.random.Generator,
                 values: tuple[float, ...] | None = None) -> list[np.ndarray | None]:
    """An incoming gradient for the differentiable output (None for the others): uniform
    in [-1, 1], or drawn from ``values``."""
    grads: list[np.ndarray | None] = [None] * len(outputs)
    out = outputs[op.grad_output]
    if values is None:
        grad = rng.uniform(-1.0, 1.0, out.shape)
    else:
        grad = rng.choice(np.asarray(values, dtype=np.float64), out.shape)
    grads[op.grad_output] = np.asarray(grad, dtype=out.dtype)
    return grads


def backward(op: OpInfo, sample: Sample, grads: list[np.ndarray | None]
             ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """torch's outputs and the gradient of every differentiable input."""
    args, kwargs, leaves = torch_args(sample)
    outs = _outputs(op.torch(*args, **kwargs))
    pairs = [(o, with_layout(g)) for o, g in zip(outs, grads, strict=True) if g is not None]
    computed = torch.autograd.grad(
        [o for o, _ in pairs], leaves, [g for _, g in pairs],
        allow_unused=True, materialize_grads=True,
    )
    return [_numpy(o) for o in outs], [_numpy(g) for g in computed]


LOW_PRECISION = (np.dtype(np.float16), BFLOAT16)


def backward_opmath(op: OpInfo, sample: Sample, grads: list[np.ndarray | None]
                    ) -> list[np.ndarray]:
    """``backward``'s input gradients, but for float16 and bfloat16 inputs computed by torch in float32 on
    the same values and rounded once to the dtypes torch gives (its "opmath", as its
    CUDA kernels and tinytrain's ``Function.apply`` compute). torch's CPU backward
    formulas for low precision round every intermediate step instead (``pow``'s
    ``grad * b * a ** (b - 1)`` is three roundings; var's ``x - mean`` cancels in
    float16), a few ulps from the correctly rounded gradient, which the dtype's
    tolerance of one ulp or two cannot absorb."""
    low = {id(t): t.value.astype(np.float32) for t in sample.tensors()
           if t.value.dtype in LOW_PRECISION}
    if not low:
        return backward(op, sample, grads)[1]
    leaf_dtypes = [t.value.dtype for t in sample.differentiable()
                   if t.value.dtype.kind == "f" or t.value.dtype == BFLOAT16]
    wide = [None if g is None else g.astype(np.float32) if g.dtype in LOW_PRECISION else g
            for g in grads]
    args, kwargs, leaves = torch_args(sample, values=low)
    outs = _outputs(op.torch(*args, **kwargs))
    pairs = [(o, with_layout(g)) for o, g in zip(outs, wide, strict=True) if g is not None]
    computed = torch.autograd.grad(
        [o for o, _ in pairs], leaves, [g for _, g in pairs],
        allow_unused=True, materialize_grads=True,
    )
    with np.errstate(over="ignore"):  # beyond float16's range: inf, as torch rounds
        return [_numpy(g).astype(dt) for g, dt in zip(computed, leaf_dtypes, strict=True)]


def finite_differences(op: OpInfo, sample: Sample, grads: list[np.ndarray | None],
                       eps: float = 1e-6) -> list[np.ndarray]:
    """d(sum_k grads_k * out_k)/d(input) for every differentiable input, by central
    differences of torch's forward in float64 (gradcheck's method)."""

    def objective(values: dict[int, np.ndarray]) -> float:
        args, kwargs, _ = torch_args(sample, values, requires_grad=False)
        with torch.no_grad():
            outs = _outputs(op.torch(*args, **kwargs))
        return float(sum(np.sum(g.astype(np.float64) * o.numpy().astype(np.float64))
                         for o, g in zip(outs, grads, strict=True) if g is not None))

    result = []
    for t in sample.differentiable():
        base = t.value.astype(np.float64)
        estimate = np.zeros_like(base)
        for i in np.ndindex(base.shape):
            plus, minus = base.copy(), base.copy()
            plus[i] += eps
            minus[i] -= eps
            estimate[i] = (objective({id(t): plus}) - objective({id(t): minus})) / (2 * eps)
        result.append(estimate)
    return result
