"""Wrong variants for assignment 6 (Triton kernels and the cuda device), and correct
alternatives. Ids start with ``cuda-`` (``pytest tests/suites/test_mutants.py -k cuda``)."""

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
    Mutant(
        id="cuda-matmul-ignores-out-dtype",
        task="6.3",
        file="cuda/matmul.py",
        find="    c = np.empty((m, n), out_dtype or a.dtype)",
        replace="    c = np.empty((m, n), a.dtype)",
        why="the out_dtype option ignored: the result always has the inputs' dtype",
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
    Mutant(
        id="cuda-cross-entropy-zero-grad-scale-as-default",
        task="6.4",
        file="cuda/cross_entropy.py",
        find="    if grad_scale is None:",
        replace="    if not grad_scale:",
        why="grad_scale=0.0 taken for the default (1 / rows not ignored): a falsy option "
            "treated as absent",
    ),
    Mutant(
        id="cuda-layer-norm-ignores-eps",
        task="6.4",
        file="cuda/layernorm.py",
        find="           cols, eps, BLOCK_N=_block(cols))",
        replace="           cols, 1e-5, BLOCK_N=_block(cols))",
        why="the eps option ignored: the kernel always gets the default 1e-5",
    ),
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

# Issue 19: variants that only the kernel table's new axes catch (layouts drawn for every
# buffer and wrapper argument, tile sizes drawn with BLOCK_M != BLOCK_N, special values,
# ownership of the arrays a wrapper is given)
MUTANTS += [
    Mutant(
        id="cuda-add-wrapper-writes-into-x",
        task="6.1",
        file="cuda/elementwise.py",
        find="    out = np.empty_like(x)\n",
        replace="    out = x\n",
        why="the add wrapper stores x + y into x (np.ascontiguousarray returns the caller's "
            "array when it is contiguous): the caller's input is overwritten",
    ),
    Mutant(
        id="cuda-add-wrapper-asarray",
        task="6.1",
        file="cuda/elementwise.py",
        find="    x, y = np.ascontiguousarray(x), np.ascontiguousarray(y)\n",
        replace="    x, y = np.asarray(x), np.asarray(y)\n",
        why="asarray for ascontiguousarray: a strided or transposed input goes to a kernel "
            "that reads contiguous memory",
    ),
    Mutant(
        id="cuda-gelu-backward-dx-contiguous",
        task="6.1",
        file="cuda/elementwise.py",
        find="    tl.store(dx_ptr + rows[:, None] * stride_dxr + cols[None, :] * stride_dxc,\n",
        replace="    tl.store(dx_ptr + rows[:, None] * n_cols + cols[None, :],\n",
        why="the backward kernel stores the gradient as if dx were contiguous, ignoring its "
            "strides",
    ),
    Mutant(
        id="cuda-softmax-store-ignores-y-strides",
        task="6.2",
        file="cuda/softmax.py",
        find="        tl.store(y_row + cols * stride_yc, y.to(y_ptr.dtype.element_ty), mask=mask)\n",
        replace="        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=mask)\n",
        why="the output's column stride is taken as 1: a transposed or strided y is written "
            "in the wrong places",
    ),
    Mutant(
        id="cuda-softmax-safe-zero-row",
        task="6.2",
        file="cuda/softmax.py",
        find="            y = tl.exp(x - row_max) / total\n",
        replace="            y = tl.where(total > 0, tl.exp(x - row_max) / total, 0.0)\n",
        why="a 'safe' softmax: a row of all -inf gives zeros, where torch gives NaN",
    ),
    Mutant(
        id="cuda-matmul-block-m-for-n",
        task="6.3",
        file="cuda/matmul.py",
        find="    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)\n",
        replace="    rn = pid_n * BLOCK_M + tl.arange(0, BLOCK_N)\n",
        why="the tile's first column uses BLOCK_M: right only while BLOCK_M == BLOCK_N",
    ),
    Mutant(
        id="cuda-layernorm-one-pass-variance",
        task="6.4",
        file="cuda/layernorm.py",
        find="    var = tl.sum(diff * diff, 0) / n_cols\n",
        replace="    var = tl.sum(x * x, 0) / n_cols - mean * mean\n",
        why="the variance as mean(x^2) - mean^2: catastrophic cancellation for rows far from "
            "zero",
    ),
    Mutant(
        id="cuda-layernorm-wrapper-strided-weight",
        task="6.4",
        file="cuda/layernorm.py",
        find="    launch(layer_norm_kernel, (rows,), x2, np.ascontiguousarray(weight),\n",
        replace="    launch(layer_norm_kernel, (rows,), x2, weight,\n",
        why="the wrapper hands a strided weight to a kernel that reads it contiguously",
    ),
    Mutant(
        id="cuda-cross-entropy-wrapper-contiguous-logits",
        task="6.4",
        file="cuda/cross_entropy.py",
        find="           logits.strides[0] // item, logits.strides[1] // item, cols, 1, ignore_index,\n",
        replace="           cols, 1, cols, 1, ignore_index,\n",
        why="the wrapper passes the strides of contiguous logits: transposed or "
            "column-strided logits are read in the wrong places",
    ),
    Mutant(
        id="cuda-attention-dkdv-causal-start-block-m",
        task="6.5",
        file="cuda/attention.py",
        find="        lo = (start_n * BLOCK_N // BLOCK_M) * BLOCK_M\n",
        replace="        lo = start_n * BLOCK_M\n",
        why="the first query block a key block sees is computed with BLOCK_M for BLOCK_N: "
            "right only while BLOCK_M <= BLOCK_N",
    ),
    Mutant(
        id="cuda-attention-wrapper-one-layout",
        task="6.5",
        file="cuda/attention.py",
        find="    q, k, v = _same_layout(q, k, v)\n",
        replace="",
        why="the forward wrapper passes q's strides for k and v too, whatever their layout",
    ),
    Mutant(
        id="cuda-attention-kernel-ignores-sm-scale",
        task="6.5",
        file="cuda/attention.py",
        find="    qk_scale = sm_scale * _LOG2E\n",
        replace="    qk_scale = _LOG2E / HEAD_DIM ** 0.5\n",
        why="the forward kernel scales the scores by 1/sqrt(HEAD_DIM) itself, ignoring its "
            "sm_scale argument: right at the default scale only",
    ),
    Mutant(
        id="cuda-attention-backward-zero-scale-as-default",
        task="6.5",
        file="cuda/attention.py",
        find="    lse = np.ascontiguousarray(lse, np.float32).reshape(z * h, t)\n",
        replace="    scale = scale or 1.0 / math.sqrt(d)\n"
                "    lse = np.ascontiguousarray(lse, np.float32).reshape(z * h, t)\n",
        why="the backward wrapper takes sm_scale=0.0 for the default 1/sqrt(head_dim) "
            "(truthiness for None): wrong gradients for an explicit zero scale",
    ),
    Mutant(
        id="cuda-adam-wrapper-no-contiguity-check",
        task="6.6",
        file="cuda/adam.py",
        find="        if a.dtype != np.float32 or not a.flags.c_contiguous:\n",
        replace="        if a.dtype != np.float32:\n",
        why="adam_step takes a strided view of the state as it is: the kernel reads and "
            "writes it as contiguous memory (the gaps as elements), instead of refusing it",
    ),
    Mutant(
        id="cuda-adam-wrapper-grad-asarray",
        task="6.6",
        file="cuda/adam.py",
        find="    grad = np.ascontiguousarray(grad, np.float32)\n",
        replace="    grad = np.asarray(grad, np.float32)\n",
        why="asarray for ascontiguousarray: a strided gradient goes to a kernel that reads "
            "it contiguously",
    ),
]
