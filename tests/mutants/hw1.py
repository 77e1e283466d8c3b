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
        file="autograd/node.py",
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
        id="output-nr-always-zero",
        task="1.1",
        file="autograd/function.py",
        find="            out._output_nr = nr\n",
        replace="            out._output_nr = 0\n",
        why="every output of a multi-output Function is recorded as output 0, so edges "
            "point at (and gradients flow to) the wrong output",
    ),
    Mutant(
        id="integer-outputs-get-grad-fn",
        task="1.1",
        file="autograd/function.py",
        find="        if out.data.dtype in dtypes.FLOATING:  # integer outputs (indices) are "
             "not differentiable\n",
        replace="        if True:\n",
        why="integer outputs (indices, masks) get a grad_fn and requires_grad=True",
    ),
    Mutant(
        id="records-in-inference-mode-with-enable-grad",
        task="1.1",
        file="autograd/function.py",
        find="    if not grad_mode.is_grad_enabled() or grad_mode.is_inference_mode_enabled():\n"
             "        return False\n    needs =",
        replace="    if not grad_mode.is_grad_enabled():\n        return False\n    needs =",
        why="recording checks grad mode only: inference_mode with enable_grad inside records",
    ),
    Mutant(
        id="skips-nodes-below-none",
        task="1.2",
        file="autograd/engine.py",
        find="""        if any(g is not None for g in grads):
            input_grads = node._run_backward(grads)
        else:
            input_grads = (None,) * len(node.next_functions)
""",
        replace="""        if all(g is None for g in grads):
            continue
        input_grads = node._run_backward(grads)
""",
        why="a node that received only None gradients is skipped without releasing its "
            "inputs, so the nodes below it never run (y = Zero(b) + a loses a's gradient)",
    ),
    Mutant(
        id="dependencies-counted-from-the-first-root",
        task="1.2",
        file="autograd/engine.py",
        find="    dependencies = _count_dependencies([node for (node, _), _ in roots])",
        replace="    dependencies = _count_dependencies([roots[0][0][0]])",
        why="the engine counts dependencies below the first root only: with roots in "
            "different parts of the graph (a backward from only some outputs) a node runs "
            "before every gradient reached it",
    ),
    Mutant(
        id="roots-one-at-a-time",
        task="1.2",
        file="autograd/engine.py",
        find="        run_backward(roots, retain_graph)\n",
        replace="        for root in roots:\n            run_backward([root], retain_graph)\n",
        why="several roots run one backward pass each: a root that is an ancestor of another "
            "finds its graph freed",
    ),
    Mutant(
        id="leaf-grad-not-copied",
        task="1.2",
        file="autograd/node.py",
        find="        leaf._grad = Tensor(np.array(grad, dtype=leaf.data.dtype, copy=True))",
        replace="        leaf._grad = Tensor(grad)",
        why="a leaf's first .grad is the array the engine handed over, which another leaf or "
            "the caller's gradient also holds; the next accumulation changes both",
    ),
    Mutant(
        id="buffer-summed-in-place",
        task="1.2",
        file="autograd/engine.py",
        find="    buffer[output_nr] = grad if buffer[output_nr] is None else "
             "buffer[output_nr] + grad",
        replace="    if buffer[output_nr] is None:\n        buffer[output_nr] = grad\n"
                "    else:\n        buffer[output_nr] += grad",
        why="gradients from several paths are summed into the first array received, which "
            "a Function may have handed to another node too (Add returns one array twice)",
    ),
    Mutant(
        id="buffer-ignores-output-nr",
        task="1.2",
        file="autograd/engine.py",
        find="    buffer[output_nr] = grad if buffer[output_nr] is None else "
             "buffer[output_nr] + grad",
        replace="    buffer[0] = grad if buffer[0] is None else buffer[0] + grad",
        why="every gradient for a multi-output node goes to its first output",
    ),
    Mutant(
        id="engine-ignores-tensor-hooks",
        task="1.2",
        file="autograd/engine.py",
        find="        if node._has_tensor_hooks():\n            grads = node._run_tensor_hooks(grads)\n",
        replace="",
        why="the engine never lets a node apply its tensor hooks",
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
        id="enable-grad-not-restored-on-exception",
        task="1.3",
        file="autograd/grad_mode.py",
        find="""        _state.grad_enabled = True
        # END SOLUTION

    def __exit__(self, *exc: object) -> None:
        # BEGIN SOLUTION 1.3
        _state.grad_enabled = self._prev""",
        replace="""        _state.grad_enabled = True
        # END SOLUTION

    def __exit__(self, *exc: object) -> None:
        # BEGIN SOLUTION 1.3
        if exc[0] is None:
            _state.grad_enabled = self._prev""",
        why="enable_grad restores the previous mode only when its block ends normally: "
            "inside no_grad, an exception leaves grad mode on (axis: grad modes left "
            "through an exception, nested)",
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
        file="autograd/node.py",
        find="""                result = hook(Tensor(grads[nr]))
                if result is not None:
                    grads[nr] = result.data""",
        replace="""                hook(Tensor(grads[nr]))""",
        why="a non-leaf hook's returned tensor does not replace the gradient",
    ),
    Mutant(
        id="retain-grad-not-accumulated",
        task="1.4",
        file="autograd/node.py",
        find="                tensor._grad = Tensor(tensor._grad.data + grads[nr])",
        replace="                tensor._grad = Tensor(grads[nr].copy())",
        why="a retained non-leaf .grad is replaced on each backward instead of accumulated",
    ),
    Mutant(
        id="retained-before-hooks",
        task="1.4",
        file="autograd/node.py",
        find="""        for nr, hooks in self._tensor_hooks.items():
            for hook in list(hooks):
                if grads[nr] is None:
                    continue
                result = hook(Tensor(grads[nr]))
                if result is not None:
                    grads[nr] = result.data
        for nr, ref in self._retained.items():
            tensor = ref()
            if tensor is None or grads[nr] is None:
                continue
            if tensor._grad is None:
                tensor._grad = Tensor(grads[nr].copy())
            else:
                tensor._grad = Tensor(tensor._grad.data + grads[nr])
        return grads""",
        replace="""        for nr, ref in self._retained.items():
            tensor = ref()
            if tensor is None or grads[nr] is None:
                continue
            if tensor._grad is None:
                tensor._grad = Tensor(grads[nr].copy())
            else:
                tensor._grad = Tensor(tensor._grad.data + grads[nr])
        for nr, hooks in self._tensor_hooks.items():
            for hook in list(hooks):
                if grads[nr] is None:
                    continue
                result = hook(Tensor(grads[nr]))
                if result is not None:
                    grads[nr] = result.data
        return grads""",
        why="retain_grad keeps the gradient before the tensor's hooks ran, not after",
    ),
    Mutant(
        id="hooks-see-original-gradient",
        task="1.4",
        file="autograd/node.py",
        find="""        for nr, hooks in self._tensor_hooks.items():
            for hook in list(hooks):
                if grads[nr] is None:
                    continue
                result = hook(Tensor(grads[nr]))""",
        replace="""        for nr, hooks in self._tensor_hooks.items():
            original = grads[nr]
            for hook in list(hooks):
                if grads[nr] is None:
                    continue
                result = hook(Tensor(original))""",
        why="each of several hooks on a tensor sees the original gradient, not the previous "
            "hook's result (the last result wins)",
    ),
    Mutant(
        id="leaf-hooks-reversed",
        task="1.4",
        file="autograd/node.py",
        find="        for hook in list(self.variable._backward_hooks or ()):",
        replace="        for hook in reversed(list(self.variable._backward_hooks or ())):",
        why="a leaf's hooks run in reverse order of registration",
    ),
    Mutant(
        id="leaf-hooks-set-aside-while-running",
        task="1.4",
        file="autograd/node.py",
        find="""        for hook in list(self.variable._backward_hooks or ()):
            if grads[0] is None:
                break
            result = hook(Tensor(grads[0]))
            if result is not None:
                grads[0] = result.data
        return grads""",
        replace="""        hooks, self.variable._backward_hooks = self.variable._backward_hooks, None
        for hook in list(hooks or ()):
            if grads[0] is None:
                break
            result = hook(Tensor(grads[0]))
            if result is not None:
                grads[0] = result.data
        self.variable._backward_hooks = hooks
        return grads""",
        why="a leaf's hooks are set aside while they run and put back after: a hook that "
            "raises leaves the leaf without its hooks (exception axis)",
    ),
    Mutant(
        id="retain-grad-without-requires-grad",
        task="1.4",
        file="tensor.py",
        find="""        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None:""",
        replace="""        if self.grad_fn is None:""",
        why="retain_grad() on a tensor that does not require grad is silently accepted",
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
    Mutant(
        id="root-gradient-rounded-through-float32",
        task="1.2",
        file="autograd/engine.py",
        find='    grad = np.asarray(getattr(grad, "data", grad), dtype=tensor.data.dtype)',
        replace='    grad = np.asarray(getattr(grad, "data", grad), dtype=np.float32)',
        why="the gradient given to backward is rounded to float32 before it is cast to the "
            "output's dtype: a float64 graph loses precision at its root",
    ),
]

ALTERNATIVES = [
    Mutant(
        id="engine-runs-nodes-without-gradient",
        task="1.2",
        file="autograd/engine.py",
        find="""        if any(g is not None for g in grads):
            input_grads = node._run_backward(grads)
        else:
            input_grads = (None,) * len(node.next_functions)
""",
        replace="""        input_grads = node._run_backward(grads)  # None becomes zeros
""",
        why="runs a node that received only None gradients with zeros, as torch runs a "
            "torch.autograd.Function (materialize_grads)",
    ),
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
        file="autograd/node.py",
        find="        leaf._grad.data += grad",
        replace="        leaf._grad = Tensor(leaf._grad.data + grad)",
        why="accumulates into a new .grad tensor instead of in place",
    ),
]

# Killing the survivors of scripts/mutation_test.py (mutmut's operators over the solution
# regions): each stands for a surviving mutant that a new check now catches.
MUTANTS += [
    Mutant(
        id="leaf-hooks-return-nothing-without-gradient",
        task="1.4",
        file="autograd/node.py",
        find="""            if grads[0] is None:
                break
""",
        replace="""            if grads[0] is None:
                return
""",
        why="a leaf's hook runner returns nothing when the leaf gets no gradient (mutant "
            "1.4-4b9966ffac), so backward fails where a hooked leaf receives only None",
    ),
    Mutant(
        id="implicit-root-gradient-float64",
        task="1.2",
        file="autograd/engine.py",
        find="        return np.ones(tensor.shape, tensor.data.dtype)\n",
        replace="        return np.ones(tensor.shape)\n",
        why="backward() of a float32 scalar starts from a float64 one (mutant 1.2-7a3ec58475): "
            "the output's hooks and its node's backward see float64",
    ),
    Mutant(
        id="root-gradient-shape-unchecked",
        task="1.2",
        file="autograd/engine.py",
        find="""    if grad.shape != tensor.shape:
        raise RuntimeError(
            f"Mismatch in shape: grad_output[{index}] has a shape of {grad.shape} and "
            f"output[{index}] has a shape of {tensor.shape}."
        )
""",
        replace="",
        why="a gradient given to backward is not checked against the output's shape (mutant "
            "1.2-a49a16c857 drops only PyTorch's message)",
    ),
    Mutant(
        id="record-says-recorded-under-no-grad",
        task="1.1",
        file="autograd/function.py",
        find="        return False\n    needs = tuple(",
        replace="        return True\n    needs = tuple(",
        why="record returns True under no_grad or inference mode although it recorded nothing "
            "(mutant 1.1-0870949936): Function.apply then packs saved tensors for nothing",
    ),
    Mutant(
        id="needs-input-grad-none-for-numbers",
        task="1.1",
        file="autograd/function.py",
        find='getattr(t, "_requires_grad", False) for t in inputs',
        replace='getattr(t, "_requires_grad", None) for t in inputs',
        why="ctx.needs_input_grad holds None for a number argument instead of False (mutant "
            "1.1-ab91384aa5)",
    ),
    Mutant(
        id="input-meta-left-empty",
        task="1.1",
        file="autograd/function.py",
        find="        meta.append((t.data.shape, t.data.dtype) if need else None)\n",
        replace="        meta.append(None)\n",
        why="ctx._input_meta is not filled in (mutant 1.1-dfb8ac5715): the engine cannot check "
            "the gradients a backward returns against its inputs",
    ),
    Mutant(
        id="no-grad-flag-set-to-none",
        task="1.3",
        file="autograd/grad_mode.py",
        find="""        self._prev = _state.grad_enabled
        _state.grad_enabled = False
        # END SOLUTION""",
        replace="""        self._prev = _state.grad_enabled
        _state.grad_enabled = None
        # END SOLUTION""",
        why="no_grad stores None as the grad-mode flag (mutant 1.3-729168c86c): "
            "is_grad_enabled() returns None, not False",
    ),
    Mutant(
        id="given-gradient-keeps-its-dtype",
        task="1.2",
        file="autograd/engine.py",
        find='    grad = np.asarray(getattr(grad, "data", grad), dtype=tensor.data.dtype)\n',
        replace='    grad = np.asarray(getattr(grad, "data", grad))\n',
        why="a gradient given to backward keeps its own dtype (mutant 1.2-b2dda737bb): a "
            "float64 gradient for a float32 output reaches the output's hooks as float64",
    ),
    Mutant(
        id="retain-grad-without-gradient-crashes",
        task="1.4",
        file="autograd/node.py",
        find="            if tensor is None or grads[nr] is None:\n",
        replace="            if tensor is None and grads[nr] is None:\n",
        why="retain_grad fails on a tensor that gets no gradient or was dropped before "
            "backward (mutant 1.4-1ca4f863be)",
    ),
    Mutant(
        id="retain-grad-stops-at-the-first-missing-output",
        task="1.4",
        file="autograd/node.py",
        find="""            if tensor is None or grads[nr] is None:
                continue
            if tensor._grad is None:""",
        replace="""            if tensor is None or grads[nr] is None:
                break
            if tensor._grad is None:""",
        why="a node stops keeping its retained outputs' gradients at the first output with "
            "none (mutant 1.4-8eaf1ea791): the used output of a two-output Function loses it",
    ),
    Mutant(
        id="detach-drops-inference",
        task="1.4",
        file="tensor.py",
        find="        out._is_inference = self._is_inference\n        return out\n        # END SOLUTION",
        replace="        out._is_inference = False\n        return out\n        # END SOLUTION",
        why="detach() of an inference tensor is not an inference tensor (mutant "
            "1.4-42367c2eeb makes it None)",
    ),
]
