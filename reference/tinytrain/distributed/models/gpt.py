"""The GPT of assignment 5 trained on a grid of ranks (task 7.6): data parallel (DP) x
pipeline parallel (PP) x tensor parallel (TP, optionally sequence parallel), as in
Megatron-LM, equal to single-process training step for step.

``ParallelGPT`` is ``tt.models.GPT`` with tensor parallelism over the TP group: the token
embedding and the output head split by vocabulary (tied: the head uses this rank's rows
of the embedding), each block's heads and MLP features split (``ParallelBlock``), the
loss from ``vocab_parallel_cross_entropy``. With ``sequence_parallel`` the residual
stream between the tensor-parallel layers is split along the sequence: the embedding's
sum is reduce-scattered, each rank adds the position embeddings of its positions, and
the final LayerNorm's output is all-gathered before the head. Its parameter names are
the GPT's (``transformer.h.0.attn.c_attn.weight`` ...), each holding this rank's part.

``GPTStage`` is a pipeline stage's share of it: consecutive blocks; the first stage also
embeds, the last also normalises and computes the logits.

``ParallelTrainer`` puts it together on a ``DeviceMesh`` of dims ("pp", "dp", "tp"): each
rank builds its stage of the TP model, runs the 1F1B schedule over the micro-batches of its
data-parallel part of the batch, sums the sequence-parallel gradients over the TP group,
averages all gradients over the DP group (with ``DistributedDataParallel`` when there is
one stage and one micro-batch, else after the pipeline's flush), and steps AdamW with
the GPT's two groups (weights of 2 or more dims decay). Every rank returns the loss of
the whole batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...autograd import no_grad
from ...models.gpt import GPT, Block
from ...nn import functional as F  # noqa: N812 - PyTorch's usual name
from ...nn.container import ModuleDict, ModuleList
from ...nn.layers import Dropout, Embedding, LayerNorm
from ...nn.module import Module
from ...nn.parameter import Parameter
from ...optim import AdamW
from ...tensor import Tensor
from ..collectives import api as dist
from ..data_parallel import DistributedDataParallel
from ..device_mesh import DeviceMesh
from ..pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe
from ..sequence_parallel import (
    allreduce_sequence_parallel_grads,
    gather_from_sequence_parallel_region,
    reduce_scatter_to_sequence_parallel_region,
)
from ..tensor_parallel import (
    ColumnParallelLinear,
    ParallelCausalSelfAttention,
    ParallelMLP,
    VocabParallelEmbedding,
    copy_to_tensor_model_parallel_region,
    vocab_parallel_cross_entropy,
)


def _copy(module: Module) -> Module:
    """A module with its own copies of ``module``'s parameters (LayerNorm, Embedding)."""
    if isinstance(module, LayerNorm):
        out = LayerNorm(module.normalized_shape, module.eps, bias=module.bias is not None)
    else:
        out = Embedding(module.num_embeddings, module.embedding_dim)
    for name, p in module.named_parameters():
        getattr(out, name).data = np.array(p.data, copy=True)
    return out


class ParallelBlock(Module):
    """A pre-norm block with tensor-parallel attention and MLP (LayerNorms replicated)."""

    def __init__(self, block: Block, tp_group: Any, sequence_parallel: bool = False) -> None:
        super().__init__()
        self.ln_1 = _copy(block.ln_1)
        self.attn = ParallelCausalSelfAttention(block.attn, tp_group, sequence_parallel)
        self.ln_2 = _copy(block.ln_2)
        self.mlp = ParallelMLP(block.mlp, tp_group, sequence_parallel)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class ParallelGPT(Module):
    """``gpt`` (the same full model on every rank) with tensor parallelism over
    ``tp_group``. ``forward(idx, targets)`` gives this rank's part of the logits (its
    vocabulary) and the mean loss over all tokens."""

    def __init__(self, gpt: GPT, tp_group: Any = None, sequence_parallel: bool = False) -> None:
        super().__init__()
        self.config = gpt.config
        self.tp_group = tp_group
        self.sequence_parallel = sequence_parallel
        t = gpt.transformer
        # BEGIN SOLUTION 7.6
        self.transformer = ModuleDict({
            "wte": VocabParallelEmbedding(t.wte, tp_group),
            "wpe": _copy(t.wpe),
            "drop": Dropout(t.drop.p),
            "h": ModuleList([ParallelBlock(b, tp_group, sequence_parallel) for b in t.h]),
            "ln_f": _copy(t.ln_f),
        })
        if not gpt.config.tie_weights:
            self.lm_head = ColumnParallelLinear(gpt.lm_head, tp_group)
        # END SOLUTION

    # ----- the pieces a pipeline stage runs -----------------------------------------------
    def head_weight(self) -> Parameter:
        """This rank's rows (vocabulary) of the output head's weight."""
        # BEGIN SOLUTION 7.6
        if self.config.tie_weights:
            return self.transformer.wte.weight
        return self.lm_head.weight
        # END SOLUTION

    def embed(self, idx: Tensor) -> Tensor:
        """Token plus position embeddings (this rank's part of the sequence under sequence
        parallelism), after dropout."""
        steps = idx.shape[1]
        # BEGIN SOLUTION 7.6
        # HINT: under sequence parallelism VocabParallelEmbedding's all-reduce would be
        # HINT: wasted: sum the ranks' lookups with a reduce-scatter along the sequence
        t = self.transformer
        positions = np.arange(steps)
        if self.sequence_parallel:
            wte = t.wte
            ids = idx.data
            outside = (ids < wte.vocab_start_index) | (ids >= wte.vocab_end_index)
            local = Tensor(np.where(outside, 0, ids - wte.vocab_start_index).astype(np.int64))
            keep = Tensor((~outside)[..., None].astype(wte.weight.data.dtype))
            tokens = reduce_scatter_to_sequence_parallel_region(
                F.embedding(local, wte.weight) * keep, self.tp_group)
            world, rank = dist.get_world_size(self.tp_group), dist.get_rank(self.tp_group)
            positions = np.split(positions, world)[rank]
        else:
            tokens = t.wte(idx)
        x = tokens + t.wpe(Tensor(positions))
        return t.drop(x)
        # END SOLUTION

    def logits(self, x: Tensor) -> Tensor:
        """Final LayerNorm, then this rank's part of the logits."""
        # BEGIN SOLUTION 7.6
        x = self.transformer.ln_f(x)
        if self.sequence_parallel:
            x = gather_from_sequence_parallel_region(x, self.tp_group)
        else:
            x = copy_to_tensor_model_parallel_region(x, self.tp_group)
        return F.linear(x, self.head_weight())
        # END SOLUTION

    def loss(self, logits: Tensor, targets: Tensor) -> Tensor:
        """The mean cross entropy over every token."""
        # BEGIN SOLUTION 7.6
        flat = logits.reshape(-1, logits.shape[-1])
        return vocab_parallel_cross_entropy(flat, targets.reshape(-1), self.tp_group).mean()
        # END SOLUTION

    def forward(self, idx: Tensor, targets: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        x = self.embed(idx)
        for block in self.transformer.h:
            x = block(x)
        logits = self.logits(x)
        return logits, None if targets is None else self.loss(logits, targets)

    def sequence_parallel_parameters(self) -> list[Parameter]:
        """The parameters each rank applies to its part of the sequence only (whose
        gradients must be summed over the TP group): LayerNorms, row-parallel biases, and
        the position embeddings."""
        if not self.sequence_parallel:
            return []
        # BEGIN SOLUTION 7.6
        t = self.transformer
        params = [*t.wpe.parameters(), *t.ln_f.parameters()]
        for block in t.h:
            params += [*block.ln_1.parameters(), *block.ln_2.parameters()]
            params += [m.bias for m in (block.attn.c_proj, block.mlp.c_proj) if m.bias is not None]
        return params
        # END SOLUTION


class GPTStage(Module):
    """Pipeline stage ``index`` of ``count`` of ``model``: its blocks (an equal share,
    in order; earlier stages take one more when they do not divide), the embeddings on the
    first stage, ``ln_f`` and the head on the last. Parameter names stay the model's."""

    def __init__(self, model: ParallelGPT, index: int, count: int) -> None:
        super().__init__()
        if count > 1 and model.config.tie_weights:
            raise ValueError("a tied head needs the embedding and the head on one stage: "
                             "use tie_weights=False with pipeline parallelism")
        self.model_ref = [model]  # not a submodule: the stage registers its own share
        self.is_first, self.is_last = index == 0, index == count - 1
        n = len(model.transformer.h)
        sizes = [n // count + (1 if k < n % count else 0) for k in range(count)]
        start = sum(sizes[:index])
        self.block_indices = list(range(start, start + sizes[index]))
        t = model.transformer
        parts: dict[str, Module] = {"h": ModuleDict({str(i): t.h[i] for i in self.block_indices})}
        if self.is_first:
            parts.update(wte=t.wte, wpe=t.wpe, drop=t.drop)
        if self.is_last:
            parts["ln_f"] = t.ln_f
        self.transformer = ModuleDict(parts)
        if self.is_last and not model.config.tie_weights:
            self.lm_head = model.lm_head

    def forward(self, x: Tensor) -> Tensor:
        model = self.model_ref[0]
        if self.is_first:
            x = model.embed(x)
        for i in self.block_indices:
            x = model.transformer.h[i](x)
        return model.logits(x) if self.is_last else x

    def sequence_parallel_parameters(self) -> list[Parameter]:
        mine = {id(p) for p in self.parameters()}
        return [p for p in self.model_ref[0].sequence_parallel_parameters() if id(p) in mine]


class ParallelTrainer:
    """Train ``gpt`` (the same full model on every rank) on ``mesh`` (dims "pp", "dp",
    "tp"), ``n_microbatches`` per step (``schedule`` "1f1b" or "gpipe"), with AdamW
    (``lr``, ``weight_decay``, ``betas``)."""

    def __init__(self, gpt: GPT, mesh: DeviceMesh, n_microbatches: int = 1,
                 sequence_parallel: bool = False, lr: float = 1e-3,
                 weight_decay: float = 0.0, betas: tuple[float, float] = (0.9, 0.999),
                 schedule: str = "1f1b") -> None:
        self.mesh = mesh
        self.tp_group, self.dp_group, self.pp_group = (mesh.get_group(d) for d in ("tp", "dp", "pp"))
        self.n_microbatches = n_microbatches
        pp_rank, pp_size = mesh.get_local_rank("pp"), mesh.size("pp")
        self.model = ParallelGPT(gpt, self.tp_group, sequence_parallel)
        self.stage_module = GPTStage(self.model, pp_rank, pp_size)
        # BEGIN SOLUTION 7.6
        self.ddp = None
        runner: Module = self.stage_module
        if pp_size == 1 and n_microbatches == 1 and mesh.size("dp") > 1:
            self.ddp = DistributedDataParallel(self.stage_module, process_group=self.dp_group)
            runner = self.ddp
        self.stage = PipelineStage(runner, pp_rank, pp_size, group=self.pp_group)
        schedule_class = {"1f1b": Schedule1F1B, "gpipe": ScheduleGPipe}[schedule]
        self.schedule = schedule_class(self.stage, n_microbatches, loss_fn=self.model.loss)
        params = list(self.stage_module.parameters())
        self.optimizer = AdamW(
            [{"params": [p for p in params if p.ndim >= 2], "weight_decay": weight_decay},
             {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}],
            lr=lr, betas=betas)
        # END SOLUTION

    def step(self, idx: Tensor, targets: Tensor) -> float:
        """One training step on this rank's part of the batch (its data-parallel share);
        returns the mean loss over the whole batch (the same on every rank)."""
        # BEGIN SOLUTION 7.6
        self.optimizer.zero_grad()
        losses: list[Tensor] = []
        stage = self.stage
        self.schedule.step(idx if stage.is_first else None,
                           target=targets if stage.is_last else None,
                           losses=losses if stage.is_last else None)
        allreduce_sequence_parallel_grads(self.stage_module.sequence_parallel_parameters(),
                                          self.tp_group)
        if self.ddp is None:
            for p in self.stage_module.parameters():
                if p._grad is not None:
                    dist.all_reduce(p._grad, op=dist.ReduceOp.AVG, group=self.dp_group)
        self.optimizer.step()
        return self._global_loss(losses)
        # END SOLUTION

    def evaluate(self, idx: Tensor, targets: Tensor) -> float:
        """The mean loss over the whole batch without training (no graph is recorded)."""
        stage = self.stage
        with no_grad():
            # BEGIN SOLUTION 7.6
            out = stage.forward_one(-1, idx if stage.is_first else None,
                                    targets if stage.is_last else None, self.model.loss)
            stage._outputs.pop(-1)
            stage._inputs.pop(-1, None)
            return self._global_loss([out] if stage.is_last else [])
            # END SOLUTION

    def _global_loss(self, losses: list[Tensor]) -> float:
        """The mean of the last stage's micro-batch losses, averaged over the DP group and
        sent to every stage."""
        value = Tensor(np.array([np.mean([float(x.item()) for x in losses]) if losses else 0.0]))
        dist.all_reduce(value, op=dist.ReduceOp.AVG, group=self.dp_group)
        ranks = dist.get_process_group_ranks(self.pp_group)
        dist.broadcast(value, src=ranks[-1], group=self.pp_group)
        return float(value.data[0])
