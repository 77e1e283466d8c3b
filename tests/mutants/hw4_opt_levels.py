"""Wrong variants for tasks 4.4 (APEX opt levels) and 4.5 (layer-wise precision)."""

from . import Mutant

LEVELS = "amp/opt_levels.py"
LAYERWISE = "amp/layerwise.py"

MUTANTS = [
    # ----- 4.4 opt levels -----------------------------------------------------------------
    Mutant(
        id="o2-masters-without-requires-grad",
        task="4.4",
        file=LEVELS,
        find="np.float32), requires_grad=True) for p in params]",
        replace="np.float32)) for p in params]",
        why="the float32 masters the optimizer steps do not require grad (APEX makes "
            "them leaves with requires_grad=True, like the parameters they copy)",
    ),
    Mutant(
        id="o2-without-master-weights",
        task="4.4",
        file=LEVELS,
        find="    if level.master_weights:\n",
        replace="    if False:\n",
        why="O2 steps the float16 parameters themselves: updates below float16's "
            "resolution are lost",
    ),
    Mutant(
        id="o2-masters-not-copied-back",
        task="4.4",
        file=LEVELS,
        find="                    param.data[...] = master.data.astype(param.data.dtype)\n",
        replace="                    pass\n",
        why="the optimizer updates the float32 masters but the model keeps its old weights",
    ),
    Mutant(
        id="unscale-in-float16",
        task="4.4",
        file=LEVELS,
        find="            unscaled = grad.astype(np.float32) * np.float32(1.0 / scale)\n",
        replace="            unscaled = (grad * grad.dtype.type(1.0 / scale)).astype(np.float32)\n",
        why="gradients are unscaled in float16, where grad / 65536 underflows",
    ),
    Mutant(
        id="apex-no-skip-on-overflow",
        task="4.4",
        file=LEVELS,
        find="    if overflow:\n        optimizer._skip_next_step = True\n",
        replace="",
        why="optimizer.step() runs on gradients that overflowed",
    ),
    Mutant(
        id="apex-scaler-keeps-count-on-overflow",
        task="4.4",
        file=LEVELS,
        find="                self._loss_scale = max(self._min_loss_scale, self._loss_scale)\n"
             "            self._unskipped = 0\n",
        replace="                self._loss_scale = max(self._min_loss_scale, self._loss_scale)\n",
        why="an overflow halves the scale but keeps counting clean steps, so it grows early",
    ),
    Mutant(
        id="apex-scaler-uncapped",
        task="4.4",
        file=LEVELS,
        find="            self._loss_scale = min(self._max_loss_scale, self._loss_scale * "
             "self._scale_factor)\n",
        replace="            self._loss_scale = self._loss_scale * self._scale_factor\n",
        why="the dynamic scale grows past max_loss_scale",
    ),
    Mutant(
        id="o1-static-loss-scale",
        task="4.4",
        file=LEVELS,
        find='    "O1": OptLevel(None, patch_functions=True, master_weights=False, '
             'loss_scale="dynamic"),',
        replace='    "O1": OptLevel(None, patch_functions=True, master_weights=False, loss_scale=1.0),',
        why="O1 without dynamic loss scaling",
    ),
    Mutant(
        id="o3-outputs-left-in-float16",
        task="4.4",
        file=LEVELS,
        find="        return cast_floats(out, np.dtype(np.float32))\n",
        replace="        return out\n",
        why="O2/O3 models hand float16 outputs to a float32 loss",
    ),
    # ----- 4.5 layer-wise policy ---------------------------------------------------------
    Mutant(
        id="layerwise-ignores-embedding-rule",
        task="4.5",
        file=LAYERWISE,
        find="        levels[name] = rules.get(name, rules.get(type(module).__name__, inherited))",
        replace="        own = None if type(module).__name__ == 'Embedding' else "
                "rules.get(type(module).__name__)\n"
                "        levels[name] = rules.get(name, own if own is not None else inherited)",
        why="the policy's Embedding rule is ignored: embeddings run at their parent's level",
    ),
    Mutant(
        id="layerwise-children-do-not-inherit",
        task="4.5",
        file=LAYERWISE,
        find="        inherited = levels.get(parent) if parent is not None else None\n",
        replace="        inherited = None\n",
        why="a submodule without a rule of its own does not take its parent's level",
    ),
    Mutant(
        id="layerwise-class-rule-beats-name-rule",
        task="4.5",
        file=LAYERWISE,
        find="        levels[name] = rules.get(name, rules.get(type(module).__name__, inherited))",
        replace="        levels[name] = rules.get(type(module).__name__, rules.get(name, inherited))",
        why="a rule for the class wins over a rule for that very module",
    ),
    Mutant(
        id="layerwise-accepts-o2",
        task="4.5",
        file=LAYERWISE,
        find="        if level not in LAYER_LEVELS:\n",
        replace="        if level not in LAYER_LEVELS + ('O2',):\n",
        why="a per-layer O2 is accepted, though no optimizer will hold its master weights",
    ),
    Mutant(
        id="layerwise-casts-descendants-too",
        task="4.5",
        file=LAYERWISE,
        find="        for param in module.parameters(recurse=False):\n",
        replace="        for param in module.parameters():\n",
        why="each module casts its descendants' parameters too (parameters() recurses): a "
            "float32 layer inside an O3 layer has its parameters rounded through float16",
    ),
    Mutant(
        id="layerwise-o0-under-outer-autocast",
        task="4.5",
        file=LAYERWISE,
        find="            patch_forward(module, level, autocast_off=True)",
        replace="            patch_forward(module, level)",
        why="an O0 (or O3) layer inside an autocast region still runs its ops under autocast",
    ),
    Mutant(
        id="layerwise-casts-the-subtree",
        task="4.5",
        file=LAYERWISE,
        find="        for param in module.parameters(recurse=False):",
        replace="        for param in module.parameters():",
        why="each module casts its whole subtree's parameters: a float32 layer inside an O3 "
            "one ends float32 again but with its values rounded through float16",
    ),
    Mutant(
        id="o2-model-grads-unscaled-too",
        task="4.4",
        file="amp/opt_levels.py",
        find="""            if self.masters is not None:
                self.masters[i].grad = Tensor(unscaled)""",
        replace="""            if self.masters is not None:
                self.masters[i].grad = Tensor(unscaled)
                param.grad.data[...] = unscaled.astype(grad.dtype)""",
        why="at O2 the model's float16 gradients are overwritten with the unscaled ones "
            "(APEX unscales into the masters' .grad only)",
    ),
]

ALTERNATIVES = [
    Mutant(
        id="loss-scaler-counts-down",
        task="4.4",
        file=LEVELS,
        find="""        self._unskipped += 1
        if self._unskipped == self._scale_window:
            self._loss_scale = min(self._max_loss_scale, self._loss_scale * self._scale_factor)
            self._unskipped = 0""",
        replace="""        self._unskipped += 1
        if self._scale_window - self._unskipped <= 0:
            grown = self._loss_scale * self._scale_factor
            self._loss_scale = grown if grown < self._max_loss_scale else self._max_loss_scale
            self._unskipped = 0""",
        why="the same growth rule, written as a countdown with an explicit cap",
    ),
]
