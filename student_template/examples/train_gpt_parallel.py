"""Train a small GPT on a grid of ranks (pipeline x data x tensor parallel), with tinytrain
only, and print its loss curve beside the same model trained in one process.

    python examples/train_gpt_parallel.py                      # 2 x 2 grid, threads
    python examples/train_gpt_parallel.py --pp 2 --dp 2 --tp 2 --microbatches 2
    python examples/train_gpt_parallel.py --tp 2 --sequence-parallel
    mpiexec -n 4 python examples/train_gpt_parallel.py --backend mpi --dp 2 --tp 2

Run it from the folder that holds ``tinytrain/`` and ``examples/`` (the top of a student
repository; ``reference/`` in the course kit): it imports that folder's tinytrain.

The ranks are threads of this process (``--backend threads``, the default) or MPI processes
(``--backend mpi`` under ``mpiexec -n <pp * dp * tp>``; needs the ``mpi`` extra). Each rank
builds the same GPT (float64, seeded), keeps its part (``ParallelTrainer``: its pipeline
stage, its heads, MLP features and vocabulary rows), trains on its data-parallel share of
each batch, and every rank reports the loss of the whole batch. Rank 0 then trains the
same GPT on the same batches in one process (``GPT.configure_optimizers``, AdamW) and
prints both curves: they agree to about 1e-15 (only the order of floating-point sums
differs), on either backend, on any grid.

The task: continue a counting sequence (the next token is the last one plus 1, modulo 16)
in which 20% of the tokens are noise; the loss falls from about ln 16 = 2.77 towards the
noise's floor.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402 - after the thread settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the folder above, for tinytrain

import tinytrain as tt  # noqa: E402
from tinytrain import distributed as dist  # noqa: E402
from tinytrain.models import GPT, GPTConfig  # noqa: E402

VOCAB, STEPS_PER_SEQUENCE = 16, 16


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["threads", "mpi"], default="threads")
    parser.add_argument("--pp", type=int, default=1, help="pipeline stages")
    parser.add_argument("--dp", type=int, default=2, help="data-parallel ranks")
    parser.add_argument("--tp", type=int, default=2, help="tensor-parallel ranks (1, 2 or 4)")
    parser.add_argument("--sequence-parallel", action="store_true")
    parser.add_argument("--microbatches", type=int, default=1)
    parser.add_argument("--steps", type=int, default=None, help="default 30 (--quick: 8)")
    parser.add_argument("--batch", type=int, default=16, help="sequences per step, all ranks")
    parser.add_argument("--quick", action="store_true", help="8 steps of a smaller model")
    args = parser.parse_args(argv)
    if args.steps is None:
        args.steps = 8 if args.quick else 30
    return args


def config(args: argparse.Namespace) -> GPTConfig:
    width = 16 if args.quick else 32
    return GPTConfig(vocab_size=VOCAB, block_size=STEPS_PER_SEQUENCE,
                     n_layer=2 if args.quick else 4, n_head=4, n_embd=width, dropout=0.0,
                     tie_weights=args.pp == 1)


def batches(args: argparse.Namespace) -> list[tuple[np.ndarray, np.ndarray]]:
    """The same batches on every rank (seeded): counting sequences with 20% noise."""
    rng = np.random.default_rng(0)
    out = []
    for _ in range(args.steps):
        start = rng.integers(0, VOCAB, (args.batch, 1))
        tokens = (start + np.arange(STEPS_PER_SEQUENCE + 1)) % VOCAB
        noise = rng.random(tokens.shape) < 0.2
        tokens = np.where(noise, rng.integers(0, VOCAB, tokens.shape), tokens)
        out.append((tokens[:, :-1], tokens[:, 1:]))
    return out


def build(args: argparse.Namespace) -> GPT:
    tt.manual_seed(0)  # every rank draws the same initial weights
    return GPT(config(args)).double()


def train_rank(rank: int, args: argparse.Namespace) -> list[float]:
    """One rank's training: the loss of the whole batch at every step."""
    mesh = dist.init_device_mesh("cpu", (args.pp, args.dp, args.tp), ("pp", "dp", "tp"))
    trainer = dist.models.ParallelTrainer(
        build(args), mesh, n_microbatches=args.microbatches,
        sequence_parallel=args.sequence_parallel, lr=3e-3, weight_decay=0.1, betas=(0.9, 0.95))
    share = mesh.get_local_rank("dp")
    losses = []
    for idx, targets in batches(args):
        losses.append(trainer.step(tt.tensor(np.split(idx, args.dp)[share]),
                                   tt.tensor(np.split(targets, args.dp)[share])))
    return losses


def train_single(args: argparse.Namespace) -> list[float]:
    model = build(args)
    opt = model.configure_optimizers(weight_decay=0.1, learning_rate=3e-3, betas=(0.9, 0.95))
    losses = []
    for idx, targets in batches(args):
        opt.zero_grad()
        _, loss = model(tt.tensor(idx), tt.tensor(targets))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def report(args: argparse.Namespace, parallel: list[float], seconds: float, sent: float,
           calls: int) -> None:
    cfg = config(args)
    n_params = sum(p.numel() for p in build(args).parameters())
    world = args.pp * args.dp * args.tp
    where = "threads of this process" if args.backend == "threads" else "MPI processes"
    sp = ", sequence parallel" if args.sequence_parallel else ""
    print(f"GPT with {n_params} parameters ({cfg.n_layer} layers, {cfg.n_head} heads, width "
          f"{cfg.n_embd}, float64) on a {args.pp} x {args.dp} x {args.tp} grid (pp x dp x tp"
          f"{sp}) of {world} ranks as {where}; {args.microbatches} micro-batch(es) of "
          f"{args.batch // args.dp // args.microbatches} sequences per rank and step")
    start = time.perf_counter()
    single = train_single(args)
    single_seconds = time.perf_counter() - start
    print("step | parallel loss      | single-process loss | difference")
    for step, (a, b) in enumerate(zip(parallel, single, strict=True)):
        print(f"{step + 1:4d} | {a:.15f}  | {b:.15f}   | {abs(a - b):.1e}")
    worst = max(abs(a - b) for a, b in zip(parallel, single, strict=True))
    print(f"done: {len(parallel)} steps in {seconds:.1f} s ({single_seconds:.1f} s in one "
          f"process); loss {parallel[0]:.3f} -> {parallel[-1]:.3f}; largest difference "
          f"{worst:.1e}; rank 0 made {calls} communication calls on {sent / 2**20:.2f} MiB "
          "of tensors")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    world = args.pp * args.dp * args.tp
    start = time.perf_counter()
    if args.backend == "threads":
        ranks = dist.ThreadWorld(world, timeout=120.0)
        results = ranks.run(train_rank, args)
        trace = ranks.trace[0]
        losses = results[0]
    else:
        dist.init_process_group("mpi")
        if dist.get_world_size() != world:
            raise SystemExit(f"--pp x --dp x --tp = {world}, but mpiexec started "
                             f"{dist.get_world_size()} processes")
        losses = train_rank(dist.get_rank(), args)
        trace = dist.get_trace()
        rank = dist.get_rank()
        dist.destroy_process_group()
        if rank != 0:
            return
    seconds = time.perf_counter() - start
    calls = [e for e in trace if e["kind"] != "mark"]
    report(args, losses, seconds, sum(e["bytes"] for e in calls), len(calls))


if __name__ == "__main__":
    main()
