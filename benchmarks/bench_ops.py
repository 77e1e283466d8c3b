"""What the reference tinytrain costs against PyTorch on the same work, as ratios.

    python benchmarks/bench_ops.py            # from the repository root
    python benchmarks/bench_ops.py --quick    # fewer repeats

Two measurements, both single-threaded on each side (the thread-count variables below
are set before NumPy or torch is imported, and torch.set_num_threads(1)):

* per-op overhead on tiny tensors: the forward of one op on inputs that require grad (so
  the graph is recorded), and forward + backward with an explicit output gradient;
* a 3-layer MLP (batch 64, 784-256-256-10, float32, ReLU, cross_entropy): one forward and
  backward from identical weights and data.

Each figure is the best of several repeats of CPU time (the least disturbed by other load). Targets:
tinytrain within 3x of torch per op, within 1.5x on the MLP. Not a test: timings depend on
the machine.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402 - the thread counts must be set before NumPy loads
import itertools  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402, N812

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reference"))
import tinytrain as tt  # noqa: E402

torch.set_num_threads(1)


def best_time(fn: Callable[[], Any], number: int, repeat: int) -> float:
    """CPU seconds per call: the best of ``repeat`` runs of ``number`` calls. CPU time of
    this process (not wall time) so that other load on a shared machine matters less."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(number):
            fn()
        best = min(best, (time.process_time() - start) / number)
    return best


# ----- per-op overhead ---------------------------------------------------------------
def tiny_ops() -> list[tuple[str, Callable, Callable, list[tuple[int, ...]]]]:
    """(name, tinytrain fn, torch fn, input shapes): a representative set."""
    ttf, tf = tt.nn.functional, F
    return [
        ("add", lambda a, b: a + b, lambda a, b: a + b, [(4, 4), (4,)]),
        ("mul", lambda a, b: a * b, lambda a, b: a * b, [(4, 4), (4, 4)]),
        ("div", lambda a, b: a / b, lambda a, b: a / b, [(4, 4), (4, 4)]),
        ("exp", tt.exp, torch.exp, [(4, 4)]),
        ("sum", lambda a: a.sum(), lambda a: a.sum(), [(4, 4)]),
        ("mean(dim)", lambda a: a.mean(1), lambda a: a.mean(1), [(4, 4)]),
        ("amax(dim)", lambda a: a.amax(1), lambda a: a.amax(1), [(4, 4)]),
        ("matmul", lambda a, b: a @ b, lambda a, b: a @ b, [(4, 4), (4, 4)]),
        ("linear", ttf.linear, tf.linear, [(4, 4), (3, 4), (3,)]),
        ("reshape", lambda a: a.reshape(2, 8), lambda a: a.reshape(2, 8), [(4, 4)]),
        ("transpose", lambda a: a.transpose(0, 1), lambda a: a.transpose(0, 1), [(4, 4)]),
        ("getitem", lambda a: a[1:3, 0], lambda a: a[1:3, 0], [(4, 4)]),
        ("relu", ttf.relu, tf.relu, [(4, 4)]),
        ("softmax", lambda a: ttf.softmax(a, -1), lambda a: tf.softmax(a, -1), [(4, 4)]),
        ("log_softmax", lambda a: ttf.log_softmax(a, -1), lambda a: tf.log_softmax(a, -1),
         [(4, 4)]),
    ]


def bench_tiny(number: int, repeat: int) -> list[tuple[str, float, float, float, float]]:
    rng = np.random.default_rng(0)
    rows = []
    for name, tt_fn, torch_fn, shapes in tiny_ops():
        arrays = [rng.uniform(0.5, 1.5, s).astype(np.float32) for s in shapes]
        tt_in = [tt.tensor(a, requires_grad=True) for a in arrays]
        torch_in = [torch.tensor(a, requires_grad=True) for a in arrays]
        out_shape = tuple(torch_fn(*torch_in).shape)
        grad = rng.uniform(-1, 1, out_shape).astype(np.float32)
        tt_grad, torch_grad = tt.tensor(grad), torch.tensor(grad)

        def tt_both(tt_in: list = tt_in, tt_fn: Callable = tt_fn, g: Any = tt_grad) -> None:
            tt_fn(*tt_in).backward(g)

        def torch_both(torch_in: list = torch_in, torch_fn: Callable = torch_fn,
                       g: Any = torch_grad) -> None:
            torch_fn(*torch_in).backward(g)

        fwd = (best_time(lambda f=tt_fn, x=tt_in: f(*x), number, repeat),
               best_time(lambda f=torch_fn, x=torch_in: f(*x), number, repeat))
        both = (best_time(tt_both, number, repeat), best_time(torch_both, number, repeat))
        rows.append((name, *fwd, *both))
    return rows


# ----- MLP ------------------------------------------------------------------------------
def bench_mlp(number: int, repeat: int) -> tuple[float, float, float]:
    """Seconds per forward+backward step in tinytrain and torch, and the loss gap."""
    rng = np.random.default_rng(0)
    sizes = [784, 256, 256, 10]
    weights = [((rng.standard_normal((o, i)) / np.sqrt(i)).astype(np.float32),
                np.zeros(o, np.float32)) for i, o in itertools.pairwise(sizes)]
    x = rng.standard_normal((64, 784)).astype(np.float32)
    y = rng.integers(0, 10, 64)

    tt_params = [(tt.tensor(w, requires_grad=True), tt.tensor(b, requires_grad=True))
                 for w, b in weights]
    torch_params = [(torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True))
                    for w, b in weights]
    tt_x, tt_y = tt.tensor(x), tt.tensor(y)
    torch_x, torch_y = torch.tensor(x), torch.tensor(y)

    def tt_step() -> Any:
        h = tt_x
        for i, (w, b) in enumerate(tt_params):
            h = tt.nn.functional.linear(h, w, b)
            if i < len(tt_params) - 1:
                h = tt.nn.functional.relu(h)
        loss = tt.nn.functional.cross_entropy(h, tt_y)
        for w, b in tt_params:
            w.grad = b.grad = None
        loss.backward()
        return loss

    def torch_step() -> Any:
        h = torch_x
        for i, (w, b) in enumerate(torch_params):
            h = F.linear(h, w, b)
            if i < len(torch_params) - 1:
                h = F.relu(h)
        loss = F.cross_entropy(h, torch_y)
        for w, b in torch_params:
            w.grad = b.grad = None
        loss.backward()
        return loss

    gap = abs(float(tt_step().item()) - float(torch_step().item()))
    return best_time(tt_step, number, repeat), best_time(torch_step, number, repeat), gap


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args()
    number, repeat = (200, 3) if args.quick else (1000, 7)

    print(f"numpy {np.__version__}, torch {torch.__version__}, 1 thread each\n")
    print(f"{'op (tiny tensors)':<14} {'fwd tt':>9} {'fwd torch':>10} {'ratio':>6}   "
          f"{'fwd+bwd tt':>11} {'torch':>8} {'ratio':>6}")
    fwd_ratios, both_ratios = [], []
    for name, f_tt, f_torch, b_tt, b_torch in bench_tiny(number, repeat):
        fwd_ratios.append(f_tt / f_torch)
        both_ratios.append(b_tt / b_torch)
        print(f"{name:<14} {f_tt * 1e6:7.1f}us {f_torch * 1e6:8.1f}us {f_tt / f_torch:5.2f}x   "
              f"{b_tt * 1e6:9.1f}us {b_torch * 1e6:6.1f}us {b_tt / b_torch:5.2f}x")
    geo = lambda r: float(np.exp(np.mean(np.log(r))))  # noqa: E731
    print(f"{'geomean':<14} {'':>9} {'':>10} {geo(fwd_ratios):5.2f}x   {'':>11} {'':>8} "
          f"{geo(both_ratios):5.2f}x   (worst {max(fwd_ratios):.2f}x / {max(both_ratios):.2f}x)")

    step_tt, step_torch, gap = bench_mlp(max(number // 50, 5), repeat)
    print(f"\nMLP 64x784-256-256-10 float32, forward+backward: tinytrain "
          f"{step_tt * 1e3:.2f} ms, torch {step_torch * 1e3:.2f} ms, ratio "
          f"{step_tt / step_torch:.2f}x (loss difference {gap:.1e})")


if __name__ == "__main__":
    main()
