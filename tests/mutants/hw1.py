"""Wrong variants for assignment 1 (the autograd engine)."""

from . import Mutant

MUTANTS = [
    Mutant(
        id="records-without-requires-grad",
        task="1.1",
        file="autograd/function.py",
        find="""    if True not in needs:
        return False
""",
        replace="",
        why="every op is recorded, even when no input requires grad",
    ),
    Mutant(
        id="leaf-grad-overwritten",
        task="1.2",
        file="autograd/function.py",
        find="        leaf._grad.data += grad",
        replace="        leaf._grad = Tensor(np.array(grad, dtype=leaf.data.dtype, copy=True))",
        why="a leaf's .grad is overwritten instead of accumulated across backward calls",
    ),
    Mutant(
        id="shared-parameter-one-path",
        task="1.2",
        file="autograd/engine.py",
        find="    buffer[output_nr] = grad if buffer[output_nr] is None else "
             "buffer[output_nr] + grad",
        replace="    buffer[output_nr] = grad",
        why="a value used on several paths receives only the last path's gradient",
    ),
    Mutant(
        id="retain-graph-ignored",
        task="1.2",
        file="autograd/engine.py",
        find="        if not retain_graph:\n            node._release()",
        replace="        node._release()",
        why="retain_graph=True is ignored: saved tensors are always freed",
    ),
    Mutant(
        id="no-topological-order",
        task="1.2",
        file="autograd/engine.py",
        find="            if dependencies[next_node] == 0:\n"
             "                ready.append(next_node)",
        replace="            ready.append(next_node)",
        why="a node runs as soon as one gradient reaches it, before all its consumers ran",
    ),
    Mutant(
        id="no-grad-still-records",
        task="1.3",
        file="autograd/grad_mode.py",
        find="""        self._prev = _state.grad_enabled
        _state.grad_enabled = False""",
        replace="""        self._prev = _state.grad_enabled""",
        why="no_grad() does not switch grad mode off, so ops keep recording",
    ),
    Mutant(
        id="no-grad-not-restored",
        task="1.3",
        file="autograd/grad_mode.py",
        find="""    def __exit__(self, *exc: object) -> None:
        # BEGIN SOLUTION 1.3
        _state.grad_enabled = self._prev
        # END SOLUTION


class enable_grad""",
        replace="""    def __exit__(self, *exc: object) -> None:
        # BEGIN SOLUTION 1.3
        _state.grad_enabled = True
        # END SOLUTION


class enable_grad""",
        why="leaving no_grad always enables grad instead of restoring the previous mode",
    ),
    Mutant(
        id="inference-tensor-saved",
        task="1.3",
        file="autograd/grad_mode.py",
        find="""    if not _state.inference:
        raise RuntimeError(_INFERENCE_ERRORS[action])""",
        replace="""    if not _state.inference and action != "save":
        raise RuntimeError(_INFERENCE_ERRORS[action])""",
        why="inference tensors can be saved for backward outside inference_mode",
    ),
    Mutant(
        id="hook-result-ignored",
        task="1.4",
        file="autograd/function.py",
        find="""                result = hook(Tensor(grads[nr]))
                if result is not None:
                    grads[nr] = result.data""",
        replace="""                hook(Tensor(grads[nr]))""",
        why="a non-leaf hook's returned tensor does not replace the gradient",
    ),
    Mutant(
        id="retain-grad-not-accumulated",
        task="1.4",
        file="autograd/function.py",
        find="                tensor._grad = Tensor(tensor._grad.data + grads[nr])",
        replace="                tensor._grad = Tensor(grads[nr].copy())",
        why="a retained non-leaf .grad is replaced on each backward instead of accumulated",
    ),
    Mutant(
        id="detach-copies",
        task="1.4",
        file="tensor.py",
        find="""        out = Tensor(self.data)
        out._version_counter = self._version_counter""",
        replace="""        out = Tensor(self.data.copy())""",
        why="detach() copies the data and gets a new version counter instead of sharing",
    ),
]

ALTERNATIVES = [
    Mutant(
        id="breadth-first-engine",
        task="1.2",
        file="autograd/engine.py",
        find="        node = ready.pop()\n",
        replace="        node = ready.pop(0)\n",
        why="runs ready nodes first-in first-out: another valid topological order",
    ),
    Mutant(
        id="out-of-place-accumulation",
        task="1.2",
        file="autograd/function.py",
        find="        leaf._grad.data += grad",
        replace="        leaf._grad = Tensor(leaf._grad.data + grad)",
        why="accumulates into a new .grad tensor instead of in place",
    ),
]
