"""The single-process PyTorch computations the assignment-7 graders compare every rank
with (no torch.distributed: a data-parallel step is the full batch's step, a tensor- or
pipeline-parallel layer is the unsharded layer), and the data they send.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812 - the usual name
from torch import nn


# ----- the probes' MLP ------------------------------------------------------------------
class MLP(nn.Module):
    """Linear layers fc0, fc1, ... with tanh between them (the probes' model)."""

    def __init__(self, widths: list[int]) -> None:
        super().__init__()
        self.depth = len(widths) - 1
        for i in range(self.depth):
            setattr(self, f"fc{i}", nn.Linear(widths[i], widths[i + 1], dtype=torch.float64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i in range(self.depth):
            x = getattr(self, f"fc{i}")(x)
            if i < self.depth - 1:
                x = torch.tanh(x)
        return x


def mlp_weights(widths: list[int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Random float64 weights by name (uniform, scaled so tanh does not saturate)."""
    out = {}
    for i in range(len(widths) - 1):
        bound = 1.0 / math.sqrt(widths[i])
        out[f"fc{i}.weight"] = rng.uniform(-bound, bound, (widths[i + 1], widths[i])) * 1.5
        out[f"fc{i}.bias"] = rng.uniform(-0.5, 0.5, (widths[i + 1],))
    return out


def load(module: nn.Module, weights: dict[str, np.ndarray]) -> None:
    with torch.no_grad():
        for name, p in module.named_parameters():
            p.copy_(torch.from_numpy(np.array(weights[name])))


def ddp_train(widths: list[int], weights: dict[str, np.ndarray],
              batches: list[list[list[tuple[np.ndarray, np.ndarray]]]], lr: float,
              ) -> dict[str, Any]:
    """What every rank of DDP must compute, in one process: per step, the gradient of
    (1 / world) * sum over ranks and micro-batches of each micro-batch's mse loss (the
    average over ranks of gradients accumulated over micro-batches), then SGD.
    ``losses[r]`` are rank r's micro-batch losses in order."""
    model = MLP(widths)
    load(model, weights)
    world = len(batches[0][0])
    losses: list[list[float]] = [[] for _ in range(world)]
    step_grads, step_params = [], []
    for micro_batches in batches:
        model.zero_grad(set_to_none=True)
        total = 0.0
        for per_rank in micro_batches:
            for rank, (x, y) in enumerate(per_rank):
                loss = F.mse_loss(model(torch.from_numpy(x)), torch.from_numpy(y))
                losses[rank].append(loss.item())
                total = total + loss
        (total / world).backward()
        step_grads.append({n: p.grad.numpy().copy() for n, p in model.named_parameters()})
        with torch.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
        step_params.append({n: p.detach().numpy().copy() for n, p in model.named_parameters()})
    return {"losses": [np.array(v) for v in losses], "grads": step_grads, "params": step_params}


def bucket_assignment(sizes: list[int], cap: int) -> list[list[int]]:
    """PyTorch's rule (``compute_bucket_assignment_by_size``, one size limit) applied to
    the parameters in reverse registration order; indices in registration order."""
    import torch.distributed as dist  # the helper, no process group

    n = len(sizes)
    tensors = [torch.empty(size, dtype=torch.uint8) for size in reversed(sizes)]
    buckets, _ = dist._compute_bucket_assignment_by_size(tensors, [cap], [False] * n)
    return [[n - 1 - i for i in bucket] for bucket in buckets]


def zero_train(widths: list[int], weights: dict[str, np.ndarray],
               batches: list[list[tuple[np.ndarray, np.ndarray]]], options: dict[str, Any],
               ) -> dict[str, Any]:
    """Data-parallel AdamW in one process (weights decay, biases do not): per step the
    gradient of the ranks' average loss; the parameters and AdamW's state (flattened)
    after each step, and each rank's local losses; in the weights' dtype."""
    model = MLP(widths).to(torch.from_numpy(next(iter(weights.values()))).dtype)
    load(model, weights)
    named = dict(model.named_parameters())
    groups = [{"params": [p for n, p in named.items() if n.endswith("weight")],
               "weight_decay": options["weight_decay"]},
              {"params": [p for n, p in named.items() if n.endswith("bias")],
               "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=options["lr"], betas=tuple(options["betas"]),
                            foreach=False)
    world = len(batches[0])
    losses: list[list[float]] = [[] for _ in range(world)]
    params, states, grads = [], [], []
    for per_rank in batches:
        opt.zero_grad()
        total = 0.0
        for rank, (x, y) in enumerate(per_rank):
            loss = F.mse_loss(model(torch.from_numpy(x)), torch.from_numpy(y))
            losses[rank].append(loss.item())
            total = total + loss
        (total / world).backward()
        grads.append({n: p.grad.numpy().copy() for n, p in named.items()})
        opt.step()
        params.append({n: p.detach().numpy().copy() for n, p in named.items()})
        states.append({n: {"exp_avg": opt.state[p]["exp_avg"].numpy().ravel().copy(),
                           "exp_avg_sq": opt.state[p]["exp_avg_sq"].numpy().ravel().copy(),
                           "step": float(opt.state[p]["step"])}
                       for n, p in named.items()})
    return {"losses": [np.array(v) for v in losses], "params": params, "state": states,
            "grads": grads}


def shard(flat: np.ndarray, world: int, rank: int) -> np.ndarray:
    """Rank ``rank``'s chunk of a flat array padded with zeros to world equal chunks
    (chunk = ceil(n / world)), as ZeroRedundancyOptimizer shards a parameter."""
    chunk = max(1, math.ceil(flat.size / world))
    padded = np.zeros(chunk * world, dtype=flat.dtype)
    padded[:flat.size] = flat
    return padded[rank * chunk:(rank + 1) * chunk]


# ----- tensor parallelism: full layers and each rank's part -------------------------------
def split(x: np.ndarray, world: int, rank: int, axis: int) -> np.ndarray:
    """Rank ``rank``'s part of ``x`` cut in ``world`` equal parts along ``axis``."""
    return np.split(x, world, axis=axis)[rank]


def qkv_rows(n_embd: int, world: int, rank: int) -> np.ndarray:
    """Rank ``rank``'s rows of ``c_attn`` (its heads' queries, keys and values)."""
    part = n_embd // world
    own = np.arange(rank * part, (rank + 1) * part)
    return np.concatenate([own, n_embd + own, 2 * n_embd + own])


def local_part(kind: str, name: str, value: np.ndarray, world: int, rank: int,
               n_embd: int = 0) -> np.ndarray:
    """What rank ``rank``'s parameter ``name`` of the parallel ``kind`` layer holds of the
    full parameter (or of its gradient) ``value`` (Megatron's layouts)."""
    if kind == "column" or (kind == "mlp" and name.startswith("c_fc")):
        return split(value, world, rank, 0)
    if kind == "row" or (kind in ("mlp", "attention") and name.startswith("c_proj")):
        return split(value, world, rank, 1) if name.endswith("weight") else value
    if kind == "embedding":
        return split(value, world, rank, 0)
    if kind == "attention" and name.startswith("c_attn"):
        return value[qkv_rows(n_embd, world, rank)]
    raise ValueError(f"no layout for {kind} {name}")


def full_layer(kind: str, cfg: dict[str, Any], weights: dict[str, np.ndarray]) -> nn.Module:
    from . import gpt

    if kind in ("column", "row"):
        module: nn.Module = nn.Linear(cfg["in"], cfg["out"], bias=cfg["bias"], dtype=torch.float64)
    elif kind == "embedding":
        module = nn.Embedding(cfg["num"], cfg["dim"], dtype=torch.float64)
    elif kind == "mlp":
        module = gpt.MLP(cfg).double()
    else:
        module = gpt.CausalSelfAttention(cfg).double()
    load(module, weights)
    return module


def layer_run(kind: str, cfg: dict[str, Any], weights: dict[str, np.ndarray], x: np.ndarray,
              grad_output: np.ndarray) -> dict[str, Any]:
    """The full layer in torch: output, input gradient, parameter gradients by name."""
    module = full_layer(kind, cfg, weights)
    inputs = torch.from_numpy(x.copy())
    if kind != "embedding":
        inputs.requires_grad_(True)
    out = module(inputs)
    out.backward(torch.from_numpy(grad_output.copy()))
    return {"output": out.detach().numpy().copy(),
            "input_grad": None if kind == "embedding" else inputs.grad.numpy().copy(),
            "grads": {n: p.grad.numpy().copy() for n, p in module.named_parameters()}}


def sequence_parallel_layer_run(kind: str, cfg: dict[str, Any], weights: dict[str, np.ndarray],
                                x: np.ndarray, grad_output: np.ndarray, world: int,
                                ) -> dict[str, Any]:
    """A GPT block (``kind`` mlp or attention) with Megatron's sequence parallelism on
    ``world`` ranks, in one torch process: rank r holds chunk r of the sequence (dim 1) of
    the input and of the output, its column-parallel layer all-gathers the sequence in
    forward (reduce-scatters the gradient in backward) and its row-parallel ``c_proj``
    reduce-scatters its output along the sequence (all-gathers the gradient in backward),
    then adds its bias on the rank's positions. So the output and the input's gradient
    are the full block's, cut along the sequence; every parameter's gradient is the full
    block's but ``c_proj.bias``'s, which on rank r is the gradient of rank r's part of the
    output only (Megatron sums it over the ranks afterwards, with the LayerNorms': task
    7.4's ``allreduce_sequence_parallel_grads``). ``rank_grads[r]``: those per-rank ones."""
    module = full_layer(kind, cfg, weights)
    inputs = torch.from_numpy(x.copy()).requires_grad_(True)
    out = module(inputs)
    g = torch.from_numpy(grad_output.copy())
    bias = module.c_proj.bias
    rank_grads: list[dict[str, np.ndarray]] = [{} for _ in range(world)]
    parts = zip(out.chunk(world, 1), g.chunk(world, 1), rank_grads, strict=True)
    for out_r, g_r, own in parts if bias is not None else ():
        (bias_grad,) = torch.autograd.grad(out_r, bias, g_r, retain_graph=True)
        own["c_proj.bias"] = bias_grad.numpy().copy()
    out.backward(g)
    return {"output": out.detach().numpy().copy(), "input_grad": inputs.grad.numpy().copy(),
            "grads": {n: p.grad.numpy().copy() for n, p in module.named_parameters()},
            "rank_grads": rank_grads}


def cross_entropy_run(logits: np.ndarray, target: np.ndarray, grad_output: np.ndarray,
                      ) -> dict[str, Any]:
    """F.cross_entropy(reduction='none') over the last dim of logits (..., vocab): the
    leading dims flattened into tokens (F.cross_entropy wants the classes in dim 1)."""
    x = torch.from_numpy(logits.copy()).requires_grad_(True)
    loss = F.cross_entropy(x.reshape(-1, x.shape[-1]), torch.from_numpy(target).reshape(-1),
                           reduction="none").reshape(target.shape)
    loss.backward(torch.from_numpy(grad_output.copy()))
    return {"loss": loss.detach().numpy().copy(), "logits_grad": x.grad.numpy().copy()}


# ----- the mapping table: the tensor- and sequence-parallel operators -------------------------
def _rank_inputs(shape: tuple[int, ...], world: int, rng: np.random.Generator) -> list[np.ndarray]:
    return [rng.uniform(-1, 1, shape) for _ in range(world)]


class MappingInfo:
    """One operator of Megatron's mappings: its path in ``tt.distributed``, its task, each
    rank's input shape (for batch 2, sequence 2w, features 3w), what each rank's output and
    input gradient are (from every rank's inputs and output gradients), and the
    collectives it issues in forward and in backward (kind, elements)."""

    def __init__(self, path: str, task: str, sharded_input: str | None,
                 forward: Any, backward: Any, forward_calls: list[str],
                 backward_calls: list[str]) -> None:
        self.path, self.task, self.sharded_input = path, task, sharded_input
        self.forward, self.backward = forward, backward
        self.forward_calls, self.backward_calls = forward_calls, backward_calls

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    def input_shape(self, world: int) -> tuple[int, int, int]:
        batch, steps, width = 2, 2 * world, 3 * world
        if self.sharded_input == "features":
            return batch, steps, width // world
        if self.sharded_input == "sequence":
            return batch, steps // world, width
        return batch, steps, width


def _cat(xs: list[np.ndarray], axis: int) -> np.ndarray:
    return np.concatenate(xs, axis=axis)


MAPPINGS = [
    MappingInfo("tensor_parallel.copy_to_tensor_model_parallel_region", "7.3", None,
                lambda xs, r, w: xs[r], lambda gs, r, w: sum(gs), [], ["all_reduce"]),
    MappingInfo("tensor_parallel.reduce_from_tensor_model_parallel_region", "7.3", None,
                lambda xs, r, w: sum(xs), lambda gs, r, w: gs[r], ["all_reduce"], []),
    MappingInfo("tensor_parallel.scatter_to_tensor_model_parallel_region", "7.3", None,
                lambda xs, r, w: split(xs[r], w, r, -1), lambda gs, r, w: _cat(gs, -1),
                [], ["all_gather"]),
    MappingInfo("tensor_parallel.gather_from_tensor_model_parallel_region", "7.3", "features",
                lambda xs, r, w: _cat(xs, -1), lambda gs, r, w: split(gs[r], w, r, -1),
                ["all_gather"], []),
    MappingInfo("sequence_parallel.scatter_to_sequence_parallel_region", "7.4", None,
                lambda xs, r, w: split(xs[r], w, r, 1), lambda gs, r, w: _cat(gs, 1),
                [], ["all_gather"]),
    MappingInfo("sequence_parallel.gather_from_sequence_parallel_region", "7.4", "sequence",
                lambda xs, r, w: _cat(xs, 1), lambda gs, r, w: split(sum(gs), w, r, 1),
                ["all_gather"], ["reduce_scatter"]),
    MappingInfo("sequence_parallel.reduce_scatter_to_sequence_parallel_region", "7.4", None,
                lambda xs, r, w: split(sum(xs), w, r, 1), lambda gs, r, w: _cat(gs, 1),
                ["reduce_scatter"], ["all_gather"]),
]


def mapping_case(info: MappingInfo, world: int, seed: int) -> dict[str, Any]:
    """Inputs and output gradients for every rank, and what every rank must get."""
    rng = np.random.default_rng(seed)
    inputs = _rank_inputs(info.input_shape(world), world, rng)
    outputs = [info.forward(inputs, r, world) for r in range(world)]
    grad_outputs = [rng.uniform(-1, 1, o.shape) for o in outputs]
    return {"inputs": inputs, "grad_outputs": grad_outputs, "outputs": outputs,
            "input_grads": [info.backward(grad_outputs, r, world) for r in range(world)]}


def sequence_parallel_block(x: np.ndarray, ln: dict[str, np.ndarray], a: np.ndarray,
                            b: np.ndarray, grad_output: np.ndarray) -> dict[str, Any]:
    """out = x + tanh(LayerNorm(x) @ A) @ B in one process, and its gradients."""
    inputs = torch.from_numpy(x.copy()).requires_grad_(True)
    norm = nn.LayerNorm(x.shape[-1], dtype=torch.float64)
    load(norm, ln)
    ta = torch.from_numpy(a.copy()).requires_grad_(True)
    tb = torch.from_numpy(b.copy()).requires_grad_(True)
    out = inputs + torch.tanh(norm(inputs) @ ta) @ tb
    out.backward(torch.from_numpy(grad_output.copy()))
    return {"output": out.detach().numpy(), "input_grad": inputs.grad.numpy(),
            "ln_weight_grad": norm.weight.grad.numpy(), "ln_bias_grad": norm.bias.grad.numpy(),
            "A_grad": ta.grad.numpy(), "B_grad": tb.grad.numpy()}


def sequence_parallel_layers(x: np.ndarray, ln: dict[str, np.ndarray],
                             weights: dict[str, np.ndarray], grad_output: np.ndarray,
                             ) -> dict[str, Any]:
    """out = x + fc2(tanh(fc1(LayerNorm(x)))) in one process, and its gradients
    (``weights``: fc1_weight, fc1_bias, fc2_weight, fc2_bias)."""
    inputs = torch.from_numpy(x.copy()).requires_grad_(True)
    norm = nn.LayerNorm(x.shape[-1], dtype=torch.float64)
    load(norm, ln)
    params = {k: torch.from_numpy(v.copy()).requires_grad_(True) for k, v in weights.items()}
    hidden = torch.tanh(F.linear(norm(inputs), params["fc1_weight"], params["fc1_bias"]))
    out = inputs + F.linear(hidden, params["fc2_weight"], params["fc2_bias"])
    out.backward(torch.from_numpy(grad_output.copy()))
    return {"output": out.detach().numpy(), "input_grad": inputs.grad.numpy(),
            "ln_weight_grad": norm.weight.grad.numpy(), "ln_bias_grad": norm.bias.grad.numpy(),
            **{f"{k}_grad": v.grad.numpy() for k, v in params.items()}}


def pipeline_train(widths: list[int], weights: dict[str, np.ndarray],
                   steps: list[tuple[np.ndarray, np.ndarray]], n_microbatches: int, lr: float,
                   ) -> dict[str, Any]:
    """The MLP on the whole batch in one process: per step each micro-batch's mse loss,
    the gradient of their mean, then SGD."""
    model = MLP(widths)
    load(model, weights)
    losses, grads = [], []
    for x, y in steps:
        model.zero_grad(set_to_none=True)
        parts = [F.mse_loss(model(torch.from_numpy(a)), torch.from_numpy(b))
                 for a, b in zip(np.split(x, n_microbatches), np.split(y, n_microbatches))]
        losses.append(np.array([p.item() for p in parts]))
        (sum(parts) / n_microbatches).backward()
        grads.append({n: p.grad.numpy().copy() for n, p in model.named_parameters()})
        with torch.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
    return {"losses": losses, "grads": grads}


def schedule_order(schedule: str, stage: int, num_stages: int, n: int) -> str:
    """The forward (F) and backward (B) micro-batch steps of a stage, in order."""
    if schedule == "gpipe":
        return "F" * n + "B" * n
    warmup = min(num_stages - stage - 1, n)
    return "F" * warmup + "FB" * (n - warmup) + "B" * warmup


def in_flight(order: str) -> int:
    """The most micro-batches between their forward and their backward at once."""
    live = peak = 0
    for step in order:
        live += 1 if step == "F" else -1
        peak = max(peak, live)
    return peak


# ----- the GPT on a grid --------------------------------------------------------------------
def gpt_train(cfg: dict[str, Any], batches: list[tuple[np.ndarray, np.ndarray]],
              val: tuple[np.ndarray, np.ndarray], options: dict[str, Any], seed: int,
              ) -> dict[str, Any]:
    """The GPT in one process (graders.oracle.gpt), AdamW from configure_optimizers, on the
    whole batch: the validation loss before each step, each step's loss, the weights at
    the end; and the initial weights."""
    from . import gpt

    model, weights = gpt.gpt(cfg, seed)
    opt = model.configure_optimizers(options["weight_decay"], options["lr"], options["betas"])
    losses, val_losses = [], []
    for idx, targets in batches:
        with torch.no_grad():
            val_losses.append(model(torch.from_numpy(val[0]), torch.from_numpy(val[1]))[1].item())
        opt.zero_grad()
        _, loss = model(torch.from_numpy(idx), torch.from_numpy(targets))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"weights": weights, "losses": np.array(losses), "val": np.array(val_losses),
            "params": {n: p.detach().numpy().copy() for n, p in model.named_parameters()}}


def gpt_local_part(name: str, value: np.ndarray, tp: int, rank: int, n_embd: int) -> np.ndarray:
    """Tensor-parallel rank ``rank``'s part of the GPT's parameter ``name``."""
    if name.endswith(("wte.weight", "lm_head.weight", "c_fc.weight", "c_fc.bias")):
        return split(value, tp, rank, 0)
    if name.endswith(("c_attn.weight", "c_attn.bias")):
        return value[qkv_rows(n_embd, tp, rank)]
    if name.endswith("c_proj.weight"):
        return split(value, tp, rank, 1)
    return value
