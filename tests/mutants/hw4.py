"""Wrong variants for assignment 4 (mixed precision), and correct alternatives."""

from . import Mutant

SCALER = "amp/grad_scaler.py"

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
                _scale.data *= np.float32(self._backoff_factor)
                _growth_tracker.data[...] = 0
            else:
                _growth_tracker.data += 1
                if _growth_tracker.item() == self._growth_interval:
                    _growth_tracker.data[...] = 0
                    with np.errstate(over="ignore"):
                        grown = _scale.data * np.float32(self._growth_factor)
                    if np.isfinite(grown):
                        _scale.data[...] = grown""",
        why="the scale updated with float32 multiplies (torch multiplies in float64, then "
            "rounds: at most an ulp apart) and the tracker counted in place",
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
]
