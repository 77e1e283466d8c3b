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

ALTERNATIVES: list[Mutant] = []
