"""Wrong variants for assignment 3 (saved tensors and memory), and correct alternatives."""

from . import Mutant

MUTANTS = [
    # ----- 3.1 in-place ops, versions, rebase ------------------------------------------------
    Mutant(
        id="view-write-no-version-bump",
        task="3.1",
        file="autograd/inplace.py",
        find="    target._bump_version()\n    if record(ctx, args, (target,)):",
        replace="    if target._base is None:\n        target._bump_version()\n"
                "    if record(ctx, args, (target,)):",
        why="a write through a view does not bump the version its base shares",
    ),
    Mutant(
        id="saved-before-version-bump",
        task="3.1",
        file="autograd/inplace.py",
        find="""    target._bump_version()
    if record(ctx, args, (target,)):
        rebase_history(target, ctx)
        ctx._pack_saved(args, (target,), versions)""",
        replace="""    if record(ctx, args, (target,)):
        rebase_history(target, ctx)
        ctx._pack_saved(args, (target,), versions)
    target._bump_version()""",
        why="the check compares against the wrong version: an in-place op's saved result "
            "records the version from before its own write (relu_ then backward raises)",
    ),
    Mutant(
        id="version-error-swaps-versions",
        task="3.1",
        file="autograd/saved.py",
        find='f"{self._counter.value}; expected version {self._version} instead. "',
        replace='f"{self._version}; expected version {self._counter.value} instead. "',
        why="the version error names the saved and current versions the wrong way round",
    ),
    Mutant(
        id="version-error-describes-saved-output-as-leaf",
        task="3.1",
        file="autograd/saved.py",
        find='f"by an inplace operation: {self._describe(node)} is at version "',
        replace='f"by an inplace operation: {self._describe(self._tensor.grad_fn)} is at version "',
        why="the version error describes a saved output through the history-free alias it "
            "keeps, so it does not say which node's output the modified tensor is",
    ),
    Mutant(
        id="leaf-written-in-place",
        task="3.1",
        file="autograd/inplace.py",
        find="""        if tensor._requires_grad and tensor.grad_fn is None:
            raise RuntimeError(LEAF_ERROR)
        return""",
        replace="        return",
        why="an in-place write into a leaf that requires grad is allowed",
    ),
    Mutant(
        id="inference-tensor-written",
        task="3.1",
        file="autograd/inplace.py",
        find="""    if tensor._is_inference:
        grad_mode.check_inference_tensor(tensor, "inplace")
""",
        replace="",
        why="an inference tensor can be written in place outside inference_mode",
    ),
    Mutant(
        id="no-grad-view-written",
        task="3.1",
        file="autograd/inplace.py",
        find="""    if tensor._creation_meta == "no_grad_mode" and (records or base._requires_grad):
        raise RuntimeError(NO_GRAD_VIEW_ERROR)
""",
        replace="",
        why="a view made under no_grad can be written with grad mode on",
    ),
    Mutant(
        id="view-write-base-not-rebased",
        task="3.1",
        file="autograd/inplace.py",
        find="""    else:
        copy_slices = CopySlices(base, tensor, node)
        base.grad_fn, base._output_nr, base._requires_grad = copy_slices, 0, True
    refresh_views(base)""",
        replace="""    else:
        return
    refresh_views(base)""",
        why="a write through a view rebases only the view, not its base",
    ),
    Mutant(
        id="copyslices-view-region-passes-through",
        task="3.1",
        file="autograd/inplace.py",
        find="        flat[positions] = 0 if fn_grads[0] is None else fn_grads[0]\n",
        replace="",
        why="the base's gradient in the written view's region is not replaced by what "
            "flows through the in-place op",
    ),
    Mutant(
        id="other-views-not-refreshed",
        task="3.1",
        file="autograd/inplace.py",
        find="""        base.grad_fn, base._output_nr, base._requires_grad = copy_slices, 0, True
    refresh_views(base)""",
        replace="""        base.grad_fn, base._output_nr, base._requires_grad = copy_slices, 0, True
        refresh_views(base)""",
        why="after a write into a base, its views keep their old history",
    ),
    Mutant(
        id="view-write-const-base-stays-const",
        task="3.1",
        file="autograd/inplace.py",
        find="        base.grad_fn, base._output_nr, base._requires_grad = copy_slices, 0, True\n"
             "    refresh_views(base)",
        replace="        base.grad_fn, base._output_nr = copy_slices, 0\n    refresh_views(base)",
        why="a write through a view gives the base a CopySlices grad_fn but a base that did "
            "not require grad stays marked as not requiring it (torch: it now does)",
    ),
    Mutant(
        id="view-write-rebases-only-grad-bases",
        task="3.1",
        file="autograd/inplace.py",
        find="    base = tensor._base\n    if base is None:\n        base = tensor\n",
        replace="    base = tensor._base\n    if base is None or not base._requires_grad:\n"
                "        base = tensor\n",
        why="a write through a view of a base that does not require grad rebases only the "
            "view: the base never learns that it now depends on the written value",
    ),
    Mutant(
        id="no-grad-view-only-when-recorded",
        task="3.1",
        file="autograd/inplace.py",
        find='    if tensor._creation_meta == "no_grad_mode" and (records or base._requires_grad):',
        replace='    if tensor._creation_meta == "no_grad_mode" and records:',
        why="a view made under no_grad of a base that requires grad may be written with a "
            "constant in grad mode (torch refuses: its base requires grad)",
    ),
    Mutant(
        id="view-of-leaf-checked-before-no-grad-view",
        task="3.1",
        file="autograd/inplace.py",
        find='''    if tensor._creation_meta == "no_grad_mode" and (records or base._requires_grad):
        raise RuntimeError(NO_GRAD_VIEW_ERROR)
    if base._requires_grad and base.grad_fn is None:
        raise RuntimeError(VIEW_OF_LEAF_ERROR)''',
        replace='''    if base._requires_grad and base.grad_fn is None:
        raise RuntimeError(VIEW_OF_LEAF_ERROR)
    if tensor._creation_meta == "no_grad_mode" and (records or base._requires_grad):
        raise RuntimeError(NO_GRAD_VIEW_ERROR)''',
        why="a view of a leaf made under no_grad gets the view-of-a-leaf error instead of "
            "torch's no_grad-view error",
    ),
    Mutant(
        id="copy-slices-grad-copied-in-its-own-order",
        task="3.1",
        file="autograd/inplace.py",
        find='        result = np.array(grad, order="C", copy=True)',
        replace="        result = np.copy(grad)",
        why="CopySlices copies the incoming gradient with np.copy (order 'K'): a transposed "
            "gradient stays Fortran-ordered, reshape(-1) copies, and the view's part of the "
            "gradient is never written (layout axis)",
    ),
    # ----- 3.2 saved-tensor hooks -----------------------------------------------------------
    Mutant(
        id="pack-per-use",
        task="3.2",
        file="autograd/saved.py",
        find="""        pack_hook, self._unpack_hook = hooks
        with grad_mode.no_grad():
            self._packed = pack_hook(tensor)""",
        replace="""        pack_hook, unpack_hook = hooks
        self._unpack_hook = lambda t: unpack_hook(pack_hook(t))
        self._packed = tensor""",
        why="the pack hook runs each time the tensor is used, not once when it is saved "
            "(so the graph holds the tensor itself)",
    ),
    Mutant(
        id="outermost-hooks-win",
        task="3.2",
        file="autograd/graph.py",
        find="    return stack[-1] if stack else None",
        replace="    return stack[0] if stack else None",
        why="nested saved_tensors_hooks: the outermost pair is used instead of the innermost",
    ),
    Mutant(
        id="unpack-once",
        task="3.2",
        file="autograd/saved.py",
        find="""        with grad_mode.no_grad():
            tensor = self._unpack_hook(self._packed)""",
        replace="""        with grad_mode.no_grad():
            tensor = self._unpack_hook(self._packed)
        self._unpack_hook = lambda packed, tensor=tensor: tensor""",
        why="the unpack hook runs on the first use only; later uses get its cached result",
    ),
    Mutant(
        id="hooks-with-grad-mode-on",
        task="3.2",
        file="autograd/saved.py",
        find="""        with grad_mode.no_grad():
            self._packed = pack_hook(tensor)""",
        replace="""        self._packed = pack_hook(tensor)""",
        why="the pack hook runs with grad mode on",
    ),
    Mutant(
        id="saved-name-ignored",
        task="3.2",
        file="autograd/node.py",
        find="        saved = self._saved[names.index(name[len(\"_saved_\"):])]",
        replace="        saved = self._saved[0]",
        why="grad_fn._saved_<name> returns the first saved tensor whatever the name",
    ),
    Mutant(
        id="unpack-hook-error-names-the-class",
        task="3.2",
        file="autograd/saved.py",
        find='                f"type {type(tensor).__name__}"',
        replace='                f"type {type(tensor)}"',
        why="the unpack_hook TypeError names the returned value's class as <class 'int'>, "
            "not PyTorch's 'of type int'",
    ),
    Mutant(
        id="saved-names-missing-on-a-node-that-saved-nothing",
        task="3.2",
        file="autograd/node.py",
        find='        names = self.__dict__.get("_names_saved", ())',
        replace='        names = self.__dict__.get("_names_saved")',
        why="grad_fn._saved_self on a node that saved nothing raises TypeError (None is not "
            "iterable) instead of AttributeError",
    ),
    Mutant(
        id="saved-attribute-error-without-the-class",
        task="3.2",
        file="autograd/node.py",
        find="""        if name[len("_saved_"):] not in names:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")""",
        replace="""        if name[len("_saved_"):] not in names:
            raise AttributeError(name)""",
        why="an unknown grad_fn._saved_<name> raises AttributeError('_saved_x'), not Python's "
            "\"'MulBackward0' object has no attribute '_saved_x'\"",
    ),
    Mutant(
        id="unpack-grad-mode-not-restored-on-exception",
        task="3.2",
        file="autograd/saved.py",
        find="""        with grad_mode.no_grad():
            tensor = self._unpack_hook(self._packed)""",
        replace="""        previous = grad_mode._state.grad_enabled
        grad_mode._state.grad_enabled = False
        tensor = self._unpack_hook(self._packed)
        grad_mode._state.grad_enabled = previous""",
        why="the unpack hook runs with grad mode off, but an exception in it leaves grad mode "
            "off (exception axis)",
    ),
    # ----- 3.3 offload ------------------------------------------------------------------------
    Mutant(
        id="cpu-offload-loses-shape",
        task="3.3",
        file="autograd/graph.py",
        find="        return Tensor(np.frombuffer(buffer, dtype).reshape(shape).copy())",
        replace="        return Tensor(np.frombuffer(buffer, dtype).copy())",
        why="save_on_cpu's unpack does not restore the shape (a flat tensor comes back)",
    ),
    Mutant(
        id="cpu-offload-loses-dtype",
        task="3.3",
        file="autograd/graph.py",
        find="        return Tensor(np.frombuffer(buffer, dtype).reshape(shape).copy())",
        replace="        return Tensor(np.frombuffer(buffer).reshape(shape).copy())",
        why="save_on_cpu's unpack does not restore the dtype",
    ),
    Mutant(
        id="cpu-offload-keeps-the-tensor",
        task="3.3",
        file="autograd/graph.py",
        find="        return tensor.device, tensor.data.dtype, tensor.shape, tensor.data.tobytes()",
        replace="        return tensor.device, tensor.data.dtype, tensor.shape, tensor.data",
        why="save_on_cpu's pack keeps the tensor's own storage, so nothing is freed",
    ),
    Mutant(
        id="disk-files-never-deleted",
        task="3.3",
        file="autograd/graph.py",
        find="        weakref.finalize(saved, _remove_file, saved.path)\n",
        replace="",
        why="save_on_disk's files stay after the graph is freed",
    ),
    Mutant(
        id="disk-unpack-read-only-memmap",
        task="3.3",
        file="autograd/graph.py",
        find="        return Tensor(np.load(saved.path, allow_pickle=False))",
        replace='        return Tensor(np.load(saved.path, mmap_mode="r", allow_pickle=False))',
        why="save_on_disk's unpack maps the file read-only: writing into the unpacked tensor "
            "fails (ownership axis; torch's unpacked tensor is the caller's)",
    ),
    # ----- 3.4 checkpoint ---------------------------------------------------------------------
    Mutant(
        id="checkpoint-rng-not-put-back-on-exception",
        task="3.4",
        file="utils/checkpoint.py",
        find="""        try:
            with grad_mode.enable_grad():
                outputs = ctx.function(*args)
        finally:
            if ctx.rng_state is not None:  # without preserve_rng_state, draws move it on
                generator.bit_generator.state = state_now""",
        replace="""        with grad_mode.enable_grad():
            outputs = ctx.function(*args)
        if ctx.rng_state is not None:  # without preserve_rng_state, draws move it on
            generator.bit_generator.state = state_now""",
        why="when backward's recomputation raises, the generator is left at the forward's "
            "saved state instead of being put back (exception axis; torch's fork_rng "
            "restores it)",
    ),
    Mutant(
        id="checkpoint-keeps-activations",
        task="3.4",
        file="utils/checkpoint.py",
        find="""        with grad_mode.no_grad():
            outputs = function(*args)""",
        replace="""        with grad_mode.enable_grad():
            outputs = ctx.kept = function(*args)""",
        why="the checkpointed segment records its graph in forward and keeps it, so its "
            "activations are saved anyway",
    ),
    Mutant(
        id="checkpoint-recomputes-on-undetached-inputs",
        task="3.4",
        file="utils/checkpoint.py",
        find="            args[i] = saved.detach().requires_grad_(saved.requires_grad)",
        replace="            args[i] = saved",
        why="the recomputation runs on the saved inputs themselves, so its backward runs "
            "into the outer graph too",
    ),
    Mutant(
        id="checkpoint-random-numbers-differ",
        task="3.4",
        file="utils/checkpoint.py",
        find="""        if ctx.rng_state is not None:
            generator.bit_generator.state = ctx.rng_state
""",
        replace="",
        why="the recomputation draws new random numbers (dropout masks differ)",
    ),
    Mutant(
        id="checkpoint-recomputes-in-callers-grad-mode",
        task="3.4",
        file="utils/checkpoint.py",
        find="""            with grad_mode.enable_grad():
                outputs = ctx.function(*args)""",
        replace="""            outputs = ctx.function(*args)""",
        why="the recomputation runs in whatever grad mode backward was called in: under "
            "no_grad it records nothing and no gradient flows",
    ),
    Mutant(
        id="checkpoint-generator-not-put-back",
        task="3.4",
        file="utils/checkpoint.py",
        find="""            if ctx.rng_state is not None:  # without preserve_rng_state, draws move it on
                generator.bit_generator.state = state_now""",
        replace="""            pass""",
        why="after the recomputation the generator is left where the replayed forward left "
            "it: numbers drawn between forward and backward are drawn again",
    ),
    Mutant(
        id="checkpoint-always-preserves-rng",
        task="3.4",
        file="utils/checkpoint.py",
        find="bit_generator.state if preserve_rng_state \\\n            else None",
        replace="bit_generator.state",
        why="preserve_rng_state=False is ignored: the recomputation replays the forward's "
            "numbers anyway",
    ),
]

ALTERNATIVES = [
    Mutant(
        id="cpu-offload-as-array-copy",
        task="3.3",
        file="autograd/graph.py",
        find="        return tensor.device, tensor.data.dtype, tensor.shape, tensor.data.tobytes()",
        replace="        data = np.array(tensor.data, order=\"C\")\n"
                "        return tensor.device, data.dtype, data.shape, data.tobytes()",
        why="pack through an explicit C-ordered copy (same result, different code)",
    ),
    Mutant(
        id="saved-names-by-dict",
        task="3.2",
        file="autograd/node.py",
        find="""        names = self.__dict__.get("_names_saved", ())
        if name[len("_saved_"):] not in names:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        self._check_not_released()
        saved = self._saved[names.index(name[len("_saved_"):])]""",
        replace="""        by_name = {}
        for i, saved_name in enumerate(self.__dict__.get("_names_saved", ())):
            by_name.setdefault(saved_name, i)
        if name.removeprefix("_saved_") not in by_name:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        self._check_not_released()
        saved = self._saved[by_name[name.removeprefix("_saved_")]]""",
        why="a dict from names to positions instead of list.index",
    ),
    Mutant(
        id="copyslices-with-np-put",
        task="3.1",
        file="autograd/inplace.py",
        find="""        result = np.array(grad, order="C", copy=True)
        flat = result.reshape(-1)
        positions = view_positions(self.geometry)
        fn_grads = self.fn._run_backward([flat[positions]])
        flat[positions] = 0 if fn_grads[0] is None else fn_grads[0]
        return (result, *fn_grads[1:])""",
        replace="""        positions = view_positions(self.geometry)
        fn_grads = self.fn._run_backward([np.take(grad, positions)])
        result = np.array(grad, dtype=grad.dtype)
        np.put(result, positions, 0 if fn_grads[0] is None else fn_grads[0])
        return (result, *fn_grads[1:])""",
        why="np.take / np.put on the flat indices instead of a reshaped copy",
    ),
]
