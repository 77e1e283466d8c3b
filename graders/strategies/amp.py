"""GradScaler runs: scaler settings, parameters split over one or two optimizers, and a
sequence of iterations, each with true gradients (inf/NaN injected at drawn iterations),
whether to call ``unscale_`` explicitly before ``step``, and now and then a manual
``update(new_scale)``.

A run is a plain dict (see ``runs``); ``graders.probes.amp.scaler_run`` and
``graders.oracle.amp.scaler_run`` play it in tinytrain and in torch. Gradients are drawn
unscaled, with magnitudes between 0.1 and 10, so that the unscaled gradients compared with
torch are of order one and float32 tolerances are meaningful; the probes multiply them by
the scaler's current scale before setting ``.grad``, as a scaled backward would.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from ..suites._seed import case_rng

SHAPES = [(), (3,), (2, 3)]
NON_FINITE = [np.inf, -np.inf, np.nan]


@st.composite
def scaler_configs(draw: Any) -> dict[str, Any]:
    """GradScaler keyword arguments: torch's defaults half the time, else drawn values.
    Small growth intervals so that the scale grows within a short run; odd init scales
    and factors so that scales are not powers of two (then an inverse scale computed in a
    low precision shows); an init scale near float32's maximum now and then, so that
    growth would overflow and must be refused."""
    init_scale = draw(st.one_of(
        st.just(2.0**16),
        st.floats(1.0, 2.0**20),
        st.sampled_from([1.0, 3.0, 1000.1, 2.0**126, 2.5e38]),
    ))
    growth_factor = draw(st.one_of(st.just(2.0), st.floats(1.01, 4.0)))
    backoff_factor = draw(st.one_of(st.just(0.5), st.floats(0.05, 0.99)))
    return {"init_scale": init_scale, "growth_factor": growth_factor,
            "backoff_factor": backoff_factor, "growth_interval": draw(st.integers(1, 4))}


def _grad(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    magnitude = 10 ** rng.uniform(-1, 1, size=shape)
    return (rng.choice([-1.0, 1.0], size=shape) * magnitude).astype(dtype)


@st.composite
def runs(draw: Any, min_steps: int = 1, max_steps: int = 12) -> dict[str, Any]:
    """``{"config", "params", "dtypes", "owners", "lrs", "steps"}``.

    ``params[i]`` belongs to optimizer ``owners[i]`` (one or two optimizers, each with at
    least one parameter and its own lr). Each step is ``{"loss", "grads", "overflow",
    "unscale_first", "new_scale"}``: a loss value to scale, one true gradient per
    parameter (None: no gradient this iteration; each optimizer keeps at least one),
    for each optimizer whether an inf/NaN was injected and whether ``unscale_`` is called
    before ``step``, and None or a float for ``update(new_scale)``.
    """
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    config = draw(scaler_configs())
    n_opt = draw(st.integers(1, 2))
    owners, shapes, dtypes = [], [], []
    for o in range(n_opt):
        for _ in range(draw(st.integers(1, 2))):
            owners.append(o)
            shapes.append(draw(st.sampled_from(SHAPES)))
            dtypes.append("float64" if rng.random() < 0.2 else "float32")
    params = [_grad(rng, s, d) for s, d in zip(shapes, dtypes, strict=True)]
    lrs = [draw(st.floats(0.01, 0.5)) for _ in range(n_opt)]
    overflow_rate = draw(st.sampled_from([0.0, 0.15, 0.4]))
    steps = []
    for _ in range(draw(st.integers(min_steps, max_steps))):
        grads: list[Any] = [None if rng.random() < 0.15 else _grad(rng, s, d)
                            for s, d in zip(shapes, dtypes, strict=True)]
        overflow = []
        for o in range(n_opt):
            mine = [i for i, owner in enumerate(owners) if owner == o]
            if all(grads[i] is None for i in mine):
                i = mine[0]
                grads[i] = _grad(rng, shapes[i], dtypes[i])
            hit = bool(rng.random() < overflow_rate)
            if hit:
                i = int(rng.choice([i for i in mine if grads[i] is not None]))
                flat = grads[i].reshape(-1)
                flat[rng.integers(flat.size)] = rng.choice(NON_FINITE)
            overflow.append(hit)
        steps.append({
            "loss": float(np.float32(rng.uniform(0.5, 2.0))),
            "grads": grads,
            "overflow": overflow,
            "unscale_first": [bool(rng.random() < 0.3) for _ in range(n_opt)],
            "new_scale": float(np.float32(2 ** rng.uniform(0, 16))) if rng.random() < 0.08
            else None,
        })
    return {"config": config, "params": params, "dtypes": dtypes, "owners": owners,
            "lrs": lrs, "steps": steps}


def fixed_run(config: dict[str, Any], events: list[str], two_optimizers: bool = False,
              magnitude: float = 1.0, seed: int = 0) -> dict[str, Any]:
    """A deterministic run, one iteration per event: "clean"; "inf", "nan" (injected in
    optimizer 0's first gradient); "inf1" (in optimizer 1's); "unscale" (clean, with
    unscale_ before step); "new_scale" (clean, then update(new_scale=1024.0)). True
    gradients are multiplied by ``magnitude`` (small ones keep a huge scale finite). The
    values come from the grading seed (``seed`` at grading seed 0)."""
    rng = case_rng(seed, "amp fixed_run", sorted(config.items()), events, two_optimizers,
                   magnitude)
    owners = [0, 0, 1] if two_optimizers else [0, 0]
    shapes = [(3,), (2, 3), (2,)][: len(owners)]
    params = [_grad(rng, s, "float32") for s in shapes]
    steps = []
    n_opt = max(owners) + 1
    for event in events:
        grads = [(_grad(rng, s, "float32") * np.float32(magnitude)) for s in shapes]
        overflow = [False] * n_opt
        if event in ("inf", "nan"):
            grads[0][0] = np.inf if event == "inf" else np.nan
            overflow[0] = True
        if event == "inf1":
            grads[2][0] = -np.inf
            overflow[1] = True
        steps.append({"loss": 1.0, "grads": grads, "overflow": overflow,
                      "unscale_first": [event == "unscale"] * n_opt,
                      "new_scale": 1024.0 if event == "new_scale" else None})
    return {"config": config, "params": params, "dtypes": ["float32"] * len(owners),
            "owners": owners, "lrs": [0.1] * n_opt, "steps": steps}
