"""Wrong variants for assignment 6 (Triton kernels and the cuda device), and correct
alternatives. Ids start with ``cuda-`` (``pytest tests/test_mutants.py -k cuda``)."""

from . import Mutant

MUTANTS = [
    # ----- 6.1 elementwise --------------------------------------------------------------
    Mutant(
        id="cuda-add-unmasked-tail",
        task="6.1",
        file="cuda/elementwise.py",
        find="    tl.store(out_ptr + offsets, x + y, mask=mask)",
        replace="    tl.store(out_ptr + offsets, x + y)",
        why="the last program stores its whole block, past the end of the output",
    ),
    Mutant(
        id="cuda-add-wrapper-numpy",
        task="6.1",
        file="cuda/elementwise.py",
        find="    launch(add_kernel, (cdiv(x.size, ADD_BLOCK),), x, y, out, x.size, "
             "BLOCK_SIZE=ADD_BLOCK)\n    return out",
        replace="    return x + y",
        why="the wrapper computes with NumPy instead of launching the kernel",
    ),
]


MUTANTS += [
    # ----- 6.2 softmax ---------------------------------------------------------------
    Mutant(
        id="cuda-softmax-unstable",
        task="6.2",
        file="cuda/softmax.py",
        find="        m_new = tl.maximum(m, x)\n",
        replace="        m_new = tl.zeros_like(m)\n",
        why="exp(x) / sum(exp(x)) without subtracting the maximum: inf / inf at logits of 1e4",
    ),
    Mutant(
        id="cuda-softmax-reads-past-row",
        task="6.2",
        file="cuda/softmax.py",
        find="        x = tl.load(x_row + cols * stride_xc, mask=mask, other=0.0).to(tl.float32)\n",
        replace="        x = tl.load(x_row + cols * stride_xc).to(tl.float32)\n",
        why="the output pass loads whole blocks past the end of the row (the store is masked, "
            "so the values are right; the last row reads past the buffer)",
    ),
]

MUTANTS += [
    # ----- 6.3 matmul ----------------------------------------------------------------
    Mutant(
        id="cuda-matmul-fp16-accumulation",
        task="6.3",
        file="cuda/matmul.py",
        find="    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n",
        replace="    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=c_ptr.dtype.element_ty)\n",
        why="the accumulator has the output's dtype: float16 products accumulate in float16",
    ),
    Mutant(
        id="cuda-matmul-contiguous-only",
        task="6.3",
        file="cuda/matmul.py",
        find="        a = tl.load(a_ptr + rm[:, None] * stride_am + (k + rk)[None, :] * stride_ak,",
        replace="        a = tl.load(a_ptr + rm[:, None] * stride_am + (k + rk)[None, :],",
        why="the kernel assumes a's rows are contiguous (stride_ak == 1): transposed or strided "
            "inputs read the wrong elements",
    ),
    Mutant(
        id="cuda-matmul-off-by-one-edge",
        task="6.3",
        file="cuda/matmul.py",
        find="             acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))",
        replace="             acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] <= M) & (rn[None, :] < N))",
        why="the store mask lets the row just past the last tile's edge through",
    ),
]

MUTANTS += [
    # ----- 6.4 LayerNorm and cross-entropy --------------------------------------------
    Mutant(
        id="cuda-layernorm-dw-no-row-reduction",
        task="6.4",
        file="cuda/layernorm.py",
        find="        dw += dy * xhat\n",
        replace="        dw = dy * xhat\n",
        why="each program's dW share keeps its last row only instead of summing its rows",
    ),
    Mutant(
        id="cuda-cross-entropy-no-ignore",
        task="6.4",
        file="cuda/cross_entropy.py",
        find="    scale = tl.where(ignored, 0.0, grad_scale)\n",
        replace="    scale = grad_scale\n",
        why="rows whose target is ignore_index still get a gradient",
    ),
    Mutant(
        id="cuda-layernorm-masked-lanes-undefined",
        task="6.4",
        file="cuda/layernorm.py",
        find="    x = tl.load(x_ptr + row * stride_xr + cols, mask=mask, other=0.0).to(tl.float32)\n"
             "    mean = tl.sum(x, 0) / n_cols\n",
        replace="    x = tl.load(x_ptr + row * stride_xr + cols, mask=mask).to(tl.float32)\n"
                "    mean = tl.sum(x, 0) / n_cols\n",
        why="the mean sums the block's masked-out lanes, which a load without other leaves "
            "undefined (the interpreter happens to give 0; the grader fills them with NaN)",
    ),
]

MUTANTS += [
    # ----- 6.5 attention ---------------------------------------------------------------
    Mutant(
        id="cuda-attention-causal-off-by-one",
        task="6.5",
        file="cuda/attention.py",
        find="            valid = valid & (offs_m[:, None] >= cols[None, :])\n",
        replace="            valid = valid & (offs_m[:, None] > cols[None, :])\n",
        why="the causal mask hides the diagonal: a query does not see its own key",
    ),
]

MUTANTS += [
    # ----- 6.6 Adam --------------------------------------------------------------------
    Mutant(
        id="cuda-adam-no-bias-correction",
        task="6.6",
        file="cuda/adam.py",
        find="    bias_correction1 = 1.0 - beta1_pow\n    bias_correction2 = 1.0 - beta2_pow\n",
        replace="    bias_correction1 = 1.0\n    bias_correction2 = 1.0\n",
        why="Adam without bias correction: the first steps are far too small",
    ),
]

MUTANTS += [
    # ----- 6.7 the device ----------------------------------------------------------------
    Mutant(
        id="cuda-device-softmax-numpy",
        task="6.7",
        file="cuda/device.py",
        find="        result = softmax(a.data, axis[0], log=cls.log)\n",
        replace="        x = a.data - a.data.max(axis=axis[0], keepdims=True)\n"
                "        e = np.log(np.exp(x).sum(axis=axis[0], keepdims=True))\n"
                "        result = x - e if cls.log else np.exp(x - e)\n",
        why="the device's softmax computes with NumPy instead of launching the kernel",
    ),
    Mutant(
        id="cuda-device-linear-no-bias-grad",
        task="6.7",
        file="cuda/device.py",
        find="        grad_b = _common.sum_rows(g) if len(needs) > 2 and needs[2] else None\n",
        replace="        grad_b = None\n",
        why="the device's linear gives the bias no gradient",
    ),
]

ALTERNATIVES: list[Mutant] = [
    Mutant(
        id="cuda-alt-matmul-k-reversed",
        task="6.3",
        file="cuda/matmul.py",
        find="    for k in range(0, K, BLOCK_K):\n",
        replace="    steps = tl.cdiv(K, BLOCK_K)\n    for kk in range(0, steps):\n"
                "        k = (steps - 1 - kk) * BLOCK_K\n",
        why="the K blocks are summed last to first (another loop order)",
    ),
    Mutant(
        id="cuda-alt-matmul-wrapper-tiles",
        task="6.3",
        file="cuda/matmul.py",
        find="BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M = 32, 32, 32, 4",
        replace="BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M = 16, 64, 16, 1",
        why="the wrapper launches with other tile sizes and no grouping",
    ),
]

# Killing the survivors of scripts/mutation_test.py (mutmut's operators over the solution
# regions): each stands for a surviving mutant that a new check now catches.
MUTANTS += [
    Mutant(
        id="device-linear-dx-follows-the-weight",
        task="6.7",
        file="cuda/device.py",
        find="        grad_x = matmul(g, weight.data).reshape(x.shape) if needs[0] else None\n",
        replace="        grad_x = matmul(g, weight.data).reshape(x.shape) if needs[1] else None\n",
        why="the device linear's input gradient is computed when the weight needs one "
            "(mutant 6.7-6dcbc239b6): x gets no gradient through a frozen layer",
    ),
]

MUTANTS += [
    Mutant(
        id="cuda-attention-backward-dk-tf32",
        task="6.5",
        file="cuda/attention.py",
        find="            dk += tl.dot(tl.trans(ds), q, input_precision=\"ieee\")\n",
        replace="            dk += tl.dot(tl.trans(ds), q)\n",
        why="the float32 dk product of the attention backward without input_precision=\"ieee\" "
            "(mutant 6.5-182d4fa08f does it to dq): right under the interpreter, TF32 on a GPU",
    ),
]

MUTANTS += [
    Mutant(
        id="device-cross-entropy-mean-over-all-rows",
        task="6.7",
        file="cuda/device.py",
        find="        scale = 1.0 / count if reduction == \"mean\" and count else 1.0\n",
        replace="        scale = 1.0 / len(targets) if reduction == \"mean\" and count else 1.0\n",
        why="the gradient of the mean cross entropy is divided by the number of rows, ignored "
            "targets included (mutant 6.7-12ac5dad1d does not divide it at all)",
    ),
    Mutant(
        id="device-gelu-scalar-unhandled",
        task="6.7",
        file="cuda/device.py",
        find="        zero = np.zeros(a.shape[-1:] if a.ndim else (1,), a.data.dtype)\n"
             "        x = a.data if a.ndim else a.data.reshape(1)\n",
        replace="        zero = np.zeros(a.shape[-1:], a.data.dtype)\n"
                "        x = a.data\n",
        why="the device's gelu hands a 0-d tensor to the row-wise kernel wrapper as it is "
            "(mutant 6.7-dde74f871d does it in backward)",
    ),
]
