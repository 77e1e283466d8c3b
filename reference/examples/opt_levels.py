"""What each APEX opt level does, from a run: the README's opt-level table.

    python examples/opt_levels.py

Run it from the folder that holds ``tinytrain/`` and ``examples/`` (the top of a student
repository; ``reference/`` in the course kit): it imports that folder's tinytrain.

Trains the same small MLP (16-64-64-1, ReLU, float32 start, same weights and batches) on
a regression task at O0, O1, O2 and O3 with ``tt.amp.initialize`` and the APEX loop, and
prints per level: the parameters' dtype, the dtype matmuls ran in, what the optimizer
steps, the loss scale at the start and end, the steps skipped after an overflow, and the
loss on the training set after training, against O0's.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the folder above, for tinytrain

import itertools

import tinytrain as tt
import tinytrain.nn.functional as F  # noqa: N812

STEPS, BATCH, SIZES = 300, 32, (16, 64, 64, 1)


class MLP(tt.nn.Module):
    def __init__(self, rng: np.random.Generator) -> None:
        super().__init__()
        self.layers = []
        for i, (n_in, n_out) in enumerate(itertools.pairwise(SIZES)):
            w = tt.nn.Parameter(tt.tensor(rng.normal(0, n_in**-0.5, (n_in, n_out)),
                                          dtype=tt.float32))
            b = tt.nn.Parameter(tt.zeros(n_out))
            setattr(self, f"w{i}", w)
            setattr(self, f"b{i}", b)
            self.layers.append((f"w{i}", f"b{i}"))
        self.matmul_dtypes: set[str] = set()

    def forward(self, x: tt.Tensor) -> tt.Tensor:
        for i, (w, b) in enumerate(self.layers):
            x = x @ getattr(self, w)
            self.matmul_dtypes.add(str(x.dtype).removeprefix("tinytrain."))
            x = x + getattr(self, b)
            if i < len(self.layers) - 1:
                x = F.relu(x)
        return x


def run(level: str, data: tuple[np.ndarray, np.ndarray]) -> dict[str, object]:
    model = MLP(np.random.default_rng(0))
    optimizer = tt.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    model, optimizer = tt.amp.initialize(model, optimizer, opt_level=level)
    start_scale = optimizer.loss_scaler.loss_scale()
    x_all, y_all = data
    skipped = 0
    for step in range(STEPS):
        rows = slice(step * BATCH % len(x_all), step * BATCH % len(x_all) + BATCH)
        out = model(tt.tensor(x_all[rows]))
        loss = F.mse_loss(out.float(), tt.tensor(y_all[rows]))
        with tt.amp.scale_loss(loss, optimizer) as scaled:
            scaled.backward()
        skipped += optimizer._skip_next_step
        optimizer.step()
        optimizer.zero_grad()
    held = optimizer.param_groups[0]["params"][0]
    return {
        "params": str(model.w0.dtype).removeprefix("tinytrain."),
        "matmuls": "/".join(sorted(model.matmul_dtypes)),
        "steps": "float32 masters" if held is not model.w0 else "the parameters",
        "scale": f"{start_scale:g} -> {optimizer.loss_scaler.loss_scale():g}",
        "skipped": skipped,
        "loss": float(F.mse_loss(model(tt.tensor(x_all)).float(), tt.tensor(y_all)).item()),
    }


def main() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(0, 1, (STEPS * BATCH // 4, SIZES[0])).astype(np.float32)
    y = (np.sin(x[:, :1] * 2) + 0.5 * x[:, 1:2] * x[:, 2:3]).astype(np.float32)
    results = {level: run(level, (x, y)) for level in ("O0", "O1", "O2", "O3")}
    base = results["O0"]["loss"]
    print(f"{STEPS} steps of SGD (momentum 0.9), batch {BATCH}, MLP {SIZES}; loss: mse on "
          "the whole training set after training")
    print("| level | parameters | matmuls in | optimizer steps | loss scale (start -> end) "
          "| skipped steps | loss | vs O0 |")
    print("|---|---|---|---|---|---|---|---|")
    for level, r in results.items():
        print(f"| {level} | {r['params']} | {r['matmuls']} | {r['steps']} | {r['scale']} | "
              f"{r['skipped']} | {r['loss']:.4f} | {r['loss'] / base - 1:+.1%} |")


if __name__ == "__main__":
    main()
