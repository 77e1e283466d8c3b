"""The kernel table of assignment 6: one declarative entry per Triton kernel (like the op
table's OpInfo), from which every kernel check is generated (``graders/suites/hw6_cuda``):
its values against torch on drawn launches (float32 and float16, sizes 1, tails, strided
and transposed buffers), out-of-bounds accesses and guard regions, and its sm_90 build
(tensor cores where the entry says so). ``WRAPPERS`` lists the host functions, checked
against torch and for the kernels they launch.

Adding a kernel is adding an entry: its module and signature, a case strategy (the launch
and torch's answer), hand-picked edge cases, the types it compiles with.
"""

from . import adam, attention, elementwise, layernorm, matmul, softmax
from .spec import Case, Expect, KernelInfo, Launch, WrapperInfo

KERNELS: list[KernelInfo] = [*elementwise.KERNELS, *softmax.KERNELS, *matmul.KERNELS,
                               *layernorm.KERNELS, *attention.KERNELS, *adam.KERNELS]
WRAPPERS: list[WrapperInfo] = [*elementwise.WRAPPERS, *softmax.WRAPPERS,
                               *matmul.WRAPPERS, *layernorm.WRAPPERS, *attention.WRAPPERS,
                               *adam.WRAPPERS]

_names = [k.name for k in KERNELS]
assert len(_names) == len(set(_names)), "kernel table names must be unique"

__all__ = ["KERNELS", "WRAPPERS", "Case", "Expect", "KernelInfo", "Launch", "WrapperInfo"]
