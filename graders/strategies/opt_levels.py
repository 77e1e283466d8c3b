"""Inputs for tasks 4.4 and 4.5: Net weights and batches, loss-scaler configurations and
overflow sequences, module trees with layer-wise rules."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

SIZES = (3, 4, 2)  # Net: in, hidden, out
# powers of two: the same number in float16, float32 and torch's double scalars
LEARNING_RATES = [2.0**-5, 2.0**-7, 2.0**-9, 2.0**-11]


def training_setup(seed: int, weight_scale: float, data_scale: float, lr: float,
                   bias_scale: float = 0.5, steps: int = 5) -> dict[str, Any]:
    """Net weights, ``steps`` batches [x, y] and the learning rate, from a seed."""
    rng = np.random.default_rng(seed)
    n_in, hidden, n_out = SIZES
    weights = {
        "w1": rng.normal(0, weight_scale, (n_in, hidden)).astype(np.float32),
        "b1": rng.normal(0, bias_scale, (hidden,)).astype(np.float32),
        "w2": rng.normal(0, weight_scale, (hidden, n_out)).astype(np.float32),
        "b2": rng.normal(0, bias_scale, (n_out,)).astype(np.float32),
    }
    batches = [[rng.normal(0, data_scale, (5, n_in)).astype(np.float32),
                rng.normal(0, data_scale, (5, n_out)).astype(np.float32)]
               for _ in range(steps)]
    return {"weights": weights, "batches": batches, "lr": lr}


def training_setups() -> Any:
    """Training setups whose magnitudes vary by orders, so that some scaled float16
    gradients overflow, some unscaled ones are float16 subnormals, and some updates are
    smaller than float16's resolution (where master weights matter); small enough that
    float32 training does not diverge in 5 steps."""
    return st.builds(training_setup, st.integers(0, 2**32 - 1),
                     st.sampled_from([0.1, 0.5, 1.0]), st.sampled_from([1e-3, 0.1, 1.0, 4.0]),
                     st.sampled_from(LEARNING_RATES), st.sampled_from([0.5, 1e-3]))


@st.composite
def scaler_configs(draw: Any) -> dict[str, Any]:
    """Keyword arguments of ``LossScaler`` (static or dynamic, small windows)."""
    if draw(st.integers(0, 4)) == 0:
        return {"loss_scale": draw(st.sampled_from([1.0, 128.0, 0.5]))}
    config: dict[str, Any] = {"loss_scale": "dynamic"}
    if draw(st.booleans()):
        config["init_scale"] = 2.0 ** draw(st.integers(0, 26))
    if draw(st.booleans()):
        config["scale_factor"] = draw(st.sampled_from([2.0, 4.0, 1.5]))
    config["scale_window"] = draw(st.integers(1, 4))
    if draw(st.booleans()):
        config["min_loss_scale"] = 2.0 ** draw(st.integers(-2, 10))
    if draw(st.booleans()):
        config["max_loss_scale"] = 2.0 ** draw(st.integers(4, 24))
    return config


def overflow_sequences() -> Any:
    return st.lists(st.booleans(), min_size=1, max_size=20)


CLASSES = ["Embedding", "CausalSelfAttention", "MLP", "Block", "Head"]
CHILD_NAMES = ["wte", "attn", "mlp", "h", "head"]
LEVELS = ["O0", "O1", "O3"]
WEIGHT_VALUES = (0.1, 3e-8, 1.0 / 3.0)


@st.composite
def _tree(draw: Any, depth: int) -> dict[str, Any]:
    if depth > 0 and draw(st.integers(0, 4)) == 0:
        count = draw(st.integers(1, 3))
        return {"kind": "seq", "children": [[str(i), draw(_tree(depth - 1))]
                                            for i in range(count)]}
    node: dict[str, Any] = {"kind": "block", "name": draw(st.sampled_from(CLASSES)),
                            "params": [], "buffers": []}
    if draw(st.integers(0, 3)):
        # values float16 rounds (0.1), flushes (3e-8) or keeps (1.0): a parameter cast
        # through another module's dtype on its way to its own shows in its values
        node["params"] = [["w", np.array([1.0, draw(st.sampled_from(WEIGHT_VALUES))],
                                         np.float32)]]
    names = draw(st.lists(st.sampled_from(CHILD_NAMES), max_size=3 if depth else 0,
                          unique=True))
    node["children"] = [[n, draw(_tree(depth - 1))] for n in names]
    return node


def names_in(spec: dict[str, Any], path: str = "") -> list[tuple[str, str]]:
    """(qualified name, class name or kind) of every node, parents first."""
    out = [(path, spec.get("name", spec["kind"]))]
    for name, child in spec.get("children", []):
        out.extend(names_in(child, f"{path}.{name}" if path else name))
    return out


@st.composite
def policies(draw: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """A module tree and rules: some by class name, some by qualified name."""
    spec = draw(_tree(3))
    rules = {cls: draw(st.sampled_from(LEVELS))
             for cls in draw(st.lists(st.sampled_from(CLASSES), max_size=3, unique=True))}
    names = [n for n, _ in names_in(spec)]
    for name in draw(st.lists(st.sampled_from(names), max_size=2, unique=True)):
        rules[name] = draw(st.sampled_from(LEVELS))
    return spec, rules
