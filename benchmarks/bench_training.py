"""One GPT training step in the reference tinytrain against PyTorch, as a ratio.

    python benchmarks/bench_training.py            # from the repository root
    python benchmarks/bench_training.py --quick    # fewer steps

A training step is what reference/examples/train_gpt.py does per batch: zero_grad, forward
(logits and cross entropy), backward, and an AdamW step over nanoGPT's two parameter
groups. Both sides run the same model (by default the training script's: 2 layers, 4 heads,
width 64, 11 positions, vocabulary 10, float32), from identical initial weights (tinytrain's
GPT initialisation, copied into PyTorch's twin of the model, ``graders.oracle.gpt``, which
spells attention out with plain ops as tinytrain does), on the same batch of 64 sequences.

Single-threaded on each side (the thread-count variables below are set before NumPy or
torch is imported, and torch.set_num_threads(1)). The two sides alternate step by step so
that other load on a shared machine hits both alike; each figure is the median CPU time of
one step (this process's CPU time, not wall time). The first step's losses are printed
too: they must agree to float32 rounding, or the comparison is not like for like (later
ones drift apart slowly, as float32 rounding differences grow through the updates).
Target: tinytrain within 1.5x of torch. Not a test: timings depend on the machine.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402 - the thread counts must be set before NumPy loads
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "reference"))
sys.path.insert(0, str(ROOT))
import tinytrain as tt  # noqa: E402

from graders.oracle import gpt as torch_gpt  # noqa: E402

torch.set_num_threads(1)

OPTIONS = {"weight_decay": 0.1, "learning_rate": 3e-3, "betas": (0.9, 0.98)}


def cpu_time(fn: Callable[[], float]) -> tuple[float, float]:
    """(CPU seconds of one call, what it returned)."""
    start = time.process_time()
    value = fn()
    return time.process_time() - start, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--n-embd", type=int, default=64)
    parser.add_argument("--n-layer", type=int, default=2)
    parser.add_argument("--n-head", type=int, default=4)
    parser.add_argument("--block-size", type=int, default=11)
    parser.add_argument("--vocab", type=int, default=10)
    args = parser.parse_args()
    warmup, steps = (3, 15) if args.quick else (5, 60)

    cfg = dict(vocab_size=args.vocab, block_size=args.block_size, n_layer=args.n_layer,
               n_head=args.n_head, n_embd=args.n_embd, dropout=0.0, bias=True,
               tie_weights=True, gelu_approximate="tanh")
    tt.manual_seed(0)
    tt_model = tt.models.GPT(tt.models.GPTConfig(**cfg))
    torch_model = torch_gpt.GPT(cfg)
    weights = {k: torch.from_numpy(v.data.copy()) for k, v in tt_model.state_dict().items()}
    torch_model.load_state_dict(weights, strict=False)  # the tied head is lm_head.weight too
    tt_opt = tt_model.configure_optimizers(**OPTIONS)
    torch_opt = torch.optim.AdamW(  # the same two groups as GPT.configure_optimizers
        [{"params": [p for p in torch_model.parameters() if p.dim() >= 2],
          "weight_decay": OPTIONS["weight_decay"]},
         {"params": [p for p in torch_model.parameters() if p.dim() < 2],
          "weight_decay": 0.0}],
        lr=OPTIONS["learning_rate"], betas=OPTIONS["betas"])

    rng = np.random.default_rng(0)
    idx = rng.integers(0, args.vocab, (args.batch, args.block_size))
    targets = rng.integers(0, args.vocab, (args.batch, args.block_size))
    tt_idx, tt_targets = tt.tensor(idx), tt.tensor(targets)
    torch_idx, torch_targets = torch.from_numpy(idx), torch.from_numpy(targets)

    def tt_step() -> float:
        _, loss = tt_model(tt_idx, tt_targets)
        tt_opt.zero_grad()
        loss.backward()
        tt_opt.step()
        return loss.item()

    def torch_step() -> float:
        _, loss = torch_model(torch_idx, torch_targets)
        torch_opt.zero_grad()
        loss.backward()
        torch_opt.step()
        return loss.item()

    times: dict[str, list[float]] = {"tinytrain": [], "torch": []}
    losses: dict[str, list[float]] = {"tinytrain": [], "torch": []}
    for step in range(warmup + steps):
        for name, fn in (("tinytrain", tt_step), ("torch", torch_step)):
            seconds, loss = cpu_time(fn)
            losses[name].append(loss)
            if step >= warmup:
                times[name].append(seconds)

    n_params = sum(p.numel() for p in tt_model.parameters())
    median = {name: statistics.median(t) for name, t in times.items()}
    first_gap = abs(losses["tinytrain"][0] - losses["torch"][0])
    print(f"numpy {np.__version__}, torch {torch.__version__}, 1 thread each")
    print(f"GPT {args.n_layer} layers, {args.n_head} heads, width {args.n_embd}, "
          f"{args.block_size} positions, vocabulary {args.vocab} ({n_params} parameters, "
          f"float32); batch {args.batch}; AdamW")
    print(f"training step (forward + backward + AdamW), median of {steps} steps after "
          f"{warmup} warm-up steps:")
    for name in times:
        spread = np.percentile(times[name], [25, 75]) * 1e3
        print(f"  {name:<9} {median[name] * 1e3:7.2f} ms  (quartiles {spread[0]:.2f}-"
              f"{spread[1]:.2f} ms)")
    print(f"  ratio     {median['tinytrain'] / median['torch']:7.2f}x  (tinytrain / torch)")
    print(f"loss at step 1: tinytrain {losses['tinytrain'][0]:.7f}, torch {losses['torch'][0]:.7f} "
          f"(difference {first_gap:.1e}); at step {warmup + steps}: "
          f"{losses['tinytrain'][-1]:.7f} and {losses['torch'][-1]:.7f}")


if __name__ == "__main__":
    main()
