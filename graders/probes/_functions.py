"""Small Functions the probes build graphs with, so the engine tasks are graded with
the submission's ``Function``/engine but without depending on its operators."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

_CACHE: dict[int, SimpleNamespace] = {}


def functions(tt: Any) -> SimpleNamespace:
    """Function subclasses of the submission's ``tt.autograd.Function``; ``ns.calls``
    logs each backward call by op name, in call order."""
    ns = _CACHE.get(id(tt))
    if ns is not None:
        return ns
    base = tt.autograd.Function
    calls: list[str] = []

    class Add(base):
        @staticmethod
        def forward(ctx, a, b):
            return a.data + b.data

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            return grad, grad

    class Mul(base):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a.data * b.data

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            a, b = ctx.saved_tensors
            return grad * b.data, grad * a.data

    class Sin(base):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return np.sin(a.data)

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            (a,) = ctx.saved_tensors
            return grad * np.cos(a.data)

    class Exp(base):
        @staticmethod
        def forward(ctx, a):
            out = np.exp(a.data)
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            (out,) = ctx.saved_tensors
            return grad * out.data

    class Square(base):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a.data * a.data

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            (a,) = ctx.saved_tensors
            return 2 * grad * a.data

    class Scale(base):
        @staticmethod
        def forward(ctx, a, k):
            ctx.k = k
            return a.data * k

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            return grad * ctx.k, None

    class Sum(base):
        @staticmethod
        def forward(ctx, a):
            ctx.shape = a.data.shape
            return np.asarray(a.data.sum())

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            return np.broadcast_to(grad, ctx.shape).copy()

    ns = SimpleNamespace(
        add=Add, mul=Mul, sin=Sin, exp=Exp, square=Square, scale=Scale, sum=Sum, calls=calls
    )
    _CACHE[id(tt)] = ns
    return ns


def apply(fns: SimpleNamespace, op: str, args: list[Any], label: str = "") -> Any:
    """Apply one probe op and tag its node with ``label`` (for the backward call log)."""
    out = getattr(fns, op).apply(*args)
    node = getattr(out, "grad_fn", None)
    if node is not None:
        node.label = label or op
    return out
