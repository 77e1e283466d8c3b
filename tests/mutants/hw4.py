"""Wrong variants for assignment 4 (mixed precision), and correct alternatives."""

from . import Mutant

SCALER = "amp/grad_scaler.py"
AUTOCAST = "amp/autocast_mode.py"

MUTANTS = [
    # ----- 4.3 GradScaler ---------------------------------------------------------------
    Mutant(
        id="scaler-grows-after-overflow",
        task="4.3",
        file=SCALER,
        find="""                _growth_tracker.data[...] = 0
            else:
                successful = int(_growth_tracker.data) + 1""",
        replace="""                _growth_tracker.data[...] = 0
            if True:
                successful = int(_growth_tracker.data) + 1""",
        why="an overflowing iteration backs off but then also counts as a clean step, so the "
            "scale can grow right after an overflow",
    ),
    Mutant(
        id="scaler-inverse-scale-float64",
        task="4.3",
        file="amp/grad_scaler.py",
        find="        inv_scale = Tensor((1.0 / self._scale.data.astype(np.float64)).astype(np.float32))",
        replace="        inv_scale = Tensor(1.0 / self._scale.data.astype(np.float64))",
        why="the inverse scale is left in float64: with a scale that is no power of two a "
            "float32 gradient is rounded twice and a float64 one is not rounded to torch's "
            "float32 inverse (torch: float32(1 / float64(scale)))",
    ),
    Mutant(
        id="scaler-grows-in-float32",
        task="4.3",
        file="amp/grad_scaler.py",
        find="                        grown = np.float32(float(_scale.data) * self._growth_factor)",
        replace="                        grown = _scale.data * np.float32(self._growth_factor)",
        why="the grown scale is a float32 product of the scale and float32(growth_factor): "
            "one ulp off torch's float32(float64(scale) * growth_factor) for odd factors",
    ),
    Mutant(
        id="scaler-no-skip-on-overflow",
        task="4.3",
        file=SCALER,
        find="        if not sum(v.item() for v in found_infs.values()):",
        replace="        if True:",
        why="optimizer.step() runs even when the gradients hold inf/NaN",
    ),
    Mutant(
        id="scaler-tracker-not-reset-on-overflow",
        task="4.3",
        file=SCALER,
        find="""                _scale.data[...] = float(_scale.data) * self._backoff_factor
                _growth_tracker.data[...] = 0
""",
        replace="""                _scale.data[...] = float(_scale.data) * self._backoff_factor
""",
        why="an overflow backs off but keeps the count of clean steps, so growth comes early",
    ),
    Mutant(
        id="scaler-growth-off-by-one",
        task="4.3",
        file=SCALER,
        find="                if successful == self._growth_interval:",
        replace="                if successful > self._growth_interval:",
        why="the scale grows after growth_interval + 1 clean steps",
    ),
    Mutant(
        id="scaler-unscale-twice-allowed",
        task="4.3",
        file=SCALER,
        find="""        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update().")
""",
        replace="",
        why="a second unscale_ before update() divides the gradients again instead of raising",
    ),
    Mutant(
        id="scaler-inv-scale-in-fp16",
        task="4.3",
        file=SCALER,
        find="inv_scale = Tensor((1.0 / self._scale.data.astype(np.float64)).astype(np.float32))",
        replace="inv_scale = Tensor((1.0 / self._scale.data.astype(np.float64))"
                ".astype(np.float16).astype(np.float32))",
        why="the inverse scale is rounded to float16, so unscaled gradients are off by up to "
            "5e-4 relative (float32 and float64 reciprocals agree bit for bit: not a mistake)",
    ),
    Mutant(
        id="scaler-nan-not-found",
        task="4.3",
        file=SCALER,
        find="            if not np.isfinite(grad.data).all():",
        replace="            if np.isinf(grad.data).any():",
        why="only inf counts as an overflow; a NaN gradient is stepped on",
    ),
    Mutant(
        id="scaler-grows-to-inf",
        task="4.3",
        file=SCALER,
        find="                    if np.isfinite(grown):",
        replace="                    if True:",
        why="growth past float32's maximum makes the scale inf",
    ),
    Mutant(
        id="scaler-disabled-skips-on-inf",
        task="4.3",
        file=SCALER,
        find="""        if not self._enabled:
            return optimizer.step(*args, **kwargs)
""",
        replace="""        if not self._enabled:
            grads = [p._grad.data for g in optimizer.param_groups for p in g["params"]
                     if p._grad is not None]
            if all(np.isfinite(a).all() for a in grads):
                return optimizer.step(*args, **kwargs)
            return None
""",
        why="a disabled scaler still skips steps with inf/NaN gradients",
    ),
    # ----- 4.1 low precision ------------------------------------------------------------
    Mutant(
        id="matmul-accumulates-in-fp16",
        task="4.1",
        file="ops/linalg.py",
        find="""    autocast_policy = "lower_precision"

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, b: Tensor) -> np.ndarray:
        # BEGIN SOLUTION 2.4
        ctx.save_for_backward(a, b)
        return np.matmul(a.data, b.data)""",
        replace="""    autocast_policy = "lower_precision"
    opmath = False  # "NumPy handles float16 itself"

    @staticmethod
    def forward(ctx: BackwardNode, a: Tensor, b: Tensor) -> np.ndarray:
        # BEGIN SOLUTION 2.4
        ctx.save_for_backward(a, b)
        a2 = a.data[None, :] if a.data.ndim == 1 else a.data
        b2 = b.data[:, None] if b.data.ndim == 1 else b.data
        terms = np.expand_dims(a2, -1) * np.expand_dims(b2, -3)  # (..., n, k, m)
        if terms.shape[-2] == 0:
            out = terms.sum(axis=-2)
        else:  # a running sum in the inputs' dtype, rounded after every addition
            out = np.cumsum(terms, axis=-2, dtype=terms.dtype)[..., -1, :]
        if b.data.ndim == 1:
            out = out[..., 0]
            if a.data.ndim == 1:
                out = out[..., 0]
        elif a.data.ndim == 1:
            out = out[..., 0, :]
        return np.asarray(out)""",
        why="a low-precision matmul that accumulates its products in float16/bfloat16 "
            "(rounded after each addition) instead of float32 as tensor cores do",
    ),
    Mutant(
        id="opmath-not-widened",
        task="4.1",
        file="amp/opmath.py",
        find="    wide = tuple([_float32_alias(a) for a in args])",
        replace="    wide = args",
        why="low-precision calls run forward on the float16/bfloat16 values themselves "
            "(a bfloat16 sum accumulates in bfloat16), then round",
    ),
    Mutant(
        id="cast-gradient-in-output-dtype",
        task="4.1",
        file="ops/conversion.py",
        find="        return cast_array(grad, ctx.input_dtype), None",
        replace="        return grad, None",
        why="the cast's backward hands the gradient back in the cast's dtype, not in its "
            "input's",
    ),
    Mutant(
        id="bfloat16-rounds-by-truncation",
        task="4.1",
        file="ops/conversion.py",
        find="""        if array.dtype == np.float64 and dtype in dtypes.LOW_PRECISION:
            array = array.astype(np.float32)
        return array.astype(dtype)""",
        replace="""        if array.dtype == np.float64 and dtype in dtypes.LOW_PRECISION:
            array = array.astype(np.float32)
        if dtype == dtypes.bfloat16.np and array.dtype == np.float32:  # keep the top 16 bits
            bits = np.ascontiguousarray(array).view(np.uint32) & np.uint32(0xFFFF0000)
            return bits.view(np.float32).astype(dtype)
        return array.astype(dtype)""",
        why="float32 to bfloat16 drops the low 16 bits (rounds toward zero) instead of "
            "rounding to nearest, ties to even",
    ),
    Mutant(
        id="float16-bfloat16-promote-to-bfloat16",
        task="4.1",
        file="dtypes.py",
        find="""        # HINT: neither float16 nor bfloat16 holds the other's values (range vs precision)
        return float32.np""",
        replace="""        # HINT: neither float16 nor bfloat16 holds the other's values (range vs precision)
        return bfloat16.np""",
        why="float16 with bfloat16 promotes to bfloat16 (torch: float32)",
    ),
    Mutant(
        id="scalar-rounded-to-low-precision-first",
        task="4.1",
        file="ops/_helpers.py",
        find="""        wide = function.apply(_as_dtype(input, np.dtype(np.float32)),
                              _as_dtype(other, np.dtype(np.float32)))
        return _as_dtype(wide, dtype)""",
        replace="""        return function.apply(_as_dtype(input, dtype), _as_dtype(other, dtype))""",
        why="a Python scalar is rounded to float16 before a multiply: x16 * 65536.0 is inf "
            "(torch: computed in float32 with the scalar's own value, 65.56 for x = 0.001)",
    ),
    Mutant(
        id="scalar-op-computed-in-float64",
        task="4.1",
        file="ops/_helpers.py",
        find="""        wide = function.apply(_as_dtype(input, np.dtype(np.float32)),
                              _as_dtype(other, np.dtype(np.float32)))""",
        replace="""        wide = function.apply(_as_dtype(input, np.dtype(np.float64)),
                              _as_dtype(other, np.dtype(np.float64)))""",
        why="a low-precision op with a scalar computed in float64, not float32: a scalar "
            "beyond float32's range keeps its value (x16 * 1e50 is 0 at x = 0; torch: NaN, "
            "the scalar is inf in float32)",
    ),
    # ----- 4.2 autocast -----------------------------------------------------------------
    Mutant(
        id="autocast-softmax-left-in-fp16",
        task="4.2",
        file="ops/activation.py",
        find='    """``exp(x) / sum(exp(x))`` along ``axis`` (a 1-tuple, or () for a 0-d input)."""'
             '\n\n    autocast_policy = "fp32"',
        replace='    """``exp(x) / sum(exp(x))`` along ``axis`` (a 1-tuple, or () for a 0-d '
                'input)."""',
        why="softmax has no autocast category: under autocast it runs in float16 (torch's "
            "CUDA policy runs it in float32)",
    ),
    Mutant(
        id="autocast-exit-keeps-state",
        task="4.2",
        file=AUTOCAST,
        find="""            state.cache.clear()
        state.enabled, state.dtype, state.cache_enabled = self._prev""",
        replace="""            state.cache.clear()
        state.enabled = False  # leaving autocast turns it off""",
        why="leaving a region turns autocast off instead of restoring the enclosing "
            "region's state (after a nested region, the outer one no longer casts)",
    ),
    Mutant(
        id="autocast-cache-not-cleared",
        task="4.2",
        file=AUTOCAST,
        find="""        state.nesting -= 1
        if state.nesting == 0:
            state.cache.clear()""",
        replace="""        state.nesting -= 1""",
        why="the weight-cast cache outlives the outermost region: the next region gets "
            "stale casts (after an optimizer step, the old weights)",
    ),
    Mutant(
        id="autocast-casts-float64",
        task="4.2",
        file=AUTOCAST,
        find="""    return tuple(cached_cast(a, target) if is_floating_tensor(a) and a.data.dtype != _FLOAT64
                 else a for a in args)""",
        replace="""    return tuple(cached_cast(a, target) if is_floating_tensor(a) else a for a in args)""",
        why="float64 tensors are cast too (torch's autocast never touches float64)",
    ),
    Mutant(
        id="autocast-cache-every-cast",
        task="4.2",
        file=AUTOCAST,
        find="""                 and tensor.data.dtype == _FLOAT32 and tensor.requires_grad
                 and tensor.grad_fn is None and tensor._base is None)""",
        replace="""                 and tensor.data.dtype == _FLOAT32)""",
        why="every float32 tensor's cast is cached, activations included: a tensor that "
            "does not require grad, a non-leaf or a view gets a stale cast",
    ),
    Mutant(
        id="autocast-cache-cast-under-no-grad",
        task="4.2",
        file=AUTOCAST,
        find="    cast = recorded_cast(tensor, dtype)",
        replace="    cast = to_dtype(tensor, dtype)",
        why="a weight cast first under no_grad is cached without its graph; later calls in "
            "grad mode get it and the weight receives no gradient",
    ),
    Mutant(
        id="autocast-promote-to-autocast-dtype",
        task="4.2",
        file=AUTOCAST,
        find="""            if target == _FLOAT32 or a.data.dtype == _FLOAT32:
                target = _FLOAT32""",
        replace="""            if a.data.dtype == _FLOAT32:
                continue""",
        why='"promote" casts to the autocast dtype even when an input is float32',
    ),
    Mutant(
        id="autocast-cache-keyed-by-shape",
        task="4.2",
        file="amp/autocast_mode.py",
        find="""    hit = state.cache.get(id(tensor))
    if hit is not None and hit[0] is tensor:
        return hit[1]
    cast = recorded_cast(tensor, dtype)
    state.cache[id(tensor)] = (tensor, cast)""",
        replace="""    hit = state.cache.get(tensor.shape)
    if hit is not None:
        return hit[1]
    cast = recorded_cast(tensor, dtype)
    state.cache[tensor.shape] = (tensor, cast)""",
        why="the weight-cast cache is keyed by the shape, not by the weight: a second weight "
            "of that shape gets the first one's cast",
    ),
    # ----- survivors of the mutation sweep (scripts/mutation_test.py) -----------------------
    Mutant(
        id="opmath-drops-keyword-arguments",
        task="4.1",
        file="amp/opmath.py",
        find="    result = cls.forward(ctx, *wide, **kwargs)",
        replace="    result = cls.forward(ctx, *wide)",
        why="a low-precision call's forward, run on float32 stand-ins, loses the keyword "
            "arguments given to Function.apply",
    ),
    Mutant(
        id="scaler-steps-with-no-inf-checks",
        task="4.3",
        file="amp/grad_scaler.py",
        find="""        if len(found_infs) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
""",
        replace="",
        why="step() for an optimizer with no gradients steps it instead of raising "
            "PyTorch's AssertionError",
    ),
    Mutant(
        id="scaler-found-inf-float64",
        task="4.3",
        file="amp/grad_scaler.py",
        find="        found_inf = Tensor(np.zeros((), dtype=np.float32))",
        replace="        found_inf = Tensor(np.zeros(()))",
        why="the found_inf flag made with NumPy's default dtype, float64, not float32",
    ),
    Mutant(
        id="scaler-new-scale-tensor-refused",
        task="4.3",
        file="amp/grad_scaler.py",
        find="                if not isinstance(new_scale, Tensor) or new_scale.numel() != 1:",
        replace="                if True:",
        why="update(new_scale) takes a float only, refusing a 1-element tensor",
    ),
    Mutant(
        id="apex-static-scale-not-unscaled",
        task="4.4",
        file="amp/opt_levels.py",
        find="            elif scale != 1.0:\n"
             "                param.grad.data[...] = unscaled.astype(grad.dtype)",
        replace="            elif self.loss_scaler.dynamic:\n"
                "                param.grad.data[...] = unscaled.astype(grad.dtype)",
        why="without master weights, gradients are unscaled only under a dynamic scale: a "
            "static loss_scale given to initialize stays in them",
    ),
    Mutant(
        id="layer-policy-wraps-every-module",
        task="4.5",
        file="amp/layerwise.py",
        find="        if parent is None or levels[parent] != level:",
        replace="        if True:",
        why="every module with a level is wrapped, also one at its parent's level: its "
            "outputs come back cast to float32 inside a float16 parent",
    ),
]

ALTERNATIVES = [
    Mutant(
        id="scaler-float32-update",
        task="4.3",
        file=SCALER,
        find="""            if sum(float(f.item()) for f in found_infs):
                _scale.data[...] = float(_scale.data) * self._backoff_factor
                _growth_tracker.data[...] = 0
            else:
                successful = int(_growth_tracker.data) + 1
                if successful == self._growth_interval:
                    with np.errstate(over="ignore"):
                        grown = np.float32(float(_scale.data) * self._growth_factor)
                    if np.isfinite(grown):
                        _scale.data[...] = grown
                    _growth_tracker.data[...] = 0
                else:
                    _growth_tracker.data[...] = successful""",
        replace="""            if any(f.item() > 0 for f in found_infs):
                _scale.data[...] = _scale.data.astype(np.float64) * self._backoff_factor
                _growth_tracker.data[...] = 0
            else:
                _growth_tracker.data += 1
                if _growth_tracker.item() == self._growth_interval:
                    _growth_tracker.data[...] = 0
                    with np.errstate(over="ignore"):
                        grown = (_scale.data.astype(np.float64)
                                 * self._growth_factor).astype(np.float32)
                    if np.isfinite(grown):
                        _scale.data[...] = grown""",
        why="the scale updated with NumPy float64 multiplies assigned into the float32 "
            "tensor (one rounding, as torch) and the tracker counted in place (a float32 "
            "multiply would be an ulp off torch: wrong variant scaler-grows-in-float32)",
    ),
    Mutant(
        id="scaler-float32-reciprocal",
        task="4.3",
        file=SCALER,
        find="inv_scale = Tensor((1.0 / self._scale.data.astype(np.float64)).astype(np.float32))",
        replace="inv_scale = Tensor(np.float32(1.0) / self._scale.data)",
        why="the inverse scale as a float32 reciprocal (the same bits as torch's float64 one "
            "rounded to float32)",
    ),
    Mutant(
        id="autocast-promote-as-a-set",
        task="4.2",
        file=AUTOCAST,
        find="""        target = state.dtype
        for a in eligible:
            if target == _FLOAT32 or a.data.dtype == _FLOAT32:
                target = _FLOAT32
            elif a.data.dtype != state.dtype:
                raise RuntimeError("Unexpected floating ScalarType in autocast::prioritize: "
                                   f"{a.data.dtype.name} under {state.dtype.name} autocast")""",
        replace="""        kinds = {a.data.dtype for a in eligible}
        if _FLOAT32 in kinds:
            target = _FLOAT32
        elif kinds == {state.dtype}:
            target = state.dtype
        else:
            raise RuntimeError(f"autocast promote: {sorted(k.name for k in kinds)}")""",
        why='"promote" as "float32 if any input is float32, else the autocast dtype, else an '
            'error", whatever the order of the arguments (torch\'s result depends on the '
            "order where bfloat16 meets float32 under float16 autocast; not graded)",
    ),
    Mutant(
        id="autocast-cache-as-list",
        task="4.2",
        file=AUTOCAST,
        find="""    hit = state.cache.get(id(tensor))
    if hit is not None and hit[0] is tensor:
        return hit[1]
    cast = recorded_cast(tensor, dtype)
    state.cache[id(tensor)] = (tensor, cast)
    return cast""",
        replace="""    pairs = state.cache.setdefault("pairs", [])
    for source, cast in pairs:
        if source is tensor:
            return cast
    cast = recorded_cast(tensor, dtype)
    pairs.append((tensor, cast))
    return cast""",
        why="the cache as a list of (weight, cast) pairs searched by identity",
    ),
    Mutant(
        id="cast-backward-returns-tensor",
        task="4.1",
        file="ops/conversion.py",
        find="        return cast_array(grad, ctx.input_dtype), None",
        replace="        return Tensor(cast_array(grad, ctx.input_dtype))",
        why="the cast's backward returns a Tensor, and leaves out the trailing None (both "
            "allowed)",
    ),
]

# Killing the survivors of scripts/mutation_test.py (mutmut's operators over the solution
# regions): each stands for a surviving mutant that a new check now catches.
MUTANTS += [
    Mutant(
        id="layer-policy-compares-with-the-model",
        task="4.5",
        file="amp/layerwise.py",
        find="""        parent = name.rpartition(".")[0] if name else None
        if parent is None or levels[parent] != level:""",
        replace="""        parent = "" if name else None  # compared with the model's level
        if parent is None or levels[parent] != level:""",
        why="a module is wrapped when its level differs from the model's rather than its "
            "parent's (mutant 4.5-91422fbffb), so a layer back at the model's level inside "
            "another keeps its parent's setting",
    ),
]

MUTANTS += [
    Mutant(
        id="autocast-exit-skips-restore-on-exception",
        task="4.2",
        file="amp/autocast_mode.py",
        find="""    def __exit__(self, *exc: object) -> None:
        # BEGIN SOLUTION 4.2""",
        replace="""    def __exit__(self, *exc: object) -> None:
        if exc and exc[0] is not None:
            return
        # BEGIN SOLUTION 4.2""",
        why="a region left through an exception keeps autocast on: __exit__ restores the "
            "state it found only when the block ends normally",
    ),
    Mutant(
        id="autocast-exit-swallows-exception",
        task="4.2",
        file="amp/autocast_mode.py",
        find="""        state.enabled, state.dtype, state.cache_enabled = self._prev
        # END SOLUTION""",
        replace="""        state.enabled, state.dtype, state.cache_enabled = self._prev
        return True
        # END SOLUTION""",
        why="__exit__ returns True, so an exception raised inside autocast is swallowed",
    ),
]
