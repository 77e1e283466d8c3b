"""Task 6.7: the ``cuda`` device.

``tensor.to("cuda")`` (``.cuda()``, ``device="cuda"`` on the creation functions,
``module.to("cuda")``) puts a tensor's storage on the device. ``Function.apply`` sends a
call with cuda tensors here (``kernel_function``): ops that only move data (views,
reshape, permute, indexing, cat) run as they are; every op that computes runs its
kernel-backed twin from ``CUDA_FUNCTIONS``, whose forward and backward launch the Triton
kernels of tasks 6.1-6.6 (and a few given ones), under the same autograd engine. The
optimizers update device parameters with the fused Adam kernel.

Where no GPU exists the kernels run under Triton's interpreter on the tensors' host
memory: slow, and exactly the same code path.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.dispatch import dispatch
from ..autograd.function import BackwardNode, Function
from ..device_state import SELF_PLACING, CudaArray, active, to_device_array, to_host_array
from ..ops import activation, arithmetic, layers, linalg, loss, shape
from ..tensor import Tensor
from . import _common
from .adam import adam_step
from .attention import flash_attention, flash_attention_backward
from .cross_entropy import cross_entropy
from .elementwise import bias_gelu, bias_gelu_backward
from .layernorm import layer_norm, layer_norm_backward
from .matmul import matmul
from .softmax import softmax, softmax_backward


def parse_device(device: Any) -> str | None:
    """"cuda" / "cuda:0" -> "cuda", "cpu" -> "cpu"; anything else is not a device."""
    name = str(getattr(device, "type", device))
    if name in ("cuda", "cuda:0"):
        return "cuda"
    if name == "cpu":
        return "cpu"
    return None


class ToDevice(Function):
    """A copy to another device; its gradient is copied back."""

    opmath = False

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, device: str) -> np.ndarray:
        ctx.source = "cuda" if isinstance(a.data, CudaArray) else "cpu"
        copy = np.array(a.data, copy=True)
        return to_device_array(copy) if device == "cuda" else to_host_array(copy)

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray, None]:
        copy = np.array(grad, copy=True)
        return (to_device_array(copy) if ctx.source == "cuda" else to_host_array(copy)), None


SELF_PLACING.add(ToDevice)


def to_device(tensor: Tensor, device: Any) -> Tensor:
    """``tensor.to(device)``: the tensor itself when it is there already, else a copy."""
    target = parse_device(device)
    if target is None:
        raise RuntimeError(f"Expected one of cpu, cuda device type at start of device "
                           f"string: {device}")
    here = "cuda" if isinstance(tensor.data, CudaArray) else "cpu"
    if target == here:
        return tensor
    if target == "cuda":
        active.value = True
    return ToDevice.apply(tensor, target)


# ----- ops the framework gives on the device (not homework) ---------------------------
def _dtype(*tensors: Tensor) -> np.dtype:
    return np.result_type(*[t.data.dtype for t in tensors])


class CudaBinary(Function):
    """a (+ - * /) b with broadcasting, by the given elementwise kernel."""

    opmath = False
    op = "add"

    @classmethod
    def forward(cls, ctx: BackwardNode, a: Tensor, b: Tensor) -> np.ndarray:
        ctx.save_for_backward(a if cls.op in ("mul", "div") else None,
                              b if cls.op in ("mul", "div") else None)
        ctx.shapes = (a.shape, b.shape)
        return _common.binary(cls.op, a.data, b.data, _dtype(a, b))

    @classmethod
    def backward(cls, ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        a, b = ctx.saved_tensors
        a_shape, b_shape = ctx.shapes
        if cls.op == "add":
            ga, gb = grad, grad
        elif cls.op == "sub":
            ga, gb = grad, _common.binary("mul", grad, np.array(-1, grad.dtype), grad.dtype)
        elif cls.op == "mul":
            ga = _common.binary("mul", grad, b.data, grad.dtype)
            gb = _common.binary("mul", grad, a.data, grad.dtype)
        else:  # d(a/b) = g / b, -g a / b**2
            ga = _common.binary("div", grad, b.data, grad.dtype)
            gb = _common.binary("mul", _common.binary("div", ga, b.data, grad.dtype),
                                _common.binary("mul", a.data, np.array(-1, grad.dtype),
                                               grad.dtype), grad.dtype)
        needs = ctx.needs_input_grad
        return (_common.sum_to_shape(ga, a_shape) if needs[0] else None,
                _common.sum_to_shape(gb, b_shape) if needs[1] else None)


class CudaAdd(CudaBinary):
    op = "add"


class CudaSub(CudaBinary):
    op = "sub"


class CudaMul(CudaBinary):
    op = "mul"


class CudaDiv(CudaBinary):
    op = "div"


class CudaWhere(Function):
    """where(condition, a, b), by the given where kernel."""

    opmath = False

    @staticmethod
    def forward(ctx: BackwardNode, condition: Tensor, a: Tensor, b: Tensor) -> np.ndarray:
        ctx.condition = condition.data
        ctx.shapes = (a.shape, b.shape)
        return _common.where(condition.data, a.data, b.data, _dtype(a, b))

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[None, np.ndarray, np.ndarray]:
        zero = np.zeros((), grad.dtype)
        a_shape, b_shape = ctx.shapes
        grad_a = _common.where(ctx.condition, grad, zero, grad.dtype)
        grad_b = _common.where(ctx.condition, zero, grad, grad.dtype)
        return None, _common.sum_to_shape(grad_a, a_shape), _common.sum_to_shape(grad_b, b_shape)


class CudaEmbedding(Function):
    """Rows of the weight by index (gather), and their gradient added back (scatter-add)."""

    opmath = False

    @staticmethod
    def forward(ctx: BackwardNode, indices: Tensor, weight: Tensor,
                padding_idx: int | None) -> np.ndarray:
        idx = np.asarray(indices.data)
        if idx.size and (idx.min() < 0 or idx.max() >= weight.shape[0]):
            raise IndexError("index out of range in self")
        ctx.indices, ctx.rows, ctx.padding_idx = idx, weight.shape[0], padding_idx
        return _common.gather_rows(weight.data, idx)

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[None, np.ndarray]:
        grad_weight = _common.scatter_add_rows(grad, ctx.indices, ctx.rows)
        if ctx.padding_idx is not None:
            grad_weight[ctx.padding_idx] = 0
        return None, grad_weight


# ----- the kernel-backed twins of the computing ops (task 6.7) ------------------------
def _rows(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1, a.shape[-1])


class CudaLinear(Function):
    """x @ weight.T + bias on the device: the matmul kernel (6.3), a given bias add."""

    opmath = False

    @staticmethod
    def forward(ctx: BackwardNode, x: Tensor, weight: Tensor, bias: Tensor | None) -> np.ndarray:
        # HINT: (*, in) as (rows, in); weight.data.T is a strided view: matmul takes it
        raise NotImplementedError("task 6.7: The cuda device: tensors whose ops run these kernels under autograd")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        # HINT: dx = g @ W, dW = g.T @ x (rows), db = column sums of g (_common.sum_rows)
        raise NotImplementedError("task 6.7: The cuda device: tensors whose ops run these kernels under autograd")


def _batched(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b with broadcast batch dims, one matmul launch per matrix of the batch."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a_b = np.broadcast_to(a, (*batch, *a.shape[-2:]))
    b_b = np.broadcast_to(b, (*batch, *b.shape[-2:]))
    out = np.empty((*batch, a.shape[-2], b.shape[-1]), np.result_type(a, b))
    for index in np.ndindex(*batch):
        out[index] = matmul(a_b[index], b_b[index])
    return out


class CudaMatmul(Function):
    """a @ b on the device (2-D and batched, batch dims broadcast; no 1-D operands)."""

    opmath = False

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, b: Tensor) -> np.ndarray:
        if a.ndim < 2 or b.ndim < 2:
            raise RuntimeError("tinytrain's cuda matmul takes operands of 2 or more dims")
        # HINT: _batched runs the 6.3 kernel per matrix; backward sums broadcast batch dims
        # HINT: back with _common.sum_to_shape
        raise NotImplementedError("task 6.7: The cuda device: tensors whose ops run these kernels under autograd")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        raise NotImplementedError("task 6.7: The cuda device: tensors whose ops run these kernels under autograd")


class CudaGelu(Function):
    """GELU on the device: the bias + GELU kernels of 6.1 with a zero bias."""

    opmath = False

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, approximate: str) -> np.ndarray:
        raise NotImplementedError("task 6.7: The cuda device: tensors whose ops run these kernels under autograd")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        raise NotImplementedError("task 6.7: The cuda device: tensors whose ops run these kernels under autograd")


class CudaSoftmax(Function):
    """softmax along one dim on the device (6.2's kernels)."""

    opmath = False
    log = False

    @classmethod
    def forward(cls, ctx: BackwardNode, a: Tensor, axis: tuple[int, ...]) -> np.ndarray:
        if a.ndim == 0:
            raise RuntimeError("tinytrain's cuda softmax takes tensors of 1 or more dims")
        # HINT: save the output: both backward formulas read it
        raise NotImplementedError("task 6.7: The cuda device: tensors whose ops run these kernels under autograd")

    @classmethod
    def backward(cls, ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:
        raise NotImplementedError("task 6.7: The cuda device: tensors whose ops run these kernels under autograd")


class CudaLogSoftmax(CudaSoftmax):
    log = True


class CudaLayerNorm(Function):
    """LayerNorm over the last dim on the device (6.4's kernels)."""

    opmath = False

    @staticmethod
    def forward(ctx: BackwardNode, input: Tensor, normalized_shape: tuple[int, ...],
                weight: Tensor | None, bias: Tensor | None, eps: float) -> np.ndarray:
        if len(normalized_shape) != 1:
            raise RuntimeError("tinytrain's cuda layer_norm normalises the last dim only")
        # HINT: no weight (bias): ones (zeros); save what layer_norm_backward needs
        raise NotImplementedError("task 6.7: The cuda device: tensors whose ops run these kernels under autograd")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        raise NotImplementedError("task 6.7: The cuda device: tensors whose ops run these kernels under autograd")


class CudaCrossEntropy(Function):
    """Cross entropy of (rows, classes) logits on the device: the fused kernel of 6.4
    gives the per-row losses and the gradient at once."""

    opmath = False

    @staticmethod
    def forward(ctx: BackwardNode, input: Tensor, target: Tensor, ignore_index: int,
                reduction: str, label_smoothing: float) -> np.ndarray:
        if input.ndim != 2 or label_smoothing:
            raise RuntimeError("tinytrain's cuda cross_entropy takes (rows, classes) logits "
                               "without label smoothing")
        # HINT: keep the kernel's dlogits (for grad_scale 1 / count with "mean", else 1):
        # HINT: backward only scales it by the incoming gradient
        raise NotImplementedError("task 6.7: The cuda device: tensors whose ops run these kernels under autograd")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray, None]:
        raise NotImplementedError("task 6.7: The cuda device: tensors whose ops run these kernels under autograd")


class FlashAttention(Function):
    """softmax(q k^T * scale (causally masked)) v over (Z, H, T, D) device tensors, by the
    FlashAttention kernels of 6.5."""

    opmath = False

    @staticmethod
    def forward(ctx: BackwardNode, q: Tensor, k: Tensor, v: Tensor, is_causal: bool,
                scale: float) -> np.ndarray:
        # HINT: save the output and the logsumexp: the backward recomputes P from them
        raise NotImplementedError("task 6.7: The cuda device: tensors whose ops run these kernels under autograd")

    @staticmethod
    def backward(ctx: BackwardNode, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        raise NotImplementedError("task 6.7: The cuda device: tensors whose ops run these kernels under autograd")


def flash_sdpa(query: Tensor, key: Tensor, value: Tensor, is_causal: bool,
               scale: float) -> Tensor:
    """``scaled_dot_product_attention`` of device tensors, by the FlashAttention kernels
    (head dim a power of two, at least 16)."""
    d = query.shape[-1]
    if d < 16 or d & (d - 1):
        raise RuntimeError(f"head dim {d}: the FlashAttention kernels take a power of two >= 16")
    return FlashAttention.apply(query, key, value, is_causal, scale)


def fused_adam_step(optimizer: Any, param: Tensor, group: dict[str, Any]) -> None:
    """One Adam/AdamW step of a device parameter by the fused kernel (6.6): the state is
    made on the first step (zeros on the device), as in ``Adam.step``."""
    if group["amsgrad"] or group["maximize"] or param.data.dtype != np.float32:
        raise RuntimeError("tinytrain's fused cuda Adam takes float32 parameters without "
                           "amsgrad or maximize")
    # HINT: the kernel updates flat contiguous float32 buffers in place: param.data itself
    # HINT: (reshape(-1) of a contiguous array is a view) and the two moment buffers
    raise NotImplementedError("task 6.7: The cuda device: tensors whose ops run these kernels under autograd")


# ----- dispatch -------------------------------------------------------------------------
CUDA_FUNCTIONS: dict[type[Function], type[Function]] = {
    arithmetic.Add: CudaAdd,
    arithmetic.Sub: CudaSub,
    arithmetic.Mul: CudaMul,
    arithmetic.Div: CudaDiv,
    arithmetic.Where: CudaWhere,
    linalg.Linear: CudaLinear,
    linalg.Matmul: CudaMatmul,
    activation.Gelu: CudaGelu,
    activation.Softmax: CudaSoftmax,
    activation.LogSoftmax: CudaLogSoftmax,
    layers.LayerNorm: CudaLayerNorm,
    layers.Embedding: CudaEmbedding,
    loss.CrossEntropy: CudaCrossEntropy,
}
DEVICE_FUNCTIONS = frozenset({ToDevice, FlashAttention, *CUDA_FUNCTIONS.values()})
# ops that only move data (views, reshape, indexing, cat): they run as they are
DATA_MOVEMENT = frozenset({shape.View, shape.Reshape, shape.Permute, shape.Expand,
                           shape.GetItem, shape.Cat, shape.Stack, shape.Contiguous})


def kernel_function(cls: type[Function]) -> type[Function]:
    """The Function that runs ``cls`` on device tensors."""
    if cls in DEVICE_FUNCTIONS or cls in DATA_MOVEMENT:
        return cls
    twin = CUDA_FUNCTIONS.get(cls)
    if twin is None:
        raise RuntimeError(
            f"tinytrain has no cuda kernel for {cls.__name__}: the cuda device runs "
            f"{', '.join(sorted(c.__name__ for c in CUDA_FUNCTIONS))} and data movement "
            "(move the tensor to the CPU with .cpu() for the rest)")
    return twin


dispatch.register(kernel_function=kernel_function)
