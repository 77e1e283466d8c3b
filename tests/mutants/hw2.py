"""Wrong variants for assignment 2 (operators), and correct alternatives.

There is a wrong value at each kind of kink SEMANTICS.md lists (relu(0), leaky_relu(0),
abs(0), clamp and hardtanh at their bounds, max()/min() ties, max(dim) ties, amax ties,
maximum with x == y, sqrt(0), pow at 0, where's unselected branch), broadcast gradients
not reduced (in an operator and in 2.1's shared reducer, which must cost 2.1 only), a matmul
backward that only works for 2-D, overflowing softmax-likes, and log-softmaxes taken as the
log of a softmax that underflows.
"""

from . import Mutant

MUTANTS = [
    # ----- 2.1 elementwise arithmetic --------------------------------------------------
    Mutant(
        id="mul-broadcast-grad-not-reduced",
        task="2.1",
        file="ops/arithmetic.py",
        find="grad_b = sum_to_shape(grad * a.data, b_shape) if ctx.needs_input_grad[1] else None",
        replace="grad_b = grad * a.data if ctx.needs_input_grad[1] else None",
        why="mul's gradient for a broadcast operand is not summed back to its shape",
    ),
    Mutant(
        id="sum-to-shape-ignores-size-one-dims",
        task="2.1",
        file="ops/_helpers.py",
        find="""    ones = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if ones:
        grad = grad.sum(axis=ones, keepdims=True)
    return grad""",
        replace="    return grad",
        why="the broadcast reducer sums the prepended dims but not the stretched size-1 "
            "dims (matmul's backward uses it too: that must cost 2.1 only)",
    ),
    Mutant(
        id="div-grad-wrong-sign",
        task="2.1",
        file="ops/arithmetic.py",
        find="grad_b = sum_to_shape(-grad * ((a.data / b.data) / b.data), b.shape)",
        replace="grad_b = sum_to_shape(grad * ((a.data / b.data) / b.data), b.shape)",
        why="d(a/b)/db loses its minus sign",
    ),
    Mutant(
        id="maximum-tie-full-grad-to-both",
        task="2.1",
        file="ops/arithmetic.py",
        find="    half = grad / 2\n",
        replace="    half = grad\n",
        why="maximum/minimum with x == y give the whole gradient to both inputs, not half",
    ),
    Mutant(
        id="pow-scalar-zero-exponent",
        task="2.1",
        file="ops/arithmetic.py",
        find="        if p == 0:\n            return np.zeros_like(grad)\n",
        replace="",
        why="x ** 0 at x == 0 gives 0 * 0^-1 = NaN instead of PyTorch's 0",
    ),
    Mutant(
        id="pow-exponent-grad-at-zero-base",
        task="2.1",
        file="ops/arithmetic.py",
        find="local = np.where((a == 0) & (b >= 0), 0, result.data * np.log(a))",
        replace="local = result.data * np.log(a)",
        why="d(a^b)/db at a == 0 is 0 * log 0 (NaN or -inf) instead of PyTorch's 0",
    ),
    Mutant(
        id="where-grad-to-unselected-branch",
        task="2.1",
        file="ops/arithmetic.py",
        find="grad_b = sum_to_shape(np.where(ctx.condition, 0, grad), b_shape)",
        replace="grad_b = sum_to_shape(grad, b_shape)",
        why="where sends gradient to the branch it did not select",
    ),
    Mutant(
        id="where-masks-by-multiplying",
        task="2.1",
        file="ops/arithmetic.py",
        find="grad_a = sum_to_shape(np.where(ctx.condition, grad, 0), a_shape)",
        replace="grad_a = sum_to_shape(grad * ctx.condition, a_shape)",
        why="where masks by multiplying, so an inf incoming gradient gives NaN, not 0",
    ),
    # ----- 2.2 unary math ----------------------------------------------------------------
    Mutant(
        id="abs-grad-at-zero-is-one",
        task="2.2",
        file="ops/unary.py",
        find="return grad * np.sign(a.data)",
        replace="return grad * np.where(a.data >= 0, 1.0, -1.0)",
        why="abs'(0) taken as 1 instead of PyTorch's 0",
    ),
    Mutant(
        id="clamp-no-grad-at-min",
        task="2.2",
        file="ops/unary.py",
        find="inside &= a.data >= low",
        replace="inside &= a.data > low",
        why="clamp passes no gradient at x == min (PyTorch passes it)",
    ),
    Mutant(
        id="sqrt-grad-finite-at-zero",
        task="2.2",
        file="ops/unary.py",
        find="return grad / (2 * result.data)",
        replace="return grad / (2 * result.data + 1e-12)",
        why="sqrt's gradient at 0 is made finite with an epsilon instead of inf",
    ),
    Mutant(
        id="sign-passes-gradient",
        task="2.2",
        file="ops/unary.py",
        find="    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:\n"
             "        # BEGIN SOLUTION 2.2\n        return np.zeros_like(grad)",
        replace="    def backward(ctx: BackwardNode, grad: np.ndarray) -> np.ndarray:\n"
                "        # BEGIN SOLUTION 2.2\n        return grad",
        why="sign's gradient taken as 1 instead of 0",
    ),
    # ----- 2.3 reductions ----------------------------------------------------------------
    Mutant(
        id="max-ties-not-split",
        task="2.3",
        file="ops/reduction.py",
        find="return (grad / ties.sum(axis=ctx.dims, keepdims=True, dtype=grad.dtype)) * ties",
        replace="return grad * ties",
        why="max()/min()/amax give the whole gradient to every tied element",
    ),
    Mutant(
        id="amax-ties-counted-over-all-dims",
        task="2.3",
        file="ops/reduction.py",
        find="ties.sum(axis=ctx.dims, keepdims=True, dtype=grad.dtype)",
        replace="ties.sum(dtype=grad.dtype)",
        why="amax(dim) splits by the ties of the whole tensor, not of each reduced slice",
    ),
    Mutant(
        id="max-dim-last-index-on-ties",
        task="2.3",
        file="ops/reduction.py",
        find="indices = np.argmax(a.data, axis=dim, keepdims=True)",
        replace="indices = a.shape[dim] - 1 - np.argmax(np.flip(a.data, dim), axis=dim, "
                "keepdims=True)",
        why="max(dim) returns (and sends the gradient to) the last maximal index, not the first",
    ),
    Mutant(
        id="var-ignores-correction",
        task="2.3",
        file="ops/reduction.py",
        find="return a.data.var(axis=dims, ddof=correction, keepdims=keepdim)",
        replace="return a.data.var(axis=dims, keepdims=keepdim)",
        why="var divides by N whatever the correction",
    ),
    Mutant(
        id="mean-grad-not-divided",
        task="2.3",
        file="ops/reduction.py",
        find="return np.broadcast_to(grad / count, ctx.shape).copy()",
        replace="return np.broadcast_to(grad, ctx.shape).copy()",
        why="mean's backward forgets to divide by the number of elements",
    ),
    Mutant(
        id="logsumexp-overflows",
        task="2.3",
        file="ops/reduction.py",
        find="shift = np.where(np.isinf(shift), 0, shift)",
        replace="shift = np.zeros_like(shift)",
        why="logsumexp without the max shift: exp(1e4) overflows",
    ),
    # ----- 2.4 matmul and linear ---------------------------------------------------------
    Mutant(
        id="matmul-backward-2d-only",
        task="2.4",
        file="ops/linalg.py",
        find="ga = np.matmul(g, np.swapaxes(b2, -1, -2))",
        replace="ga = np.matmul(g, b2.T)",
        why="matmul's backward transposes with .T, which is only right for 2-D operands",
    ),
    Mutant(
        id="linear-bias-grad-first-row",
        task="2.4",
        file="ops/linalg.py",
        find="grad_b = rows.sum(axis=0) if needs[2] else None",
        replace="grad_b = rows[0] if needs[2] else None",
        why="linear's bias gradient is not summed over the batch",
    ),
    # ----- 2.5 shape ops -----------------------------------------------------------------
    Mutant(
        id="permute-copies",
        task="2.5",
        file="ops/shape.py",
        find="return np.transpose(a.data, dims)",
        replace="return np.transpose(a.data, dims).copy()",
        why="transpose/permute return a copy instead of a view",
    ),
    Mutant(
        id="view-copies-silently",
        task="2.5",
        file="ops/shape.py",
        find="return np.reshape(a.data, shape, copy=False)",
        replace="return np.reshape(a.data, shape)",
        why="view copies when it cannot be a view, instead of raising",
    ),
    Mutant(
        id="reshape-copy-in-memory-order",
        task="2.5",
        file="ops/shape.py",
        find="        return np.reshape(a.data, shape, copy=True)",
        replace='        return np.reshape(a.data, shape, order="A").copy()',
        why="the copying reshape (an input no view can regroup, e.g. a transposed one) "
            "reads the elements in memory order, not in row-major order as torch does",
    ),
    Mutant(
        id="expand-grad-not-reduced",
        task="2.5",
        file="ops/shape.py",
        find="return sum_to_shape(grad, ctx.shape)",
        replace="return grad",
        why="expand's gradient is not summed back over the repeated dims",
    ),
    Mutant(
        id="cat-split-wrong",
        task="2.5",
        file="ops/shape.py",
        find="offsets = np.cumsum(ctx.sizes)[:-1]",
        replace="offsets = np.cumsum(ctx.sizes)[1:]",
        why="cat's backward splits the gradient at the wrong offsets",
    ),
    Mutant(
        id="getitem-grad-dense",
        task="2.5",
        file="ops/shape.py",
        find="grad_in = np.zeros(ctx.shape, dtype=grad.dtype)\n        grad_in[ctx.index] = grad",
        replace="grad_in = np.zeros(ctx.shape, dtype=grad.dtype)\n"
                "        grad_in[ctx.index] = grad\n        grad_in[ctx.index[:1]] += 0.5",
        why="indexing's backward writes into elements that were not selected",
    ),
    # ----- 2.6 activations ---------------------------------------------------------------
    Mutant(
        id="relu-grad-at-zero-is-one",
        task="2.6",
        file="ops/activation.py",
        find="return np.where(result.data <= 0, 0, grad)",
        replace="return np.where(result.data < 0, 0, grad)",
        why="relu'(0) taken as 1 instead of 0",
    ),
    Mutant(
        id="leaky-relu-grad-at-zero-is-one",
        task="2.6",
        file="ops/activation.py",
        find="return np.where(a.data > 0, grad, grad * ctx.negative_slope)",
        replace="return np.where(a.data >= 0, grad, grad * ctx.negative_slope)",
        why="leaky_relu'(0) taken as 1 instead of negative_slope",
    ),
    Mutant(
        id="hardtanh-grad-at-bounds",
        task="2.6",
        file="ops/activation.py",
        find="return np.where((a.data > low) & (a.data < high), grad, 0)",
        replace="return np.where((a.data >= low) & (a.data <= high), grad, 0)",
        why="hardtanh passes the gradient at its bounds (clamp's rule, not hardtanh's)",
    ),
    Mutant(
        id="softmax-overflows",
        task="2.6",
        file="ops/activation.py",
        find="        shifted = a.data - a.data.max(axis=axis, keepdims=True, initial=-np.inf)\n"
             "        e = np.exp(shifted)",
        replace="        e = np.exp(a.data)",
        why="softmax without subtracting the max: exp(1e4) overflows to inf/inf = NaN",
    ),
    Mutant(
        id="log-softmax-log-of-softmax",
        task="2.6",
        file="ops/activation.py",
        find="        result = shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))\n"
             "        ctx.save_for_backward(result)",
        replace="        e = np.exp(shifted)\n"
                "        result = np.log(e / e.sum(axis=axis, keepdims=True))\n"
                "        ctx.save_for_backward(result)",
        why="log_softmax as log(softmax(x)): a probability that underflows to 0 gives -inf "
            "([0, 200] in float32: [-inf, 0], torch [-200, 0])",
    ),
    Mutant(
        id="gelu-tanh-computes-exact",
        task="2.6",
        file="ops/activation.py",
        find='        if approximate == "tanh":\n            inner',
        replace='        if approximate == "never":\n            inner',
        why="gelu(approximate='tanh') computes the exact gelu",
    ),
    # ----- 2.7 losses --------------------------------------------------------------------
    Mutant(
        id="cross-entropy-mean-counts-ignored",
        task="2.7",
        file="ops/loss.py",
        find="return total / losses.dtype.type(count)",
        replace="return total / losses.dtype.type(losses.size)",
        why="cross_entropy's mean divides by all targets, ignored ones included",
    ),
    Mutant(
        id="cross-entropy-smoothing-missing-in-backward",
        task="2.7",
        file="ops/loss.py",
        find="grad_logits = np.exp(log_probs.data) - eps / log_probs.shape[-1]",
        replace="grad_logits = np.exp(log_probs.data)",
        why="label smoothing's uniform part is left out of the gradient",
    ),
    Mutant(
        id="cross-entropy-overflows",
        task="2.7",
        file="ops/loss.py",
        find="shifted = logits - logits.max(axis=-1, keepdims=True)",
        replace="shifted = logits",
        why="cross_entropy's log-softmax without the max shift overflows for large logits",
    ),
    Mutant(
        id="cross-entropy-log-of-softmax",
        task="2.7",
        file="ops/loss.py",
        find="        log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))\n"
             "        valid",
        replace="        e = np.exp(shifted)\n"
                "        log_probs = np.log(e / e.sum(axis=-1, keepdims=True))\n        valid",
        why="cross_entropy takes the log of a softmax: a class whose probability underflows "
            "gives an infinite loss",
    ),
    Mutant(
        id="mse-mean-grad-not-divided",
        task="2.7",
        file="ops/loss.py",
        find="grad_input = grad_input / diff.data.size",
        replace="grad_input = grad_input * 1",
        why="mse_loss(reduction='mean') backward forgets the 1/N",
    ),
    # ----- the axes every op is checked along (issue 19) ----------------------------------
    Mutant(
        id="maximum-by-comparison-drops-nan",
        task="2.1",
        file="ops/arithmetic.py",
        find="return np.maximum(a.data, b.data)",
        replace="return np.where(a.data > b.data, a.data, b.data)",
        why="maximum as a comparison-based where: a NaN in x gives y, not NaN (only NaN "
            "inputs tell)",
    ),
    Mutant(
        id="relu-by-where-drops-nan",
        task="2.6",
        file="ops/activation.py",
        find="result = np.maximum(a.data, 0)",
        replace="result = np.where(a.data > 0, a.data, 0)",
        why="relu as a where: relu(NaN) gives 0, not NaN (only NaN inputs tell)",
    ),
    Mutant(
        id="mul-reads-second-operand-in-memory-order",
        task="2.1",
        file="ops/arithmetic.py",
        find="return a.data * b.data",
        replace="return a.data * b.data.ravel(order=\"K\").reshape(b.shape)",
        why="mul flattens its second operand in memory order: a transposed or flipped "
            "second operand gives scrambled values",
    ),
    Mutant(
        id="view-backward-sets-shape-in-place",
        task="2.5",
        file="ops/shape.py",
        find="        return grad.reshape(ctx.shape)\n",
        replace="        out = grad.view()\n        out.shape = ctx.shape  # no copy\n        return out\n",
        why="view's backward sets .shape on the incoming gradient, which fails for a "
            "non-contiguous gradient (only a strided incoming gradient tells)",
    ),
    # ----- the axes of issue 19: ownership, options at falsy values, float64 ---------------
    Mutant(
        id="mse-loss-backward-scales-saved-diff",
        task="2.7",
        file="ops/loss.py",
        find="        grad_input = 2 * diff.data * grad\n",
        replace="        diff.data *= 2\n        grad_input = diff.data * grad\n",
        why="mse_loss's backward doubles the difference it saved in place (a second backward, "
            "or anything else holding the saved array, then sees it doubled)",
    ),
    Mutant(
        id="leaky-relu-slope-zero-means-default",
        task="2.6",
        file="ops/activation.py",
        find="        ctx.negative_slope = negative_slope\n",
        replace="        ctx.negative_slope = negative_slope or 0.01\n",
        why="leaky_relu's backward takes a slope of 0.0 for 'not given' (the default 0.01)",
    ),
    Mutant(
        id="softmax-backward-in-float32",
        task="2.6",
        file="ops/activation.py",
        find="""        (result,) = ctx.saved_tensors
        y = result.data
        return y * (grad - (grad * y).sum(axis=ctx.axis, keepdims=True))""",
        replace="""        (result,) = ctx.saved_tensors
        y = result.data.astype(np.float32)
        return y * (grad - (grad * y).sum(axis=ctx.axis, keepdims=True))""",
        why="softmax's backward rounds the saved float64 softmax through float32",
    ),
]

ALTERNATIVES = [
    Mutant(
        id="sigmoid-in-float64",
        task="2.6",
        file="ops/activation.py",
        find="""        e = np.exp(-np.abs(a.data))
        result = np.where(a.data >= 0, 1 / (1 + e), e / (1 + e))""",
        replace="""        x = a.data.astype(np.float64)
        with np.errstate(over="ignore"):
            result = (1 / (1 + np.exp(-x))).astype(a.data.dtype)""",
        why="sigmoid computed in float64 (plain formula) and rounded to the input dtype",
    ),
    Mutant(
        id="mean-as-sum-times-scale",
        task="2.3",
        file="ops/reduction.py",
        find="""    return Mean.apply(input, _dims(dim, input.ndim), keepdim)""",
        replace="""    from .arithmetic import mul

    count = math.prod(input.shape[d] for d in _dims(dim, input.ndim))
    return mul(sum(input, dim, keepdim), 1 / count if count else float("nan"))""",
        why="mean as a composite of two Functions (graded through the engine, not isolated)",
    ),
    Mutant(
        id="relu-saves-input",
        task="2.6",
        file="ops/activation.py",
        find="""        result = np.maximum(a.data, 0)
        ctx.save_for_backward(result)
        return result""",
        replace="""        ctx.save_for_backward(a)
        return np.maximum(a.data, 0)""",
        why="relu saving its input and masking on x > 0 (forward keeps NaN, as torch does)",
    ),
    Mutant(
        id="linear-via-einsum",
        task="2.4",
        file="ops/linalg.py",
        find="        out = np.matmul(_rows(x.data), weight.data.T)\n",
        replace="        out = np.einsum('...i,oi->...o', x.data, weight.data)\n",
        why="linear's forward with einsum instead of matmul",
    ),
]
