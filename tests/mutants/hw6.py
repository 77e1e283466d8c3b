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

ALTERNATIVES: list[Mutant] = []
