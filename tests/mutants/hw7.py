"""Wrong variants for assignment 7 (parallel training), and correct alternatives."""

from . import Mutant

MUTANTS = [
    # ----- 7.1 DistributedDataParallel ---------------------------------------------------
    Mutant(
        id="ddp-sums-gradients",
        task="7.1",
        file="distributed/data_parallel/ddp.py",
        find="work = dist.all_reduce(flat, op=dist.ReduceOp.AVG,",
        replace="work = dist.all_reduce(flat, op=dist.ReduceOp.SUM,",
        why="gradients summed over the ranks, not averaged",
    ),
    Mutant(
        id="ddp-bucket-reduced-twice",
        task="7.1",
        file="distributed/data_parallel/ddp.py",
        find="        work = dist.all_reduce(flat, op=dist.ReduceOp.AVG, group=self.process_group,\n"
             "                               async_op=True)\n",
        replace="        dist.all_reduce(flat, op=dist.ReduceOp.AVG, group=self.process_group)\n"
                "        work = dist.all_reduce(flat, op=dist.ReduceOp.AVG, group=self.process_group,\n"
                "                               async_op=True)\n",
        why="each bucket all-reduced twice (the values are still right: an average of equal "
            "values)",
    ),
    Mutant(
        id="ddp-no-overlap",
        task="7.1",
        file="distributed/data_parallel/ddp.py",
        find="            if len(self._ready[k]) < len(self.bucket_indices[k]):",
        replace="            if sum(map(len, self._ready)) < len(self._params):",
        why="the all-reduces start only once backward has produced every gradient (no "
            "overlap of communication with backward)",
    ),
    Mutant(
        id="ddp-no-broadcast",
        task="7.1",
        file="distributed/data_parallel/ddp.py",
        find="            dist.broadcast(tensor, src=src, group=self.process_group)",
        replace="            pass",
        why="the initial parameters are not broadcast: ranks start from different weights",
    ),
    Mutant(
        id="ddp-broadcasts-parameters-only",
        task="7.1",
        file="distributed/data_parallel/ddp.py",
        find="        for tensor in [*self.module.parameters(), *self.module.buffers()]:",
        replace="        for tensor in self.module.parameters():",
        why="the buffers are not broadcast at construction: ranks keep their own running "
            "statistics (module APIs on parameters only)",
    ),
    Mutant(
        id="ddp-broadcast-from-global-rank-0",
        task="7.1",
        file="distributed/data_parallel/ddp.py",
        find="        src = dist.get_process_group_ranks(self.process_group)[0]",
        replace="        src = 0",
        why="the parameters broadcast from global rank 0, not from the process group's first "
            "rank (a group without rank 0, e.g. [1, 3] beside a tensor-parallel dimension)",
    ),
    Mutant(
        id="ddp-bucket-closes-a-byte-early",
        task="7.1",
        file="distributed/data_parallel/ddp.py",
        find="            current, size = [], 0",
        replace="            current, size = [], 1",
        why="an off-by-one in the bucket rule: every bucket after the first closes at cap - 1 "
            "bytes",
    ),
    # ----- 7.2 ZeRO -------------------------------------------------------------------------
    Mutant(
        id="zero-updates-every-parameter",
        task="7.2",
        file="distributed/optim/zero.py",
        find="""        if self.stage == 1:
            for p in params:
                if p._grad is not None:
                    self._reduce_scatter_grad(p)
        self.optim.step()
        for p in params:
            _, _, chunk = shard_bounds(p.numel(), self.world, self.rank)
            full = Tensor(np.zeros(chunk * self.world, dtype=p.data.dtype))
            dist.all_gather_into_tensor(full, self.shard(p), group=self.process_group)
            p.data[...] = full.data[:p.numel()].reshape(p.shape)
            p._bump_version()""",
        replace="""        for p in params:
            if p._grad is not None:
                dist.all_reduce(p._grad, op=dist.ReduceOp.AVG, group=self.process_group)
        if not hasattr(self, "_everything"):
            self._everything = type(self.optim)(
                [{**{k: v for k, v in g.items() if k != "params"}, "params": g["params"]}
                 for g in self.param_groups])
        self._everything.step()""",
        why="ZeRO that all-reduces the gradients and updates every parameter on every rank "
            "(each rank holds the whole optimizer state)",
    ),
    Mutant(
        id="zero2-keeps-full-gradients",
        task="7.2",
        file="distributed/optim/zero.py",
        find="""        self._reduce_scatter_grad(param)
        param.grad = None""",
        replace="""        self._reduce_scatter_grad(param)""",
        why="ZeRO-2 reduce-scatters each gradient but keeps the full one on every rank",
    ),
    Mutant(
        id="zero-shards-always-float64",
        task="7.2",
        file="distributed/optim/zero.py",
        find="        values = np.zeros(chunk, dtype=param.data.dtype)",
        replace="        values = np.zeros(chunk, dtype=np.float64)",
        why="every shard made float64 whatever its parameter's dtype: a float32 model's "
            "optimizer state takes twice its share and the update is not float32 AdamW's",
    ),
    Mutant(
        id="zero-all-gathers-over-the-world",
        task="7.2",
        file="distributed/optim/zero.py",
        find="            dist.all_gather_into_tensor(full, self.shard(p), group=self.process_group)",
        replace="            dist.all_gather_into_tensor(full, self.shard(p))",
        why="the updated chunks all-gathered over the whole world, not over process_group "
            "(wrong on a sub-group)",
    ),
    Mutant(
        id="zero-shards-by-global-rank",
        task="7.2",
        file="distributed/optim/zero.py",
        find="        start, stop, chunk = shard_bounds(param.numel(), self.world, self.rank)",
        replace="        start, stop, chunk = shard_bounds(param.numel(), self.world, dist.get_rank())",
        why="each rank takes the chunk of its global rank, not of its rank in process_group "
            "(wrong on a sub-group whose ranks differ from the global ranks)",
    ),
    Mutant(
        id="zero-shard-in-memory-order",
        task="7.2",
        file="distributed/optim/zero.py",
        find="        values[:stop - start] = param.data.reshape(-1)[start:stop]",
        replace="        values[:stop - start] = param.data.ravel(order=\"A\")[start:stop]",
        why="a parameter flattened in its memory order, not row-major (wrong for a "
            "column-major parameter)",
    ),
    Mutant(
        id="zero-gradient-in-memory-order",
        task="7.2",
        file="distributed/optim/zero.py",
        find="        flat[:param.numel()] = param._grad.data.reshape(-1)",
        replace="        flat[:param.numel()] = param._grad.data.flatten(order=\"K\")",
        why="a gradient flattened in its memory order, not row-major (wrong for a "
            "column-major gradient)",
    ),
    Mutant(
        id="zero-pads-with-float64-zeros",
        task="7.2",
        file="distributed/optim/zero.py",
        find="""        flat = np.zeros(chunk * self.world, dtype=param.data.dtype)
        flat[:param.numel()] = param._grad.data.reshape(-1)""",
        replace="""        pad = np.zeros(chunk * self.world - param.numel())
        flat = np.concatenate([param._grad.data.reshape(-1), pad])""",
        why="the gradient padded with float64 zeros: a float32 gradient is reduce-scattered "
            "as float64 into a float32 shard (torch.distributed rejects mixed dtypes)",
    ),
    # ----- 7.3 tensor parallelism -------------------------------------------------------------
    Mutant(
        id="tp-row-parallel-no-all-reduce",
        task="7.3",
        file="distributed/tensor_parallel/layers.py",
        find="            y = reduce_from_tensor_model_parallel_region(partial, self.group)",
        replace="            y = partial",
        why="a row-parallel Linear that never sums its ranks' partial results",
    ),
    Mutant(
        id="tp-column-split-wrong-axis",
        task="7.3",
        file="distributed/tensor_parallel/layers.py",
        find="        self.weight = _param(linear.weight.data[start:start + part])\n        if linear",
        replace="        self.weight = _param(linear.weight.data[:, start:start + part])\n"
                "        if linear",
        why="a column-parallel Linear that splits the weight along the input features",
    ),
    Mutant(
        id="tp-embedding-no-mask",
        task="7.3",
        file="distributed/tensor_parallel/layers.py",
        find="        return reduce_from_tensor_model_parallel_region(rows * keep, self.group)",
        replace="        return reduce_from_tensor_model_parallel_region(rows, self.group)",
        why="a vocabulary-parallel embedding that looks up out-of-range tokens as row 0 "
            "instead of zeros",
    ),
    Mutant(
        id="tp-attention-drops-sequence-parallel",
        task="7.3",
        file="distributed/tensor_parallel/transformer.py",
        find="        self.c_attn = ColumnParallelLinear(merged, group, sequence_parallel=sequence_parallel)",
        replace="        self.c_attn = ColumnParallelLinear(merged, group)",
        why="ParallelCausalSelfAttention(sequence_parallel=True) builds its column-parallel "
            "c_attn without sequence_parallel (a dropped keyword): it never gathers the "
            "sequence",
    ),
    Mutant(
        id="tp-row-reduces-over-the-world",
        task="7.3",
        file="distributed/tensor_parallel/layers.py",
        find="            y = reduce_from_tensor_model_parallel_region(partial, self.group)",
        replace="            y = reduce_from_tensor_model_parallel_region(partial)",
        why="a row-parallel Linear that sums its partial results over the default group (the "
            "world), not its tensor-parallel group (a dropped group argument): right only "
            "when the group is the world",
    ),
    Mutant(
        id="tp-cross-entropy-global-rank",
        task="7.3",
        file="distributed/tensor_parallel/cross_entropy.py",
        find="        start = dist.get_rank(group) * part",
        replace="        start = dist.get_rank() * part",
        why="the vocabulary range from the global rank, not the rank in the tensor-parallel "
            "group: right only when the group is the world",
    ),
    Mutant(
        id="tp-heads-split-contiguously",
        task="7.3",
        file="distributed/tensor_parallel/transformer.py",
        find="        order = np.concatenate([qkv_rows(self.n_embd, world, r) for r in range(world)])",
        replace="        order = np.arange(3 * self.n_embd)",
        why="attention split by contiguous rows of c_attn: a rank gets queries and keys of "
            "other heads, not its heads' queries, keys and values",
    ),
    Mutant(
        id="tp-cross-entropy-classes-in-dim-1",
        task="7.3",
        file="distributed/tensor_parallel/cross_entropy.py",
        find="        picked = np.take_along_axis(shifted, local[..., None], axis=-1)[..., 0]",
        replace="        picked = np.take_along_axis(shifted, local[..., None], axis=1)[..., 0]",
        why="the target's logit looked up in dim 1 (F.cross_entropy's class dim): right for "
            "(tokens, vocab) logits only, wrong for (batch, sequence, vocab)",
    ),
    Mutant(
        id="tp-mlp-block-bypasses-its-layers",
        task="7.3",
        file="distributed/tensor_parallel/transformer.py",
        find="        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))",
        replace="""        from .mappings import (
            copy_to_tensor_model_parallel_region,
            reduce_from_tensor_model_parallel_region,
        )

        h = self.gelu(self.c_fc._local_output(
            copy_to_tensor_model_parallel_region(x, self.c_fc.group)))
        y = reduce_from_tensor_model_parallel_region(self.c_proj._partial_product(h),
                                                     self.c_proj.group)
        return self.dropout(y + self.c_proj.bias)""",
        why="ParallelMLP(sequence_parallel=True) keeps sequence_parallel on its Linear layers "
            "but its forward runs their non-sequence-parallel path (\"f\" and \"g\" around "
            "their local products): each rank multiplies its part of the sequence and the "
            "all-reduce adds up different positions",
    ),
    Mutant(
        id="tp-attention-steps-from-its-input",
        task="7.3",
        file="distributed/tensor_parallel/transformer.py",
        find="        batch, steps, _ = qkv.shape",
        replace="        batch, steps, _ = x.shape",
        why="the attention's sequence length taken from its input, not from the queries: with "
            "sequence_parallel the input holds this rank's part of the sequence, the "
            "queries (after the all-gather) the whole",
    ),
    # ----- 7.4 sequence parallelism -----------------------------------------------------------
    Mutant(
        id="sp-all-reduce-instead-of-reduce-scatter",
        task="7.4",
        file="distributed/sequence_parallel/mappings.py",
        find="        return reduce_scatter(x.data, SEQUENCE_DIM, group)",
        replace="        from ..collectives.arrays import all_reduce\n\n"
                "        return chunk(all_reduce(x.data, group), SEQUENCE_DIM, group)",
        why="sequence parallelism that all-reduces the whole activations and keeps its part "
            "(right values, twice the communication)",
    ),
    Mutant(
        id="sp-layernorm-grads-not-summed",
        task="7.4",
        file="distributed/sequence_parallel/grads.py",
        find="""    for p in params:
        if p._grad is not None:
            dist.all_reduce(p._grad, group=group)""",
        replace="""    pass""",
        why="LayerNorm gradients left as each rank's part of the sequence",
    ),
    Mutant(
        id="sp-column-gathers-over-the-world",
        task="7.4",
        file="distributed/tensor_parallel/layers.py",
        find="            x = gather_from_sequence_parallel_region(x, self.group)",
        replace="            x = gather_from_sequence_parallel_region(x)",
        why="a sequence-parallel column-parallel Linear that all-gathers the sequence over "
            "the whole world instead of its tensor-parallel group (the same with one group)",
    ),
    Mutant(
        id="sp-column-copies-instead-of-gathering",
        task="7.4",
        file="distributed/tensor_parallel/layers.py",
        find="            x = gather_from_sequence_parallel_region(x, self.group)",
        replace="            x = copy_to_tensor_model_parallel_region(x, self.group)",
        why="a sequence-parallel column-parallel Linear that keeps the non-sequence-parallel "
            "\"f\": it multiplies only this rank's part of the sequence",
    ),
    # ----- 7.5 pipeline parallelism -----------------------------------------------------------
    Mutant(
        id="pp-1f1b-is-gpipe",
        task="7.5",
        file="distributed/pipelining/schedules.py",
        find="        warmup = min(stage.num_stages - stage.stage_index - 1, n)",
        replace="        warmup = n",
        why="a 1F1B schedule that runs every forward first (GPipe, holding every "
            "micro-batch's activations)",
    ),
    Mutant(
        id="pp-sends-previous-microbatch",
        task="7.5",
        file="distributed/pipelining/stage.py",
        find="            send_activation(out, self.next_rank, self.group)",
        replace="            send_activation(self._outputs.get(chunk - 1, out), self.next_rank, "
                "self.group)",
        why="a stage that sends the previous micro-batch's activations to the next stage",
    ),
    Mutant(
        id="pp-loss-not-scaled",
        task="7.5",
        file="distributed/pipelining/stage.py",
        find="            (out * loss_scale).backward()",
        replace="            out.backward()",
        why="the micro-batch losses' gradients summed, not averaged",
    ),
    # ----- 7.6 end to end ------------------------------------------------------------------
    Mutant(
        id="grad-mode-shared-by-threads",
        task="7.6",
        file="autograd/grad_mode.py",
        find="class _ThreadState(threading.local):",
        replace="class _ThreadState:",
        why="grad mode kept in one module-global object: a rank's no_grad region (its "
            "evaluation, with collectives inside) switches autograd off for the other ranks",
    ),
    Mutant(
        id="trainer-no-data-parallel-average",
        task="7.6",
        file="distributed/models/gpt.py",
        find="                    dist.all_reduce(p._grad, op=dist.ReduceOp.AVG, group=self.dp_group)",
        replace="                    pass",
        why="with pipeline stages, gradients are never averaged over the data-parallel ranks",
    ),
    Mutant(
        id="trainer-sequence-parallel-grads-not-summed",
        task="7.6",
        file="distributed/models/gpt.py",
        find="""        allreduce_sequence_parallel_grads(self.stage_module.sequence_parallel_parameters(),
                                          self.tp_group)""",
        replace="",
        why="the sequence-parallel parameters' gradients (LayerNorms, position embeddings) "
            "not summed over the tensor-parallel ranks",
    ),
]

ALTERNATIVES = [
    Mutant(
        id="zero-shard-of-a-contiguous-copy",
        task="7.2",
        file="distributed/optim/zero.py",
        find="        values[:stop - start] = param.data.reshape(-1)[start:stop]",
        replace="        values[:stop - start] = np.ascontiguousarray(param.data).ravel()[start:stop]",
        why="the shard cut from a row-major copy of the parameter",
    ),
    Mutant(
        id="pp-scale-through-the-root-gradient",
        task="7.5",
        file="distributed/pipelining/stage.py",
        find="            (out * loss_scale).backward()",
        replace="            out.backward(Tensor(out.data * 0 + loss_scale))",
        why="the loss scale given as backward's starting gradient",
    ),
    Mutant(
        id="tp-cross-entropy-one-hot",
        task="7.3",
        file="distributed/tensor_parallel/cross_entropy.py",
        find="""        picked = np.take_along_axis(shifted, local[..., None], axis=-1)[..., 0]
        predicted = Tensor(np.where(outside, 0.0, picked).astype(x.dtype))""",
        replace="""        onehot = np.arange(part) == (t - start)[..., None]
        predicted = Tensor((shifted * onehot).sum(axis=-1).astype(x.dtype))""",
        why="the target's logit picked with a one-hot product instead of an index",
    ),
    Mutant(
        id="sp-grads-coalesced",
        task="7.4",
        file="distributed/sequence_parallel/grads.py",
        find="""    for p in params:
        if p._grad is not None:
            dist.all_reduce(p._grad, group=group)""",
        replace="""    import numpy as np

    grads = [p._grad for p in params if p._grad is not None]
    if not grads:
        return
    flat = Tensor(np.concatenate([g.data.ravel() for g in grads]))
    dist.all_reduce(flat, group=group)
    offset = 0
    for g in grads:
        g.data[...] = flat.data[offset:offset + g.numel()].reshape(g.shape)
        offset += g.numel()""",
        why="one all-reduce of all the gradients in a flat buffer",
    ),
    Mutant(
        id="zero-sum-then-divide",
        task="7.2",
        file="distributed/optim/zero.py",
        find="""        dist.reduce_scatter_tensor(out, Tensor(flat), op=dist.ReduceOp.AVG,
                                   group=self.process_group)""",
        replace="""        dist.reduce_scatter_tensor(out, Tensor(flat), op=dist.ReduceOp.SUM,
                                   group=self.process_group)
        out.data /= self.world""",
        why="reduce-scatter the sum and divide by the world size",
    ),
    Mutant(
        id="ddp-predivide-then-sum",
        task="7.1",
        file="distributed/data_parallel/ddp.py",
        find="""        flat = Tensor(np.concatenate([g.ravel() for g in grads]))
        work = dist.all_reduce(flat, op=dist.ReduceOp.AVG, group=self.process_group,
                               async_op=True)""",
        replace="""        world = dist.get_world_size(self.process_group)
        flat = Tensor(np.concatenate([g.ravel() for g in grads]) / world)
        work = dist.all_reduce(flat, op=dist.ReduceOp.SUM, group=self.process_group,
                               async_op=True)""",
        why="divide each gradient by the world size first, then all-reduce the sum",
    ),
    Mutant(
        id="ddp-coalesced-broadcast",
        task="7.1",
        file="distributed/data_parallel/ddp.py",
        find="""        for tensor in [*self.module.parameters(), *self.module.buffers()]:
            dist.broadcast(tensor, src=src, group=self.process_group)""",
        replace="""        tensors = [*self.module.parameters(), *self.module.buffers()]
        flat = Tensor(np.concatenate([t.data.ravel() for t in tensors]))
        dist.broadcast(flat, src=src, group=self.process_group)
        offset = 0
        for t in tensors:
            t.data[...] = flat.data[offset:offset + t.numel()].reshape(t.shape)
            offset += t.numel()""",
        why="one broadcast of all parameters in a flat buffer (PyTorch coalesces them too)",
    ),
    Mutant(
        id="sp-column-returns-from-its-branch",
        task="7.4",
        file="distributed/tensor_parallel/layers.py",
        find="            x = gather_from_sequence_parallel_region(x, self.group)",
        replace="            return self._local_output(gather_from_sequence_parallel_region(\n"
                "                x, group=self.group))",
        why="the sequence-parallel branch returns the layer's output itself",
    ),
]
