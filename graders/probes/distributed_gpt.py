"""Probe for task 7.6: the GPT trained with ParallelTrainer on a (pp, dp, tp) mesh of
ranks as threads, with a validation loss (under no_grad, inside the trainer) before
every step."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import probe
from ._observe import array
from .distributed_common import mark, run_world
from .gpt import _gpt


@probe
def train(tt: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """``spec``: cfg, weights (the full GPT's), mesh (pp, dp, tp), n_microbatches,
    sequence_parallel, options (lr, weight_decay, betas), batches (the whole batch per
    step: idx, targets; rank takes its data-parallel rows) and val (idx, targets). Per
    rank: the validation loss before each step, each step's loss, and its stage's
    parameters by name at the end."""
    dist = tt.distributed
    pp, dp, tp = spec["mesh"]

    def rank_main(rank: int) -> dict[str, Any]:
        model = _gpt(tt, spec["cfg"], spec["weights"])
        mesh = dist.init_device_mesh("cpu", (pp, dp, tp), ("pp", "dp", "tp"))
        options = spec["options"]
        trainer = dist.models.ParallelTrainer(
            model, mesh, n_microbatches=spec["n_microbatches"],
            sequence_parallel=spec["sequence_parallel"], lr=options["lr"],
            weight_decay=options["weight_decay"], betas=tuple(options["betas"]))
        share = mesh.get_local_rank("dp")

        def part(a: np.ndarray) -> Any:
            return tt.tensor(np.split(a, dp)[share])

        losses, val = [], []
        for step, (idx, targets) in enumerate(spec["batches"]):
            mark("step", step=step)
            val.append(trainer.evaluate(part(spec["val"][0]), part(spec["val"][1])))
            losses.append(trainer.step(part(idx), part(targets)))
        params = {name: array(p) for name, p in trainer.stage_module.named_parameters()}
        return {"losses": np.array(losses), "val": np.array(val), "params": params,
                "coordinate": list(mesh.coordinate)}

    results, trace = run_world(tt, pp * dp * tp, rank_main)
    for result, events in zip(results, trace, strict=True):
        result["trace"] = events
    return {"ranks": results}
