"""Parallel training strategies on this machine: time per step and communication.

    python benchmarks/bench_distributed.py [--steps 6] [--width 64]

Trains one GPT (float32 and AdamW as usual; 4 layers, 4 heads, vocabulary 64, 32
positions, 16 sequences per step) with each strategy of tt.distributed on ranks as threads
of this process (the threads backend: one rank runs at a time, switching at collectives, so
the time per step is the work of all ranks together plus the switching; MPI processes
would run them side by side). Reported per strategy: the median wall time of a step, and
from the trace the calls and the bytes the busiest rank sends per step (ring algorithms,
from the collective table in graders/oracle/distributed_collectives.py), and the
optimizer state a rank holds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "reference"))
sys.path.insert(0, str(ROOT))

import tinytrain as tt  # noqa: E402
from tinytrain import distributed as dist  # noqa: E402

from graders.oracle import distributed_collectives as table  # noqa: E402

BATCH, STEPS_PER_SEQUENCE, VOCAB = 16, 32, 64


def make_gpt(width: int, tied: bool) -> Any:
    tt.manual_seed(0)
    return tt.models.GPT(tt.models.GPTConfig(vocab_size=VOCAB, block_size=STEPS_PER_SEQUENCE,
                                             n_layer=4, n_head=4, n_embd=width, dropout=0.0,
                                             tie_weights=tied))


def data(steps: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(0)
    out = []
    for _ in range(steps):
        tokens = (rng.integers(0, VOCAB, (BATCH, 1)) + np.arange(STEPS_PER_SEQUENCE + 1)) % VOCAB
        out.append((tokens[:, :-1], tokens[:, 1:]))
    return out


def state_bytes(optimizer: Any) -> int:
    return sum(v.data.nbytes for s in optimizer.state.values() for v in s.values()
               if isinstance(v, tt.Tensor) and v.numel() > 1)


def trainer_step(args: argparse.Namespace, mesh_shape: tuple[int, int, int], **options: Any,
                 ) -> Callable[[int], Any]:
    """A rank function training with ParallelTrainer on a (pp, dp, tp) mesh."""
    pp, dp, _ = mesh_shape

    def rank_main(rank: int) -> dict[str, Any]:
        mesh = dist.init_device_mesh("cpu", mesh_shape, ("pp", "dp", "tp"))
        trainer = dist.models.ParallelTrainer(make_gpt(args.width, tied=pp == 1), mesh,
                                              lr=1e-3, **options)
        share = mesh.get_local_rank("dp")
        for step, (idx, targets) in enumerate(data(args.steps)):
            dist.record_event("step", step=step)
            trainer.step(tt.tensor(np.split(idx, dp)[share]),
                         tt.tensor(np.split(targets, dp)[share]))
        return {"state": state_bytes(trainer.optimizer)}

    return rank_main


def zero_step(args: argparse.Namespace, stage: int) -> Callable[[int], Any]:
    def rank_main(rank: int) -> dict[str, Any]:
        world = dist.get_world_size()
        model = make_gpt(args.width, tied=True)
        params = list(model.parameters())
        groups = [{"params": [p for p in params if p.ndim >= 2], "weight_decay": 0.1},
                  {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}]
        opt = dist.optim.ZeroRedundancyOptimizer(groups, tt.optim.AdamW, stage=stage, lr=1e-3)
        for step, (idx, targets) in enumerate(data(args.steps)):
            dist.record_event("step", step=step)
            opt.zero_grad()
            _, loss = model(tt.tensor(np.split(idx, world)[rank]),
                            tt.tensor(np.split(targets, world)[rank]))
            loss.backward()
            opt.step()
        return {"state": state_bytes(opt.optim)}

    return rank_main


def single(args: argparse.Namespace) -> tuple[float, int]:
    model = make_gpt(args.width, tied=True)
    opt = model.configure_optimizers(weight_decay=0.1, learning_rate=1e-3)
    times = []
    for idx, targets in data(args.steps):
        start = time.perf_counter()
        opt.zero_grad()
        _, loss = model(tt.tensor(idx), tt.tensor(targets))
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:]), state_bytes(opt)


def measure(world: int, fn: Callable[[int], Any]) -> dict[str, Any]:
    ranks = dist.ThreadWorld(world, timeout=300.0)
    start = time.perf_counter()
    results = ranks.run(fn)
    elapsed = time.perf_counter() - start
    per_rank = []
    for events in ranks.trace:
        steps = table.marks(events, "step")
        window = table.between(events, steps[1]["index"], float("inf"))  # after the first step
        calls = table.calls(window)
        per_rank.append((table.bytes_sent(calls) / (len(steps) - 1), len(calls) / (len(steps) - 1)))
    sent, calls = max(per_rank)
    return {"seconds": elapsed, "sent": sent, "calls": calls,
            "state": max(r["state"] for r in results)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--width", type=int, default=64)
    args = parser.parse_args()
    strategies: list[tuple[str, int, Callable[[int], Any]]] = [
        ("DDP (dp 4)", 4, trainer_step(args, (1, 4, 1))),
        ("ZeRO-1 (dp 4)", 4, zero_step(args, 1)),
        ("ZeRO-2 (dp 4)", 4, zero_step(args, 2)),
        ("tensor parallel (tp 4)", 4, trainer_step(args, (1, 1, 4))),
        ("tensor + sequence parallel (tp 4)", 4,
         trainer_step(args, (1, 1, 4), sequence_parallel=True)),
        ("pipeline GPipe (pp 4, 8 micro-batches)", 4,
         trainer_step(args, (4, 1, 1), n_microbatches=8, schedule="gpipe")),
        ("pipeline 1F1B (pp 4, 8 micro-batches)", 4,
         trainer_step(args, (4, 1, 1), n_microbatches=8)),
        ("dp 2 x tp 2", 4, trainer_step(args, (1, 2, 2))),
        ("pp 2 x dp 2 x tp 2 (2 micro-batches)", 8,
         trainer_step(args, (2, 2, 2), n_microbatches=2)),
    ]
    base_time, base_state = single(args)
    print(f"GPT: 4 layers, 4 heads, width {args.width}, vocabulary {VOCAB}, {STEPS_PER_SEQUENCE} "
          f"positions, {BATCH} sequences per step, float32, AdamW; {args.steps} steps each, "
          "ranks as threads (one runs at a time)")
    print(f"{'strategy':42s} {'ranks':>5s} {'s/step':>7s} {'x 1 proc':>8s} "
          f"{'sent/rank/step':>15s} {'calls/step':>10s} {'opt state/rank':>15s}")
    print(f"{'single process':42s} {1:5d} {base_time:7.3f} {1.0:8.2f} {'-':>15s} {'-':>10s} "
          f"{base_state / 2**20:11.2f} MiB")
    for name, world, fn in strategies:
        got = measure(world, fn)
        per_step = got["seconds"] / args.steps
        print(f"{name:42s} {world:5d} {per_step:7.3f} {per_step / base_time:8.2f} "
              f"{got['sent'] / 2**20:11.2f} MiB {got['calls']:10.0f} "
              f"{got['state'] / 2**20:11.2f} MiB")


if __name__ == "__main__":
    main()
