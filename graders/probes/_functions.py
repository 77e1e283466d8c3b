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
    # They compute in their inputs' dtypes (no float32 "opmath" for float16 inputs, task
    # 4.1), so the graders of other tasks that use them in float16 do not depend on 4.1.
    base = type("ProbeFunction", (tt.autograd.Function,), {"opmath": False})
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

    # ----- for assignment 3: ops that save exactly what torch's save (same tensors, same
    # order), so version errors and saved-tensor hook calls can be compared with torch;
    # and views (is_view=True), so in-place writes through views can be graded without the
    # student's assignment-2 shape ops.
    class TorchMul(base):
        """torch.mul: saves ``other`` if ``self`` needs a gradient, then ``self`` if
        ``other`` does (MulBackward0's _saved_other, _saved_self)."""

        saved_names = ("other", "self")

        @staticmethod
        def forward(ctx, a, b):
            recording = tt.is_grad_enabled()
            ctx.save_for_backward(b if recording and a.requires_grad else None,
                                  a if recording and b.requires_grad else None)
            return a.data * b.data

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            b, a = ctx.saved_tensors
            return (None if b is None else grad * b.data), (None if a is None else grad * a.data)

    class Narrow(base):
        """``a.narrow(0, start, length)``: a view of rows start..start+length."""

        is_view = True

        @staticmethod
        def forward(ctx, a, start, length):
            ctx.shape, ctx.rows = a.data.shape, slice(start, start + length)
            return a.data[ctx.rows]

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            out = np.zeros(ctx.shape, grad.dtype)
            out[ctx.rows] = grad
            return out, None, None

    class Select(base):
        """``a.select(0, index)`` (``a[index]``): a view, 0-dim for a vector."""

        is_view = True

        @staticmethod
        def forward(ctx, a, index):
            ctx.shape, ctx.index = a.data.shape, index
            return a.data[index, ...]

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            out = np.zeros(ctx.shape, grad.dtype)
            out[ctx.index, ...] = grad
            return out, None

    class Transpose(base):
        """``a.t()`` of a matrix: a view."""

        is_view = True

        @staticmethod
        def forward(ctx, a):
            return a.data.T

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            return grad.T

    class Linear(base):
        """``x @ w + b`` (saves x and w, like torch's addmm/mm)."""

        @staticmethod
        def forward(ctx, x, w, b):
            ctx.save_for_backward(x, w)
            return x.data @ w.data + b.data

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            x, w = ctx.saved_tensors
            return grad @ w.data.T, x.data.T @ grad, grad.sum(axis=0)

    class Tanh(base):
        """tanh, saving its result (like torch)."""

        @staticmethod
        def forward(ctx, a):
            out = np.tanh(a.data)
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, grad):
            calls.append(getattr(ctx, "label", "?"))
            (out,) = ctx.saved_tensors
            return grad * (1 - out.data * out.data)

    ns = SimpleNamespace(
        add=Add, mul=Mul, sin=Sin, exp=Exp, square=Square, scale=Scale, sum=Sum, calls=calls,
        torch_mul=TorchMul, narrow=Narrow, select=Select, transpose=Transpose, linear=Linear,
        tanh=Tanh,
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
