"""Probes for task 7.5: pipeline stages and schedules on ranks as threads.

The model is the probes' MLP cut into stages of consecutive Linear layers (tanh between
layers, none after the last). Each stage is instrumented with the probes' own code: a
forward records "F"; an identity Function after the stage's first layer records "B" when
backward reaches it (that micro-batch's backward through this stage). Saved-tensor hooks
on each rank count the bytes the graph holds for backward (alive until backward frees
them): the peak over the step, and the bytes of one micro-batch's forward.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from . import probe
from ._observe import array
from .distributed_common import mark, run_world, sgd
from .gpt import _at, _build, _load


class _Held:
    """A saved tensor's packed form; its bytes count until the graph drops it."""

    def __init__(self, counter: dict[str, int], tensor: Any) -> None:
        self.tensor = tensor
        nbytes = int(tensor.data.nbytes)
        counter["live"] += nbytes
        counter["peak"] = max(counter["peak"], counter["live"])
        weakref.finalize(self, _release, counter, nbytes)


def _release(counter: dict[str, int], nbytes: int) -> None:
    counter["live"] -= nbytes


def _stage_module(tt: Any, layers: list[int], widths: list[int], last: int,
                  log: list[str]) -> Any:
    class Mark(tt.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> np.ndarray:
            return np.array(x.data, copy=True)

        @staticmethod
        def backward(ctx: Any, g: np.ndarray) -> np.ndarray:
            log.append("B")
            return g

    class Stage(tt.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            for k in layers:
                setattr(self, f"fc{k}", tt.nn.Linear(widths[k], widths[k + 1]))

        def forward(self, x: Any) -> Any:
            log.append("F")
            for n, k in enumerate(layers):
                x = getattr(self, f"fc{k}")(x)
                if k < last:
                    x = tt.tanh(x)
                if n == 0:
                    x = Mark.apply(x)
            return x

    return _build(tt, Stage)


@probe
def train(tt: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """``spec``: world (= stages), widths, weights (the full MLP's), stages (each stage's
    layer indices), schedule ("gpipe" or "1f1b"), n_microbatches, steps (batches of
    (x, y)) and lr (the probes' SGD between steps). Per rank: the F/B order of each step,
    the peak bytes held for backward and those of one micro-batch, the last stage's
    losses, gradients by name at each step."""
    dist = tt.distributed
    pp = dist.pipelining
    widths, world, n = spec["widths"], spec["world"], spec["n_microbatches"]
    last = len(widths) - 2
    cls = {"gpipe": pp.ScheduleGPipe, "1f1b": pp.Schedule1F1B}[spec["schedule"]]

    def rank_main(rank: int) -> dict[str, Any]:
        layers = spec["stages"][rank]
        log: list[str] = []
        module = _stage_module(tt, layers, widths, last, log)
        names = [f"fc{k}.{p}" for k in layers for p in ("weight", "bias")]
        _load(module, {name: spec["weights"][name] for name in names})
        stage = pp.PipelineStage(module, rank, world)
        schedule = cls(stage, n, loss_fn=tt.nn.functional.mse_loss)
        # one micro-batch alone (no communication): the bytes its forward saves
        probe_counter = {"live": 0, "peak": 0}
        x0, y0 = (a[: a.shape[0] // n] for a in spec["steps"][0])
        sample = tt.tensor(np.full((x0.shape[0], widths[layers[0]]), 0.5))
        with tt.autograd.graph.saved_tensors_hooks(
                lambda t: _Held(probe_counter, t), lambda held: held.tensor):
            result = module(sample.requires_grad_(rank > 0))
            if stage.is_last:
                tt.nn.functional.mse_loss(result, tt.tensor(y0))
        per_microbatch = probe_counter["peak"]
        del log[:]
        out: dict[str, Any] = {"orders": [], "peaks": [], "per_microbatch": per_microbatch,
                               "losses": [], "grads": []}
        params = [_at(module, name) for name in names]
        for step, (x, y) in enumerate(spec["steps"]):
            counter = {"live": 0, "peak": 0}
            mark("step", step=step)
            losses: list[Any] = []
            with tt.autograd.graph.saved_tensors_hooks(
                    lambda t, c=counter: _Held(c, t), lambda held: held.tensor):
                schedule.step(tt.tensor(x) if stage.is_first else None,
                              target=tt.tensor(y) if stage.is_last else None,
                              losses=losses if stage.is_last else None)
            out["orders"].append("".join(log))
            del log[:]
            out["peaks"].append(counter["peak"])
            out["losses"].append(np.array([float(v.item()) for v in losses]))
            out["grads"].append({name: array(_at(module, name)._grad)
                                 if _at(module, name)._grad is not None else None
                                 for name in names})
            sgd(params, spec["lr"])
        return out

    results, trace = run_world(tt, world, rank_main)
    for result, events in zip(results, trace, strict=True):
        result["trace"] = events
    return {"ranks": results}
