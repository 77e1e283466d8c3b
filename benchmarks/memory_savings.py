"""How much saved-activation memory offloading and checkpointing save (reference tinytrain).

    python benchmarks/memory_savings.py [--blocks 6] [--width 256] [--batch 128]

The model is a stack of residual MLP blocks, h -> h + relu_(h @ W1 + b1) @ W2 + b2, with a
hidden layer 4x wider than h (a transformer's feed-forward block), in float32. One
forward, then one backward, for each way of keeping what backward needs:

- plain: saved tensors stay in compute memory;
- save_on_cpu: ``with tt.autograd.graph.save_on_cpu():`` around the forward;
- save_on_disk: ``with tt.autograd.graph.save_on_disk():`` around the forward;
- checkpoint: each block under ``tt.utils.checkpoint.checkpoint``.

Measured right after the forward, by walking the graph from the loss:

- saved activations: bytes of the distinct arrays the graph keeps through its saved
  tensors, parameters and the input excluded. On a GPU this is the activation memory
  between forward and backward: what offloading moves out and checkpointing never keeps.
- offloaded: bytes the saved tensors occupy in host memory (save_on_cpu) or in files
  (save_on_disk);
- held in RAM: everything allocated by the forward and still held (tracemalloc; on this
  CPU backend host and "device" memory are the same RAM).
Time: forward + backward, best of 3 (without tracemalloc).
The gradients of every run must equal the plain run's exactly.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # steadier timings on a shared machine

import numpy as np  # noqa: E402 - after the thread settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reference"))

import tinytrain as tt  # noqa: E402
from tinytrain.autograd.inplace import CopySlices  # noqa: E402


def block(h: Any, w1: Any, b1: Any, w2: Any, b2: Any) -> Any:
    """h + relu(h @ W1 + b1) @ W2 + b2; the relu is in place (it saves its result)."""
    hidden = (h @ w1 + b1).relu_()
    return h + (hidden @ w2 + b2)


def make_model(blocks: int, width: int, batch: int, seed: int = 0) -> tuple[Any, list[Any]]:
    rng = np.random.default_rng(seed)
    x = tt.tensor(rng.standard_normal((batch, width)).astype(np.float32), requires_grad=True)
    params = []
    for _ in range(blocks):
        for shape in ((width, 4 * width), (4 * width,), (4 * width, width), (width,)):
            scale = 1 / np.sqrt(shape[0]) if len(shape) == 2 else 0.01
            values = (rng.standard_normal(shape) * scale).astype(np.float32)
            params.append(tt.tensor(values, requires_grad=True))
    return x, params


def saved_bytes(loss: Any, exclude: set[int]) -> tuple[int, int]:
    """(bytes of arrays held by saved tensors, bytes of packed values) over the graph."""
    held: dict[int, int] = {}
    packed = 0
    seen: set[int] = set()
    stack = [loss.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        nodes = [node, node.fn] if isinstance(node, CopySlices) else [node]
        for n in nodes:
            for saved in n._saved or ():
                if saved is None:
                    continue
                if saved._tensor is not None:
                    array = saved._tensor.data
                    root = array.base if array.base is not None else array
                    if id(root) not in exclude:
                        held[id(root)] = root.nbytes
                elif isinstance(saved._packed, tuple):  # save_on_cpu: (device, dtype, shape, bytes)
                    packed += len(saved._packed[-1])
                elif saved._packed is not None:  # save_on_disk: a file
                    packed += os.path.getsize(saved._packed.path)
        stack.extend(next_node for next_node, _ in node.next_functions)
    return sum(held.values()), packed


def run(mode: str, blocks: int, width: int, batch: int, measure: bool = True) -> dict[str, Any]:
    x, params = make_model(blocks, width, batch)
    exclude = {id(p.data) for p in params} | {id(x.data)}
    calls = [0]

    def counted_block(*args: Any) -> Any:
        calls[0] += 1
        return block(*args)

    context: Any = {"save_on_cpu": tt.autograd.graph.save_on_cpu,
                    "save_on_disk": tt.autograd.graph.save_on_disk}.get(mode)
    gc.collect()
    if measure:
        tracemalloc.start()
    start_time = time.perf_counter()
    before = tracemalloc.get_traced_memory()[0]
    with context() if context else _nothing():
        h = x
        for i in range(blocks):
            args = params[4 * i: 4 * i + 4]
            if mode == "checkpoint":
                h = tt.utils.checkpoint.checkpoint(counted_block, h, *args)
            else:
                h = counted_block(h, *args)
        loss = h.sum()
    del h
    if not measure:  # timing only
        loss.backward()
        return {"seconds": time.perf_counter() - start_time}
    gc.collect()
    held_after_forward = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    activations, offloaded = saved_bytes(loss, exclude)
    loss.backward()
    seconds = min(run(mode, blocks, width, batch, measure=False)["seconds"] for _ in range(3))
    return {"activations": activations, "offloaded": offloaded, "held": held_after_forward,
            "calls": calls[0], "seconds": seconds,
            "grads": [x.grad.data] + [p.grad.data for p in params]}


class _nothing:  # noqa: N801 - a null context
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def mib(n: int) -> str:
    return f"{n / 2**20:.2f} MiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--batch", type=int, default=128)
    args = parser.parse_args()
    print(f"residual MLP, {args.blocks} blocks, width {args.width} (hidden {4 * args.width}), "
          f"batch {args.batch}, float32\n")
    columns = ["run", "saved activations", "vs plain", "offloaded", "held in RAM",
               "block forwards", "time", "grads == plain"]
    rows = []
    plain = None
    for mode in ("plain", "save_on_cpu", "save_on_disk", "checkpoint"):
        result = run(mode, args.blocks, args.width, args.batch)
        plain = plain or result
        pairs = zip(result["grads"], plain["grads"], strict=True)
        same = all(np.array_equal(a, b) for a, b in pairs)
        rows.append([mode, mib(result["activations"]),
                     f"{result['activations'] / plain['activations']:.0%}",
                     mib(result["offloaded"]), mib(result["held"]), str(result["calls"]),
                     f"{result['seconds']:.2f} s", "yes" if same else "NO"])
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]
    print("| " + " | ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print("| " + " | ".join(v.rjust(w) if i else v.ljust(w)
                                for i, (v, w) in enumerate(zip(row, widths, strict=True))) + " |")


if __name__ == "__main__":
    main()
