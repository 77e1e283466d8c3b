"""Wrong variants for assignment 5 (modules, optimizers, data), and correct alternatives."""

from . import Mutant

MUTANTS = [
    # ----- 5.1 Module ---------------------------------------------------------------
    Mutant(
        id="named-parameters-no-dedup",
        task="5.1",
        file="nn/module.py",
        find="                if value is None or value in memo:",
        replace="                if value is None:",
        why="a tied parameter (or one in a shared submodule) is listed once per name",
    ),
    Mutant(
        id="named-members-walk-every-path",
        task="5.1",
        file="nn/module.py",
        find="        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)",
        replace="        modules = (self.named_modules(prefix=prefix, remove_duplicate=False)",
        why="named_parameters walks every path to every module, relying on its own set of "
            "tensors to drop repeats: a submodule that refers back to its parent "
            "(child.parent = model) makes the walk endless (torch skips modules already seen)",
    ),
    Mutant(
        id="named-modules-skips-empty-container",
        task="5.1",
        file="nn/module.py",
        find="            if module is None:\n                continue\n            child_prefix",
        replace="            if not module:\n                continue\n            child_prefix",
        why="named_modules tests a child's truthiness: an empty Sequential/ModuleList "
            "(len() == 0) is left out of named_modules, modules and the state_dict walk",
    ),
    Mutant(
        id="named-buffers-always-recurse",
        task="5.1",
        file="nn/module.py",
        find="        return self._named_members(lambda m: m._buffers.items(), prefix, recurse,",
        replace="        return self._named_members(lambda m: m._buffers.items(), prefix, True,",
        why="named_buffers(recurse=False) still lists the submodules' buffers",
    ),
    Mutant(
        id="train-one-level",
        task="5.1",
        file="nn/module.py",
        find="""            # BEGIN SOLUTION 5.1
            module.train(mode)
            # END SOLUTION""",
        replace="""            # BEGIN SOLUTION 5.1
            module.training = mode
            # END SOLUTION""",
        why="train()/eval() reach the children but not the grandchildren",
    ),
    Mutant(
        id="state-dict-non-persistent-buffers",
        task="5.1",
        file="nn/module.py",
        find="            if buf is not None and name not in self._non_persistent_buffers_set:\n"
             "                destination[prefix + name]",
        replace="            if buf is not None:\n                destination[prefix + name]",
        why="state_dict includes buffers registered with persistent=False",
    ),
    Mutant(
        id="state-dict-copies",
        task="5.1",
        file="nn/module.py",
        find="                destination[prefix + name] = param if keep_vars else param._alias()",
        replace="                destination[prefix + name] = (param if keep_vars else "
                "Tensor(param.data.copy()))",
        why="state_dict returns copies instead of history-free references to the parameters",
    ),
    Mutant(
        id="load-state-dict-aliases",
        task="5.1",
        file="nn/module.py",
        find="            tensor.data[...] = value.data\n",
        replace="            tensor.data = value.data\n",
        why="load_state_dict makes the model share the checkpoint's arrays instead of copying",
    ),
    Mutant(
        id="load-state-dict-no-unexpected",
        task="5.1",
        file="nn/module.py",
        find="                if head not in self._modules and head not in local:",
        replace="                if head not in self._modules and head not in local and False:",
        why="load_state_dict never reports unexpected keys",
    ),
    Mutant(
        id="apply-parent-first",
        task="5.1",
        file="nn/module.py",
        find="""        for module in self.children():
            module.apply(fn)
        fn(self)""",
        replace="""        fn(self)
        for module in self.children():
            module.apply(fn)""",
        why="apply() calls fn on the module before its children",
    ),
    Mutant(
        id="module-zero-grad-always-none",
        task="5.1",
        file="nn/module.py",
        find="            if set_to_none:\n                param.grad = None",
        replace="            if True:\n                param.grad = None",
        why="Module.zero_grad(set_to_none=False) still drops the gradients",
    ),
    Mutant(
        id="to-casts-integer-buffers",
        task="5.1",
        file="nn/module.py",
        find='a.astype(target) if a.dtype.kind == "f" else a',
        replace="a.astype(target)",
        why="to(float64) also converts integer buffers",
    ),
    # ----- 5.2 Optimizer base ----------------------------------------------------------
    Mutant(
        id="optimizer-zero-grad-always-none",
        task="5.2",
        file="optim/optimizer.py",
        find="                if set_to_none:\n                    param.grad = None",
        replace="                if True:\n                    param.grad = None",
        why="optimizer.zero_grad(set_to_none=False) still drops the gradients",
    ),
    Mutant(
        id="optimizer-state-dict-indices-per-group",
        task="5.2",
        file="optim/optimizer.py",
        find="""            for param in group["params"]:
                index.setdefault(id(param), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]""",
        replace="""            for i, param in enumerate(group["params"]):
                index[id(param)] = i
            packed["params"] = [index[id(p)] for p in group["params"]]""",
        why="parameter positions restart at 0 in every group instead of counting across groups",
    ),
    Mutant(
        id="optimizer-load-no-cast",
        task="5.2",
        file="optim/optimizer.py",
        find="                array = array.astype(param.data.dtype)",
        replace="                pass",
        why="loaded state keeps its saved dtype instead of the parameter's",
    ),
    Mutant(
        id="optimizer-load-copies-only-the-list",
        task="5.2",
        file="optim/optimizer.py",
        find='        saved_groups = copy.deepcopy(state_dict["param_groups"])',
        replace='        saved_groups = list(state_dict["param_groups"])',
        why="load_state_dict copies the list of groups but takes the dict's group dicts as "
            "its own: it writes the parameters into the caller's state_dict (which then "
            "cannot be loaded again) and later lr changes show in it",
    ),
    Mutant(
        id="optimizer-load-only-tensor-state",
        task="5.2",
        file="optim/optimizer.py",
        find="            self.state[param] = {k: cast(param, k, v) for k, v in saved.items()}",
        replace="            self.state[param] = {k: cast(param, k, v) for k, v in saved.items()\n"
                "                                 if isinstance(v, Tensor)}",
        why="load_state_dict keeps only the tensors of a parameter's state, dropping entries "
            "that are Python numbers (torch keeps them)",
    ),
    Mutant(
        id="optimizer-load-keeps-hyperparameters",
        task="5.2",
        file="optim/optimizer.py",
        find="        self.param_groups = saved_groups\n",
        replace="",
        why="load_state_dict restores the state but not the groups' hyperparameters",
    ),
    Mutant(
        id="optimizer-load-no-group-count-check",
        task="5.2",
        file="optim/optimizer.py",
        find="""        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
""",
        replace="",
        why="a state_dict with another number of groups is not refused with PyTorch's error",
    ),
    # ----- 5.3 SGD ---------------------------------------------------------------------
    Mutant(
        id="sgd-momentum-buffer-init-dampened",
        task="5.3",
        file="optim/sgd.py",
        find="np.array(grad, dtype=param.data.dtype, copy=True)",
        replace="((1 - dampening) * grad).astype(param.data.dtype)",
        why="the momentum buffer starts as zeros updated once ((1 - dampening) * g), not as g",
    ),
    Mutant(
        id="sgd-momentum-buffer-is-the-grad",
        task="5.3",
        file="optim/sgd.py",
        find="np.array(grad, dtype=param.data.dtype, copy=True)",
        replace="grad",
        why="the first momentum buffer wraps the gradient's array instead of a copy (torch "
            "clones it): a .grad written in place changes the buffer, and the buffer's "
            "updates write into .grad",
    ),
    Mutant(
        id="sgd-weight-decay-only-with-momentum",
        task="5.3",
        file="optim/sgd.py",
        find="                if weight_decay != 0:\n                    grad = grad + weight_decay",
        replace="                if weight_decay != 0 and momentum != 0:\n"
                "                    grad = grad + weight_decay",
        why="weight decay is added only on the momentum path: plain SGD(weight_decay=...) "
            "ignores it",
    ),
    Mutant(
        id="sgd-nesterov-ignored",
        task="5.3",
        file="optim/sgd.py",
        find="grad = grad + momentum * buf.data if nesterov else buf.data",
        replace="grad = buf.data",
        why="nesterov=True behaves like plain momentum",
    ),
    Mutant(
        id="sgd-weight-decay-after-momentum",
        task="5.3",
        file="optim/sgd.py",
        find="                param.data -= lr * grad\n",
        replace="                param.data -= lr * (grad + (weight_decay * param.data if momentum "
                "else 0))\n",
        why="with momentum, weight decay is applied twice (also after the momentum buffer)",
    ),
    Mutant(
        id="sgd-maximize-inverted",
        task="5.3",
        file="optim/sgd.py",
        find='                if group["maximize"]:',
        replace='                if not group["maximize"]:',
        why="maximize is inverted: plain SGD climbs the gradient",
    ),
    Mutant(
        id="sgd-momentum-buffer-not-kept",
        task="5.3",
        file="optim/sgd.py",
        find='buf = state.get("momentum_buffer")',
        replace="buf = None",
        why="the momentum buffer restarts from the gradient at every step",
    ),
    # ----- 5.4 Adam / AdamW --------------------------------------------------------------
    Mutant(
        id="adam-skips-non-finite-gradients",
        task="5.4",
        file="optim/adam.py",
        find="                grad = param._grad.data\n                if group[\"maximize\"]:",
        replace="                grad = np.nan_to_num(param._grad.data, nan=0.0, posinf=0.0, neginf=0.0)\n"
                "                if group[\"maximize\"]:",
        why="Adam zeroes NaN/inf gradient entries instead of propagating them into the "
            "moments and the parameter as torch does",
    ),
    Mutant(
        id="amsgrad-max-ignores-nan",
        task="5.4",
        file="optim/adam.py",
        find="                    np.maximum(state[\"max_exp_avg_sq\"].data, exp_avg_sq,",
        replace="                    np.fmax(state[\"max_exp_avg_sq\"].data, exp_avg_sq,",
        why="amsgrad's running maximum skips a NaN second moment (torch.maximum propagates it)",
    ),
    Mutant(
        id="adam-no-bias-correction",
        task="5.4",
        file="optim/adam.py",
        find="""                bias_correction1 = 1 - beta1**step
                bias_correction2 = 1 - beta2**step""",
        replace="""                bias_correction1 = 1.0
                bias_correction2 = 1.0""",
        why="Adam without bias correction",
    ),
    Mutant(
        id="adamw-weight-decay-adam-way",
        task="5.4",
        file="optim/adam.py",
        find='                    if group["decoupled_weight_decay"]:',
        replace="                    if False:",
        why="AdamW adds weight_decay * p to the gradient (L2, the Adam way) instead of decaying p",
    ),
    Mutant(
        id="adam-eps-inside-sqrt",
        task="5.4",
        file="optim/adam.py",
        find="denom = np.sqrt(exp_avg_sq) / bias_correction2**0.5 + eps",
        replace="denom = np.sqrt(exp_avg_sq / bias_correction2 + eps)",
        why="eps added under the square root",
    ),
    Mutant(
        id="adam-amsgrad-ignored",
        task="5.4",
        file="optim/adam.py",
        find='                    exp_avg_sq = state["max_exp_avg_sq"].data\n',
        replace="",
        why="amsgrad keeps the running maximum but does not use it",
    ),
    # ----- 5.5 schedulers ----------------------------------------------------------------
    Mutant(
        id="steplr-decays-at-epoch-zero",
        task="5.5",
        file="optim/lr_scheduler.py",
        find="if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:",
        replace="if self.last_epoch % self.step_size != 0:",
        why="StepLR multiplies by gamma already at construction (epoch 0)",
    ),
    Mutant(
        id="warmup-off-by-one",
        task="5.5",
        file="optim/lr_scheduler.py",
        find="            return float(step) / float(max(1, num_warmup_steps))",
        replace="            return float(step + 1) / float(max(1, num_warmup_steps))",
        why="the warmup starts at lr / warmup instead of 0",
    ),
    Mutant(
        id="lambda-lr-chains",
        task="5.5",
        file="optim/lr_scheduler.py",
        find="""        return [base_lr * fn(self.last_epoch)
                for fn, base_lr in zip(self.lr_lambdas, self.base_lrs, strict=True)]""",
        replace="""        return [group["lr"] * fn(self.last_epoch) for fn, group in
                zip(self.lr_lambdas, self.optimizer.param_groups, strict=True)]""",
        why="LambdaLR multiplies the current lr instead of the base lr",
    ),
    # ----- 5.6 data ----------------------------------------------------------------------
    Mutant(
        id="shuffle-ignores-seed",
        task="5.6",
        file="data/dataloader.py",
        find="randperm(len(self.data_source), generator=self.generator)",
        replace="randperm(len(self.data_source))",
        why="shuffling ignores the loader's generator (and so its seed)",
    ),
    Mutant(
        id="shuffle-once",
        task="5.6",
        file="data/dataloader.py",
        find="        self.generator = generator\n\n    def __iter__(self) -> Iterator[int]:",
        replace="        self.generator = generator\n        self._order = None\n\n"
                "    def __iter__(self) -> Iterator[int]:\n"
                "        if self._order is None:\n"
                "            self._order = randperm(len(self.data_source), "
                "generator=self.generator).tolist()\n"
                "        return iter(self._order)",
        why="the order is drawn once and every epoch repeats it",
    ),
    Mutant(
        id="drop-last-ignored",
        task="5.6",
        file="data/dataloader.py",
        find="        if batch and not self.drop_last:",
        replace="        if batch:",
        why="drop_last=True still yields the incomplete last batch",
    ),
    Mutant(
        id="split-remainder-to-last",
        task="5.6",
        file="data/dataset.py",
        find="            sizes[i % len(sizes)] += 1",
        replace="            sizes[-1] += 1",
        why="random_split gives the whole remainder to the last split, not round robin",
    ),
    Mutant(
        id="split-fractions-close-to-one",
        task="5.6",
        file="data/dataset.py",
        find="    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:",
        replace="    if math.isclose(sum(lengths), 1):",
        why="fractions whose float sum is just above 1 ([0.05] * 20: 1.0000000000000002) "
            "are split as fractions (torch takes them as lengths and raises ValueError)",
    ),
    Mutant(
        id="split-fractions-rounded",
        task="5.6",
        file="data/dataset.py",
        find="            sizes.append(math.floor(n * frac))",
        replace="            sizes.append(round(n * frac))",
        why="each fraction's share is rounded instead of floored, so the round-robin "
            "remainder goes elsewhere (or the sizes overshoot n)",
    ),
    Mutant(
        id="collate-floats-as-float32",
        task="5.6",
        file="data/dataloader.py",
        find="        return Tensor(np.array(batch, dtype=np.float64))",
        replace="        return Tensor(np.array(batch, dtype=np.float32))",
        why="Python floats collate to float32 (torch makes float64)",
    ),
    Mutant(
        id="collate-bools-as-ints",
        task="5.6",
        file="data/dataloader.py",
        find="""    if isinstance(elem, bool):
        return Tensor(np.array(batch, dtype=np.bool_))
""",
        replace="",
        why="Python bools collate to an int64 tensor (torch makes a bool tensor)",
    ),
    Mutant(
        id="split-no-sum-check",
        task="5.6",
        file="data/dataset.py",
        find="""    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
""",
        replace="",
        why="random_split accepts lengths that do not add up to the dataset size",
    ),
    Mutant(
        id="split-fractions-unchecked",
        task="5.6",
        file="data/dataset.py",
        find="""            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
""",
        replace="",
        why="random_split accepts fractions outside [0, 1] when they add up to 1 "
            "([1.5, -0.5]: torch refuses with a ValueError)",
    ),
    Mutant(
        id="collate-ragged-numpy-error",
        task="5.6",
        file="data/dataloader.py",
        find="""        shapes = {b.shape for b in batch}
        if len(shapes) > 1:
            raise RuntimeError("stack expects each tensor to be equal size, but got "
                               f"{list(batch[0].shape)} at entry 0 and "
                               f"{next(list(b.shape) for b in batch if b.shape != elem.shape)}")
""",
        replace="",
        why="tensors of different shapes reach np.stack, whose ValueError is not torch's "
            "RuntimeError naming the two shapes",
    ),
    Mutant(
        id="split-no-fractions",
        task="5.6",
        file="data/dataset.py",
        find="    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:",
        replace="    if False:",
        why="random_split takes only sizes: fractions such as [0.8, 0.1, 0.1] are refused",
    ),
    # ----- 5.7 early stopping ------------------------------------------------------------
    Mutant(
        id="early-stopping-not-strict",
        task="5.7",
        file="data/early_stopping.py",
        find="            improved = value < self.best - self.min_delta",
        replace="            improved = value <= self.best - self.min_delta",
        why="a value exactly min_delta better than the best counts as an improvement",
    ),
    Mutant(
        id="early-stopping-patience-off-by-one",
        task="5.7",
        file="data/early_stopping.py",
        find="        self.should_stop = self.num_bad_epochs >= self.patience",
        replace="        self.should_stop = self.num_bad_epochs > self.patience",
        why="stops one epoch late (after patience + 1 bad epochs)",
    ),
]

ALTERNATIVES = [
    Mutant(
        id="adam-textbook-form",
        task="5.4",
        file="optim/adam.py",
        find="""                exp_avg += (1 - beta1) * (grad - exp_avg)""",
        replace="""                exp_avg *= beta1
                exp_avg += (1 - beta1) * grad""",
        why="the textbook moving average instead of torch's lerp",
    ),
    Mutant(
        id="adam-bias-corrected-moments",
        task="5.4",
        file="optim/adam.py",
        find="""                denom = np.sqrt(exp_avg_sq) / bias_correction2**0.5 + eps
                param.data -= lr / bias_correction1 * exp_avg / denom""",
        replace="""                m_hat = exp_avg / bias_correction1
                v_hat = exp_avg_sq / bias_correction2
                param.data -= lr * m_hat / (np.sqrt(v_hat) + eps)""",
        why="Adam with bias-corrected moments m_hat and v_hat (the paper's algorithm 1)",
    ),
    Mutant(
        id="sgd-out-of-place-buffer",
        task="5.3",
        file="optim/sgd.py",
        find="""                        buf.data *= momentum
                        buf.data += (1 - dampening) * grad""",
        replace=" " * 24 + "buf.data[...] = momentum * buf.data + (1 - dampening) * grad",
        why="the momentum update in one expression",
    ),
    Mutant(
        id="steplr-closed-form",
        task="5.5",
        file="optim/lr_scheduler.py",
        find="""        groups = self.optimizer.param_groups
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [group["lr"] for group in groups]
        return [group["lr"] * self.gamma for group in groups]""",
        replace="""        return [base * self.gamma ** (self.last_epoch // self.step_size)
                for base in self.base_lrs]""",
        why="StepLR's closed form base_lr * gamma ** (epoch // step_size)",
    ),
    Mutant(
        id="named-members-by-id",
        task="5.1",
        file="nn/module.py",
        find="""        memo: set[Tensor] = set()
        for module_prefix, module in modules:
            for name, value in members(module):
                if value is None or value in memo:
                    continue
                if remove_duplicate:
                    memo.add(value)""",
        replace="""        memo: set[int] = set()
        for module_prefix, module in modules:
            for name, value in members(module):
                if value is None or id(value) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(value))""",
        why="deduplication by id() instead of by tensor identity in a set",
    ),
    Mutant(
        id="random-split-numpy",
        task="5.6",
        file="data/dataset.py",
        find="""    indices = randperm(n, generator=generator).tolist()
    return [Subset(dataset, indices[end - size:end])
            for end, size in zip(itertools.accumulate(lengths), lengths, strict=True)]""",
        replace="""    perm = randperm(n, generator=generator).numpy()
    parts = np.split(perm, np.cumsum(lengths)[:-1])
    return [Subset(dataset, part.tolist()) for part in parts]""",
        why="the permutation cut with np.split",
    ),
    Mutant(
        id="early-stopping-keras-style",
        task="5.7",
        file="data/early_stopping.py",
        find="""        if improved:
            self.best = value
            self.best_epoch = self.epoch
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1""",
        replace="""        self.num_bad_epochs += 1
        if improved:
            self.best = value
            self.best_epoch = self.epoch
            self.num_bad_epochs = 0""",
        why="Keras' order: count first, reset on improvement",
    ),
]

# ----- the layers, attention, GPT (tasks 5.8-5.14) --------------------------------------
MUTANTS += [
    # 5.8 Linear and Embedding
    Mutant(
        id="embedding-backward-indices-memory-order",
        task="5.8",
        file="ops/layers.py",
        find="        np.add.at(grad_weight, ctx.indices.reshape(-1), grad.reshape(-1, dim))",
        replace="        np.add.at(grad_weight, ctx.indices.ravel(order=\"K\"), grad.reshape(-1, dim))",
        why="the indices are flattened in memory order: a transposed (Fortran-ordered) "
            "matrix of indices pairs its gradient rows with the wrong indices",
    ),
    Mutant(
        id="linear-init-relu-gain",
        task="5.8",
        file="nn/layers.py",
        find="        init.kaiming_uniform_(self.weight, a=math.sqrt(5))",
        replace='        init.kaiming_uniform_(self.weight, nonlinearity="relu")',
        why="Linear's weight drawn with He's ReLU gain: U(+-sqrt(6 / fan_in)), not +-1/sqrt(fan_in)",
    ),
    Mutant(
        id="linear-bias-bound-without-sqrt",
        task="5.8",
        file="nn/layers.py",
        find="            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0",
        replace="            bound = 1 / fan_in if fan_in > 0 else 0",
        why="Linear's bias bound is 1 / fan_in instead of 1 / sqrt(fan_in)",
    ),
    Mutant(
        id="kaiming-ignores-mode",
        task="5.8",
        file="nn/init.py",
        find='    fan = fan_in if mode == "fan_in" else fan_out',
        replace="    fan = fan_in",
        why="kaiming_uniform_(mode='fan_out') still scales by fan_in",
    ),
    Mutant(
        id="embedding-init-uniform",
        task="5.8",
        file="nn/layers.py",
        find="        init.normal_(self.weight)\n        if self.padding_idx is not None:",
        replace="        init.uniform_(self.weight, -1, 1)\n        if self.padding_idx is not None:",
        why="Embedding's weight drawn from U(-1, 1) instead of N(0, 1)",
    ),
    Mutant(
        id="embedding-backward-accumulates-in-float32",
        task="5.8",
        file="ops/layers.py",
        find="        grad_weight = np.zeros((ctx.num_embeddings, dim), dtype=grad.dtype)",
        replace="        grad_weight = np.zeros((ctx.num_embeddings, dim), dtype=np.float32)",
        why="the weight's gradient summed in float32 whatever the weight's dtype: a float64 "
            "table gets float32-rounded gradients",
    ),
    Mutant(
        id="embedding-padding-idx-zero-kept",
        task="5.8",
        file="nn/layers.py",
        find="        if self.padding_idx is not None:",
        replace="        if self.padding_idx:",
        why="Embedding(padding_idx=0) leaves row 0 drawn: the falsy padding index is "
            "taken for none",
    ),
    Mutant(
        id="embedding-backward-overwrites-repeats",
        task="5.8",
        file="ops/layers.py",
        find="        np.add.at(grad_weight, ctx.indices.reshape(-1), grad.reshape(-1, dim))",
        replace="        grad_weight[ctx.indices.reshape(-1)] = grad.reshape(-1, dim)",
        why="a row picked several times keeps only one gradient (assignment, not scatter-add)",
    ),
    Mutant(
        id="embedding-padding-row-gets-gradient",
        task="5.8",
        file="ops/layers.py",
        find="        if ctx.padding_idx is not None:\n            grad_weight[ctx.padding_idx] = 0\n",
        replace="",
        why="the padding row receives gradient",
    ),
    Mutant(
        id="embedding-negative-index-wraps",
        task="5.8",
        file="ops/layers.py",
        find="        if idx.size and (idx.min() < 0 or idx.max() >= num_embeddings):",
        replace="        if idx.size and idx.max() >= num_embeddings:",
        why="a negative index wraps around (NumPy's rule) instead of raising IndexError",
    ),
    # 5.9 LayerNorm
    Mutant(
        id="layernorm-unbiased-variance",
        task="5.9",
        file="ops/layers.py",
        find="        var = (centered * centered).mean(axis=axes, keepdims=True)",
        replace="        var = x.var(axis=axes, keepdims=True, ddof=1) if x.size else centered",
        why="LayerNorm normalises with the unbiased variance (N - 1) instead of the biased one",
    ),
    Mutant(
        id="layernorm-backward-no-variance-term",
        task="5.9",
        file="ops/layers.py",
        find="            grad_input = rstd * (g - g.mean(axis=axes, keepdims=True)\n"
             "                                 - x_hat * (g * x_hat).mean(axis=axes, "
             "keepdims=True))",
        replace="            grad_input = rstd * (g - g.mean(axis=axes, keepdims=True))",
        why="the input gradient forgets that the variance depends on the input too",
    ),
    Mutant(
        id="layernorm-weight-grad-without-xhat",
        task="5.9",
        file="ops/layers.py",
        find="        grad_weight = (grad * x_hat).sum(axis=batch) if needs[2] else None",
        replace="        grad_weight = grad.sum(axis=batch) if needs[2] else None",
        why="the weight gradient sums the incoming gradient without multiplying by x_hat",
    ),
    # 5.10 Dropout
    Mutant(
        id="dropout-active-in-eval",
        task="5.10",
        file="ops/layers.py",
        find="    if not training or p == 0:\n        return input",
        replace="    if p == 0:\n        return input",
        why="Dropout keeps dropping in eval mode",
    ),
    Mutant(
        id="dropout-not-inverted",
        task="5.10",
        file="ops/layers.py",
        find="        scale = 0.0 if p == 1 else 1.0 / (1.0 - p)",
        replace="        scale = 0.0 if p == 1 else 1.0",
        why="kept elements are not scaled by 1 / (1 - p) (the expected value shrinks)",
    ),
    Mutant(
        id="dropout-keeps-with-probability-p",
        task="5.10",
        file="ops/layers.py",
        find="        keep = tt_random.default_generator().random(input.shape) >= p",
        replace="        keep = tt_random.default_generator().random(input.shape) < p",
        why="each element is kept (not dropped) with probability p",
    ),
    Mutant(
        id="dropout-numpy-global-rng",
        task="5.10",
        file="ops/layers.py",
        find="        keep = tt_random.default_generator().random(input.shape) >= p",
        replace="        keep = np.random.random(input.shape) >= p",
        why="masks come from NumPy's global generator: tt.manual_seed does not fix them",
    ),
    Mutant(
        id="dropout-backward-ignores-mask",
        task="5.10",
        file="ops/layers.py",
        find="        return grad * mask.data, None",
        replace="        return grad, None",
        why="the gradient flows through dropped elements too",
    ),
    # 5.11 activation and loss modules
    Mutant(
        id="gelu-module-ignores-approximate",
        task="5.11",
        file="nn/activation.py",
        find="        return F.gelu(input, approximate=self.approximate)",
        replace="        return F.gelu(input)",
        why="GELU(approximate='tanh') computes the exact GELU",
    ),
    Mutant(
        id="softmax-module-last-dim",
        task="5.11",
        file="nn/activation.py",
        find="        return F.softmax(input, dim)",
        replace="        return F.softmax(input, -1)",
        why="Softmax(dim) always normalises the last dim",
    ),
    Mutant(
        id="cross-entropy-module-drops-options",
        task="5.11",
        file="nn/loss.py",
        find="        return F.cross_entropy(input, target, ignore_index=self.ignore_index,\n"
             "                               reduction=self.reduction, "
             "label_smoothing=self.label_smoothing)",
        replace="        return F.cross_entropy(input, target, reduction=self.reduction)",
        why="CrossEntropyLoss forgets ignore_index and label_smoothing",
    ),
    # 5.12 attention
    Mutant(
        id="attention-no-causal-mask",
        task="5.12",
        file="models/gpt.py",
        find='        att = self.attn_dropout(F.softmax(where(future, float("-inf"), scores), dim=-1))',
        replace="        att = self.attn_dropout(F.softmax(scores, dim=-1))",
        why="attention without the causal mask: every position sees the future",
    ),
    Mutant(
        id="attention-no-scaling",
        task="5.12",
        file="models/gpt.py",
        find="        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(head))",
        replace="        scores = q @ k.transpose(-2, -1)",
        why="scores not scaled by 1 / sqrt(head_size)",
    ),
    Mutant(
        id="attention-heads-split-without-transpose",
        task="5.12",
        file="models/gpt.py",
        find="            return columns.reshape(batch, steps, self.n_head, head).transpose(1, 2)",
        replace="            return columns.reshape(batch, self.n_head, steps, head)",
        why="heads split by reshaping (B, T, C) straight to (B, nh, T, hs): heads mix positions",
    ),
    # 5.13 GPT
    Mutant(
        id="gpt-post-norm",
        task="5.13",
        file="models/gpt.py",
        find="        x = x + self.attn(self.ln_1(x))\n        return x + self.mlp(self.ln_2(x))",
        replace="        x = self.ln_1(x + self.attn(x))\n        return self.ln_2(x + self.mlp(x))",
        why="post-norm blocks (LayerNorm after the residual sum) instead of pre-norm",
    ),
    Mutant(
        id="gpt-no-position-embedding",
        task="5.13",
        file="models/gpt.py",
        find="        x = transformer.wte(idx) + transformer.wpe(arange(steps))",
        replace="        x = transformer.wte(idx)",
        why="the position embeddings are never added",
    ),
    Mutant(
        id="gpt-no-final-layernorm",
        task="5.13",
        file="models/gpt.py",
        find="        logits = self.lm_head(transformer.ln_f(x))",
        replace="        logits = self.lm_head(x)",
        why="the head reads the residual stream without the final LayerNorm",
    ),
    # 5.14 end to end
    Mutant(
        id="param-groups-decay-everything",
        task="5.14",
        file="models/gpt.py",
        find='            {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0},',
        replace='            {"params": [p for p in params if p.ndim < 2], "weight_decay": weight_decay},',
        why="biases and LayerNorm weights decay too",
    ),
    Mutant(
        id="param-groups-tied-weight-twice",
        task="5.14",
        file="models/gpt.py",
        find="        params = [p for _, p in self.named_parameters() if p.requires_grad]",
        replace="        params = [p for _, p in self.named_parameters(remove_duplicate=False)\n"
                "                  if p.requires_grad]",
        why="a tied weight is listed (and so updated) twice",
    ),
]

ALTERNATIVES += [
    Mutant(
        id="attention-additive-mask",
        task="5.12",
        file="models/gpt.py",
        find='        att = self.attn_dropout(F.softmax(where(future, float("-inf"), scores), dim=-1))',
        replace="        mask = Tensor(np.where(future.data, -np.inf, 0.0).astype(scores.data.dtype))\n"
                "        att = self.attn_dropout(F.softmax(scores + mask, dim=-1))",
        why="the causal mask added as a matrix of 0 and -inf",
    ),
    Mutant(
        id="layernorm-var-by-numpy",
        task="5.9",
        file="ops/layers.py",
        find="        var = (centered * centered).mean(axis=axes, keepdims=True)",
        replace="        var = x.var(axis=axes, keepdims=True)",
        why="the biased variance from np.var",
    ),
    Mutant(
        id="embedding-backward-one-hot",
        task="5.8",
        file="ops/layers.py",
        find="        np.add.at(grad_weight, ctx.indices.reshape(-1), grad.reshape(-1, dim))",
        replace="        one_hot = ctx.indices.reshape(-1, 1) == np.arange(ctx.num_embeddings)\n"
                "        grad_weight += one_hot.T.astype(grad.dtype) @ grad.reshape(-1, dim)",
        why="the weight gradient as one_hot(indices).T @ grad",
    ),
]

# Behaviours PyTorch has that these tasks did not grade before (issue 10): the writes
# PyTorch counts in _version, a step that leaves .grad alone and updates in place, the
# optimizer state's dtype, module options and module-level stability, a function per group.
MUTANTS += [
    Mutant(
        id="load-state-dict-no-version-bump",
        task="5.1",
        file="nn/module.py",
        find="            tensor.data[...] = value.data\n            tensor._bump_version()\n",
        replace="            tensor.data[...] = value.data\n",
        why="load_state_dict copies into the parameters without counting the write: a tensor "
            "saved for backward and overwritten by the load goes undetected",
    ),
    Mutant(
        id="load-state-dict-rebinds-arrays",
        task="5.1",
        file="nn/module.py",
        find="            tensor.data[...] = value.data\n",
        replace="            tensor.data = np.array(value.data, copy=True)\n",
        why="load_state_dict gives each tensor a new array instead of copying into its "
            "storage: a state_dict taken before the load keeps the old values",
    ),
    Mutant(
        id="module-zero-grad-no-version-bump",
        task="5.1",
        file="nn/module.py",
        find="                grad.data[...] = 0\n                grad._bump_version()\n",
        replace="                grad.data[...] = 0\n",
        why="Module.zero_grad(set_to_none=False) zeroes the grads without counting the write",
    ),
    Mutant(
        id="optimizer-zero-grad-no-version-bump",
        task="5.2",
        file="optim/optimizer.py",
        find="                    grad.data[...] = 0\n                    grad._bump_version()\n",
        replace="                    grad.data[...] = 0\n",
        why="Optimizer.zero_grad(set_to_none=False) zeroes the grads without counting the write",
    ),
    Mutant(
        id="sgd-weight-decay-into-grad-in-place",
        task="5.3",
        file="optim/sgd.py",
        find="                    grad = grad + weight_decay * param.data",
        replace="                    grad += weight_decay * param.data",
        why="SGD adds the weight decay into the parameter's .grad itself: the step is right, "
            "but .grad has changed",
    ),
    Mutant(
        id="sgd-rebinds-param",
        task="5.3",
        file="optim/sgd.py",
        find="                param.data -= lr * grad",
        replace="                param.data = param.data - lr * grad",
        why="SGD gives the parameter a new array instead of updating it in place",
    ),
    Mutant(
        id="sgd-momentum-buffer-float32",
        task="5.3",
        file="optim/sgd.py",
        find="np.array(grad, dtype=param.data.dtype, copy=True)",
        replace="np.array(grad, dtype=np.float32, copy=True)",
        why="the momentum buffer is float32 whatever the parameter's dtype",
    ),
    Mutant(
        id="adam-weight-decay-into-grad-in-place",
        task="5.4",
        file="optim/adam.py",
        find="                        grad = grad + weight_decay * param.data",
        replace="                        grad += weight_decay * param.data",
        why="Adam's L2 weight decay is added into the parameter's .grad itself",
    ),
    Mutant(
        id="adam-state-float32",
        task="5.4",
        file="optim/adam.py",
        find='                    state["exp_avg"] = Tensor(np.zeros_like(param.data))',
        replace='                    state["exp_avg"] = Tensor(np.zeros(param.shape, np.float32))',
        why="exp_avg is float32 whatever the parameter's dtype",
    ),
    Mutant(
        id="lambda-lr-first-function-for-all-groups",
        task="5.5",
        file="optim/lr_scheduler.py",
        find="""        return [base_lr * fn(self.last_epoch)
                for fn, base_lr in zip(self.lr_lambdas, self.base_lrs, strict=True)]""",
        replace="        return [base_lr * self.lr_lambdas[0](self.last_epoch)\n"
                "                for base_lr in self.base_lrs]",
        why="LambdaLR with one function per group applies the first group's to every group",
    ),
    Mutant(
        id="relu-module-ignores-inplace",
        task="5.11",
        file="nn/activation.py",
        find="        return input.relu_() if self.inplace else F.relu(input)",
        replace="        return F.relu(input)",
        why="ReLU(inplace=True) returns a new tensor and leaves its input alone",
    ),
    Mutant(
        id="log-softmax-module-as-log-of-softmax",
        task="5.11",
        file="nn/activation.py",
        find="        return F.log_softmax(input, dim)",
        replace="        return F.softmax(input, dim).log()",
        why="the LogSoftmax module takes the log of the softmax: [0, 200] gives [-inf, 0] "
            "(torch: [-200, 0])",
    ),
]

# Killing the survivors of scripts/mutation_test.py (mutmut's operators over the solution
# regions): each stands for a surviving mutant that a new check now catches.
MUTANTS += [
    Mutant(
        id="kaiming-uniform-ignores-its-generator",
        task="5.8",
        file="nn/init.py",
        find="    return uniform_(tensor, -bound, bound, generator)\n",
        replace="    return uniform_(tensor, -bound, bound)\n",
        why="kaiming_uniform_ draws from the global generator even when given one (mutant "
            "5.8-c50803c2e1)",
    ),
]

# Survivors of task 5.3 killed (issue 10).
MUTANTS += [
    Mutant(
        id="sgd-momentum-buffer-in-grad-dtype",
        task="5.3",
        file="optim/sgd.py",
        find="np.array(grad, dtype=param.data.dtype, copy=True)",
        replace="grad.copy()",
        why="the first momentum buffer keeps the dtype of grad + weight_decay * p: float64 "
            "for a float32 parameter when the hyperparameters are NumPy float64 scalars "
            "(mutants 5.3-d1a1f6d190, 5.3-5ab1f41e63)",
    ),
]
