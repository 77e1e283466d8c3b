"""Probes for tasks 4.4 (``tt.amp.initialize``, ``scale_loss``, ``LossScaler``) and 4.5
(``tt.amp.apply_layer_policy``).

The training loop and the scaler's run are the scenarios of ``_opt_levels`` (written
once; the oracle runs them with torch). The models are the probes' own: ``Net`` (linear,
relu, linear) built from Functions defined here, which compute in float32 and round
their results to the inputs' dtype once (as torch's low-precision kernels do), so that
the oracle can do exactly the same in torch. ``Recorder`` modules only record how their
forward was called. The optimizer is ``Plain`` (p -= lr * grad) from ``probes.amp``.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from . import _opt_levels, probe
from ._modules import build
from ._observe import array, raised
from .amp import plain_class
from .modules import lib as modules_lib

_CACHE: dict[int, Any] = {}


def net_classes(tt: Any) -> Any:
    """``(Net, Linear32, Relu, Mse)`` for this tinytrain (made once per module)."""
    if id(tt) in _CACHE:
        return _CACHE[id(tt)]
    base = type("OptLevelFunction", (tt.autograd.Function,), {"opmath": False})
    f32 = np.float32

    class Linear32(base):
        """x @ w + b in float32, rounded once to x's dtype; gradients likewise. Under
        autocast (O1) its inputs are cast to float16, like torch's linear."""

        autocast_policy = "lower_precision"

        @staticmethod
        def forward(ctx, x, w, b):
            ctx.save_for_backward(x, w)
            ctx.dtypes = (x.data.dtype, w.data.dtype, b.data.dtype)
            out = x.data.astype(f32) @ w.data.astype(f32) + b.data.astype(f32)
            return out.astype(x.data.dtype)

        @staticmethod
        def backward(ctx, grad):
            x, w = ctx.saved_tensors
            g = grad.astype(f32)
            dx, dw, db = ctx.dtypes
            with np.errstate(over="ignore", invalid="ignore"):
                return ((g @ w.data.astype(f32).T).astype(dx),
                        (x.data.astype(f32).T @ g).astype(dw), g.sum(axis=0).astype(db))

    class Relu(base):
        """max(x, 0), NaN kept (as torch's relu); gradient where the result is > 0."""

        @staticmethod
        def forward(ctx, x):
            out = np.maximum(x.data, x.data.dtype.type(0))
            ctx.mask = out > 0
            return out

        @staticmethod
        def backward(ctx, grad):
            return np.where(ctx.mask, grad, 0).astype(grad.dtype)

    class Mse(base):
        """mean((out - y)**2) in float32."""

        @staticmethod
        def forward(ctx, out, y):
            ctx.diff = out.data.astype(f32) - y.data.astype(f32)
            ctx.dtype = out.data.dtype
            return np.asarray(np.mean(ctx.diff * ctx.diff), dtype=f32)

        @staticmethod
        def backward(ctx, grad):
            with np.errstate(over="ignore", invalid="ignore"):
                g = (f32(2.0) / f32(ctx.diff.size)) * ctx.diff * grad.astype(f32)
            return g.astype(ctx.dtype), None

    class Net(tt.nn.Module):
        def __init__(self, weights: dict[str, Any]) -> None:
            super().__init__()
            for name in ("w1", "b1", "w2", "b2"):
                setattr(self, name, tt.nn.Parameter(tt.tensor(np.asarray(weights[name]))))

        def forward(self, x: Any) -> Any:
            h = Relu.apply(Linear32.apply(x, self.w1, self.b1))
            return Linear32.apply(h, self.w2, self.b2)

    _CACHE[id(tt)] = (Net, Linear32, Relu, Mse)
    return _CACHE[id(tt)]


def _dtype(t: Any) -> str:
    return str(t.data.dtype)


def _recorder_class(tt: Any) -> type:
    class Recorder(tt.nn.Module):
        """Records [autocast on?, input dtype] per call and returns its input."""

        def __init__(self) -> None:
            super().__init__()
            self.w = tt.nn.Parameter(tt.tensor(np.ones(2, np.float32)))
            self.seen: list[Any] = []

        def forward(self, x: Any) -> Any:
            self.seen.append([bool(tt.amp.is_autocast_enabled()), _dtype(x)])
            return x

    return Recorder


@probe
def initialize_state(tt: Any, level: str, weights: dict[str, Any]) -> dict[str, Any]:
    """What ``initialize`` does to a Net and a Plain optimizer at ``level``: parameter
    dtypes, what the optimizer holds, the loss scale, and how forward is called."""
    Net = net_classes(tt)[0]  # noqa: N806
    model = Net(weights)
    before = list(model.parameters())
    opt = plain_class(tt)(model.parameters(), lr=0.1)
    model, amp_opt = tt.amp.initialize(model, opt, opt_level=level)
    held = [p for g in amp_opt.param_groups for p in g["params"]]
    recorder = _recorder_class(tt)()
    tt.amp.initialize(recorder, plain_class(tt)(recorder.parameters()), opt_level=level)
    out = recorder(tt.tensor(np.ones(2, np.float32)))
    return {
        "same_parameter_objects": all(a is b for a, b in zip(before, model.parameters())),
        "param_dtypes": [_dtype(p) for p in model.parameters()],
        "optimizer_dtypes": [_dtype(p) for p in held],
        "optimizer_holds_model_params": [any(h is p for p in before) for h in held],
        "optimizer_values": [array(p) for p in held],
        "optimizer_requires_grad": [bool(p.requires_grad) for p in held],
        "loss_scale": float(amp_opt.loss_scaler.loss_scale()),
        "forward_saw": recorder.seen,
        "output_dtype": _dtype(out),
        "bad_level": raised(lambda: tt.amp.initialize(Net(weights), plain_class(tt)(
            Net(weights).parameters()), opt_level="O4")),
    }


def _lib(tt: Any) -> SimpleNamespace:
    """The adapters ``_opt_levels`` needs, for tinytrain (each looked up when called, as
    the probes did before: a scaler run needs no Net)."""
    return SimpleNamespace(
        Net=lambda weights: net_classes(tt)[0](weights),
        mse=lambda out, y: net_classes(tt)[3].apply(out, y),
        Plain=lambda params, lr: plain_class(tt)(params, lr=lr),
        initialize=lambda *args, **kwargs: tt.amp.initialize(*args, **kwargs),
        scale_loss=lambda loss, opt: tt.amp.scale_loss(loss, opt),
        LossScaler=lambda **config: tt.amp.LossScaler(**config),
        tensor=lambda values: tt.tensor(np.asarray(values)),
        array=array,
        grad=lambda p: None if p.grad is None else array(p.grad),
        item=lambda t: float(np.asarray(t.data)),
    )


@probe
def train_run(tt: Any, level: str, weights: dict[str, Any], batches: list[Any],
              lr: float, loss_scale: float | None = None) -> list[dict[str, Any]]:
    """``_opt_levels.train_run``: a Net trained at ``level`` with the APEX loop, step by
    step."""
    return _opt_levels.train_run(_lib(tt), level, weights, batches, lr, loss_scale)


@probe
def loss_scaler_run(tt: Any, config: dict[str, Any], overflows: list[bool]) -> list[float]:
    """``_opt_levels.loss_scaler_run``: the loss scale after each ``update_scale``."""
    return _opt_levels.loss_scaler_run(_lib(tt), config, overflows)


# ----- 4.5: layer-wise policy ---------------------------------------------------------
@probe
def resolved_levels(tt: Any, spec: dict[str, Any], rules: dict[str, str]) -> Any:
    """``resolve_levels`` of a module tree built from ``spec``."""
    return dict(tt.amp.resolve_levels(build(modules_lib(tt), spec), rules))


@probe
def resolve_error(tt: Any, spec: dict[str, Any], rules: dict[str, str]) -> dict[str, Any]:
    """What ``resolve_levels`` raises for these rules."""
    model = build(modules_lib(tt), spec)
    return raised(lambda: tt.amp.resolve_levels(model, rules))


@probe
def layer_policy_run(tt: Any, spec: dict[str, Any], rules: dict[str, str],
                     outer_autocast: bool) -> dict[str, Any]:
    """Apply ``rules`` to a tree of recording blocks (each block records how it was called,
    then runs its children in order) and run it once on a float32 input,
    inside an autocast region or not: what each block saw, its parameters' dtypes, and
    the output dtype, and the dtype each call of a block returned to its parent."""
    lib = modules_lib(tt)
    model = build(lib, spec)
    seen: dict[str, Any] = {}
    returned: dict[str, list[str]] = {}
    modules = dict(model.named_modules())
    for name, module in modules.items():
        _record_calls(tt, module, name, seen, returned)
    tt.amp.apply_layer_policy(model, rules)
    x = tt.tensor(np.ones(2, np.float32))
    if outer_autocast:
        with tt.amp.autocast("cuda"):
            out = model(x)
    else:
        out = model(x)
    return {
        "seen": seen,
        "returned": returned,
        "param_dtypes": {f"{name}.{p}": _dtype(t) for name, m in modules.items()
                         for p, t in m._parameters.items() if t is not None},
        "param_values": {f"{name}.{p}": array(t) for name, m in modules.items()
                         for p, t in m._parameters.items() if t is not None},
        "output_dtype": _dtype(out),
    }


def _record_calls(tt: Any, module: Any, name: str, seen: dict[str, Any],
                  returned: dict[str, list[str]]) -> None:
    """Give ``module`` (a block of ``_modules.build``) a forward that records [autocast
    on?, input dtype, parameter dtype] and passes its input through its children,
    recording the dtype of what each child's call returns (under the child's name)."""

    def forward(x: Any) -> Any:
        w = module._parameters.get("w")
        seen.setdefault(name, []).append(
            [bool(tt.amp.is_autocast_enabled()), _dtype(x), None if w is None else _dtype(w)])
        for child_name, child in module._modules.items():
            x = child(x)
            returned.setdefault(f"{name}.{child_name}" if name else child_name, []).append(
                _dtype(x))
        return x

    module.forward = forward


@probe
def layer_policy_params(tt: Any, spec: dict[str, Any], rules: dict[str, str]) -> dict[str, Any]:
    """Apply ``rules`` to the model ``spec`` describes: every module's own parameters
    (qualified name: values, in their dtype) afterwards."""
    model = build(modules_lib(tt), spec)
    modules = dict(model.named_modules())
    tt.amp.apply_layer_policy(model, rules)
    return {f"{name}.{p}": array(t) for name, m in modules.items()
            for p, t in m._parameters.items() if t is not None}
