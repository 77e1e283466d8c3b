"""Probes for tasks 7.3 and 7.4: the tensor- and sequence-parallel operators and layers,
on the probes' runtime (ranks as threads; ``layer`` with ``spec["processes"]``: as forked
processes), with the weights of a full layer the grader sends (every rank cuts
its own part). Marks in the trace: "forward", "backward", "done"."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from . import probe
from ._observe import array, grad
from .distributed_common import mark, run_world
from .gpt import _at, _build, _load


def _function(tt: Any, path: str) -> Any:
    """``tensor_parallel.copy_to_tensor_model_parallel_region`` ... in tt.distributed."""
    module, _, name = path.partition(".")
    if module not in ("tensor_parallel", "sequence_parallel"):
        raise ValueError(f"no operator {path!r}")
    return getattr(getattr(tt.distributed, module), name)


@probe
def mapping(tt: Any, path: str, world: int, inputs: list[np.ndarray],
            grad_outputs: list[np.ndarray]) -> dict[str, Any]:
    """Each rank: y = op(x_rank), then y.backward(grad_outputs[rank]); y and x.grad."""
    op = _function(tt, path)

    def rank_main(rank: int) -> dict[str, Any]:
        x = tt.tensor(inputs[rank]).requires_grad_(True)
        mark("forward")
        y = op(x)
        mark("backward")
        y.backward(tt.tensor(grad_outputs[rank]))
        mark("done")
        return {"output": array(y), "input_grad": grad(x)}

    results, trace = run_world(tt, world, rank_main)
    return {"ranks": results, "trace": trace}


def _full_layer(tt: Any, kind: str, cfg: dict[str, Any], weights: dict[str, np.ndarray]) -> Any:
    if kind in ("column", "row"):
        module = _build(tt, lambda: tt.nn.Linear(cfg["in"], cfg["out"], bias=cfg["bias"]))
    elif kind == "embedding":
        module = _build(tt, lambda: tt.nn.Embedding(cfg["num"], cfg["dim"]))
    elif kind in ("mlp", "attention"):
        config = tt.models.GPTConfig(**cfg)
        make = tt.models.gpt.MLP if kind == "mlp" else tt.models.CausalSelfAttention
        module = _build(tt, lambda: make(config))
    else:
        raise ValueError(f"unknown layer kind {kind!r}")
    _load(module, weights)
    return module


def _parallel(tt: Any, kind: str, full: Any, options: dict[str, Any], group: Any = None) -> Any:
    tp = tt.distributed.tensor_parallel
    on = {} if group is None else {"group": group}
    if kind == "column":
        return tp.ColumnParallelLinear(full, gather_output=options.get("gather_output", False),
                                       **on)
    if kind == "row":
        return tp.RowParallelLinear(full, input_is_parallel=options.get("input_is_parallel", True),
                                    **on)
    if kind == "embedding":
        return tp.VocabParallelEmbedding(full, **on)
    if "sequence_parallel" in options:
        on["sequence_parallel"] = bool(options["sequence_parallel"])
    if kind == "mlp":
        return tp.ParallelMLP(full, **on)
    return tp.ParallelCausalSelfAttention(full, **on)


def _sequence_parallel_branches(tt: Any, block: Any) -> None:
    """Give the column- and row-parallel Linear layers inside ``block`` the probes' own
    copy of their forward's sequence-parallel branches (task 7.4's), so that a task-7.3
    block with ``sequence_parallel=True`` is graded without 7.4's code: a layer whose
    ``sequence_parallel`` is set all-gathers its input along the sequence (dim 1;
    reduce-scatter backward) before its ``_local_output``, or reduce-scatters its
    ``_partial_product`` along the sequence (all-gather backward) before adding its bias;
    with ``sequence_parallel`` unset it runs its own forward. The collectives are the
    framework's given ones on arrays (``collectives/arrays.py``), on the grader's runtime.
    Layers of other classes (a subclass with a forward of its own) are left as they are."""
    tp = tt.distributed.tensor_parallel
    arrays = importlib.import_module(tt.__name__ + ".distributed.collectives.arrays")
    dim = 1  # (batch, time, features)

    def along_sequence(name: str, there: Callable, back: Callable) -> type:
        """A Function running ``there`` along the sequence in forward, ``back`` in backward."""

        class Collective(arrays.CollectiveFunction):
            @staticmethod
            def forward(ctx: Any, x: Any, group: Any) -> np.ndarray:
                ctx.group = group
                return there(x.data, dim, group)

            @staticmethod
            def backward(ctx: Any, g: np.ndarray) -> tuple[np.ndarray, None]:
                return back(g, dim, ctx.group), None

        Collective.__name__ = Collective.__qualname__ = name
        return Collective

    Gather = along_sequence("Gather", arrays.all_gather, arrays.reduce_scatter)  # noqa: N806
    ReduceScatter = along_sequence("ReduceScatter", arrays.reduce_scatter,  # noqa: N806
                                   arrays.all_gather)

    class Column(tp.ColumnParallelLinear):
        def forward(self, x: Any) -> Any:
            if not self.sequence_parallel:
                return tp.ColumnParallelLinear.forward(self, x)
            return self._local_output(Gather.apply(x, self.group))

    class Row(tp.RowParallelLinear):
        def forward(self, x: Any) -> Any:
            if not self.sequence_parallel:
                return tp.RowParallelLinear.forward(self, x)
            y = ReduceScatter.apply(self._partial_product(x), self.group)
            return y if self.bias is None else y + self.bias

    for _, module in block.named_modules():
        if type(module) is tp.ColumnParallelLinear:
            module.__class__ = Column
        elif type(module) is tp.RowParallelLinear:
            module.__class__ = Row


@probe
def layer(tt: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """``spec``: world, kind (column, row, embedding, mlp, attention), cfg, weights (the
    full layer's), options, and per rank its input and output gradient. Each rank builds
    the full layer, its parallel version, runs forward and backward: the output, the
    input's gradient (None for indices) and the parallel layer's parameters' gradients by
    name. Optionally ``groups`` (lists of ranks, made with new_group on every rank in this
    order): each rank's layer is built on the group it is in (``group=``). A block (mlp,
    attention) with ``options["sequence_parallel"]`` is built with it, and its Linear
    layers run the probes' sequence-parallel branches (``_sequence_parallel_branches``):
    each rank's input is then its part of the sequence."""
    kind = spec["kind"]
    dist = tt.distributed

    def rank_main(rank: int) -> dict[str, Any]:
        group = None
        if spec.get("groups") is not None:
            made = [dist.new_group(list(g)) for g in spec["groups"]]
            group = next(m for m, g in zip(made, spec["groups"], strict=True) if rank in g)
        full = _full_layer(tt, kind, spec["cfg"], spec["weights"])
        part = _parallel(tt, kind, full, spec.get("options", {}), group)
        if spec.get("options", {}).get("sequence_parallel"):
            _sequence_parallel_branches(tt, part)
        x = tt.tensor(spec["inputs"][rank])
        if kind != "embedding":
            x.requires_grad_(True)
        mark("forward")
        y = part(x)
        mark("backward")
        y.backward(tt.tensor(spec["grad_outputs"][rank]))
        mark("done")
        return {"output": array(y), "input_grad": None if kind == "embedding" else grad(x),
                "grads": {name: grad(_at(part, name)) for name in spec["local_names"]}}

    results, trace = run_world(tt, spec["world"], rank_main, processes=spec.get("processes", False))
    return {"ranks": results, "trace": trace}


@probe
def block_options(tt: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """``spec``: world, kind (mlp, attention), cfg, weights, options (keywords of
    ParallelMLP / ParallelCausalSelfAttention, e.g. sequence_parallel). Each rank builds the
    full block and its parallel version (no forward): for every tensor-parallel Linear
    inside it (by name), its class and the options it was built with."""
    tp = tt.distributed.tensor_parallel
    make = tp.ParallelMLP if spec["kind"] == "mlp" else tp.ParallelCausalSelfAttention
    classes = {"ColumnParallelLinear": tp.ColumnParallelLinear,
               "RowParallelLinear": tp.RowParallelLinear}

    def rank_main(rank: int) -> dict[str, Any]:
        full = _full_layer(tt, spec["kind"], spec["cfg"], spec["weights"])
        block = make(full, **spec["options"])
        found = {}
        for name, module in block.named_modules():
            kind = next((k for k, c in classes.items() if isinstance(module, c)), None)
            if kind is not None:
                found[name] = {"class": kind,
                               "sequence_parallel": bool(getattr(module, "sequence_parallel",
                                                                 None))}
        return {"layers": found}

    results, trace = run_world(tt, spec["world"], rank_main)
    return {"ranks": results, "trace": trace}


@probe
def cross_entropy(tt: Any, world: int, logits: list[np.ndarray], target: Any,
                  grad_output: Any, groups: list[list[int]] | None = None) -> dict[str, Any]:
    """Each rank: vocab_parallel_cross_entropy(its logits, target), backward with
    ``grad_output``: the per-token losses and the logits' gradient. With ``groups`` (lists
    of ranks, made with new_group on every rank): over the group the rank is in
    (``group=``), ``target`` and ``grad_output`` one per group."""
    dist = tt.distributed

    def rank_main(rank: int) -> dict[str, Any]:
        on, tgt, g = {}, target, grad_output
        if groups is not None:
            made = [dist.new_group(list(m)) for m in groups]
            index = next(i for i, m in enumerate(groups) if rank in m)
            on, tgt, g = {"group": made[index]}, target[index], grad_output[index]
        x = tt.tensor(logits[rank]).requires_grad_(True)
        mark("forward")
        loss = dist.tensor_parallel.vocab_parallel_cross_entropy(x, tt.tensor(tgt), **on)
        mark("backward")
        loss.backward(tt.tensor(g))
        mark("done")
        return {"loss": array(loss), "logits_grad": grad(x)}

    results, trace = run_world(tt, world, rank_main)
    return {"ranks": results, "trace": trace}


@probe
def sequence_parallel_block(tt: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """A residual block with a sequence-parallel LayerNorm region around the probes' own
    tensor-parallel region (no task-7.3 code): each rank holds its part of the sequence
    of x, then

        h = LayerNorm(x_r)                                   (on this rank's positions)
        z = tanh(gather_from_sequence_parallel_region(h) @ A_r) @ B_r   (partial sums)
        out_r = x_r + reduce_scatter_to_sequence_parallel_region(z)

    with A_r, B_r this rank's columns of A and rows of B; out_r.backward(its part of g),
    then allreduce_sequence_parallel_grads([ln.weight, ln.bias]). Marks "forward",
    "backward", "sync", "done"."""
    dist = tt.distributed
    sp = dist.sequence_parallel
    world = spec["world"]

    def rank_main(rank: int) -> dict[str, Any]:
        width = spec["x"].shape[-1]
        ln = _build(tt, lambda: tt.nn.LayerNorm(width))
        _load(ln, spec["ln"])
        part = spec["A"].shape[1] // world
        a = tt.nn.Parameter(tt.tensor(spec["A"][:, rank * part:(rank + 1) * part]))
        b = tt.nn.Parameter(tt.tensor(spec["B"][rank * part:(rank + 1) * part]))
        x = tt.tensor(np.split(spec["x"], world, axis=1)[rank]).requires_grad_(True)
        mark("forward")
        h = sp.gather_from_sequence_parallel_region(ln(x))
        z = tt.tanh(h @ a) @ b
        out = x + sp.reduce_scatter_to_sequence_parallel_region(z)
        mark("backward")
        out.backward(tt.tensor(np.split(spec["grad_output"], world, axis=1)[rank]))
        mark("sync")
        sp.allreduce_sequence_parallel_grads([ln.weight, ln.bias])
        mark("done")
        return {"output": array(out), "input_grad": grad(x), "ln_weight_grad": grad(ln.weight),
                "ln_bias_grad": grad(ln.bias), "A_grad": grad(a), "B_grad": grad(b)}

    results, trace = run_world(tt, world, rank_main)
    return {"ranks": results, "trace": trace}


def _sequence_parallel_layers(tt: Any) -> tuple[Any, Any]:
    """Subclasses of the submission's column- and row-parallel Linear that keep its
    ``forward`` (whose sequence-parallel branches are task 7.4's) and replace task 7.3's
    parts by the probes' own copies: cutting the weights (``__init__``) and the local
    product (``_local_output``, ``_partial_product``). Built from the full layer's arrays
    and this rank's place in its tensor-parallel group."""
    tp = tt.distributed.tensor_parallel
    linear = tt.nn.functional.linear

    def cut(values: np.ndarray, axis: int, rank: int, world: int) -> Any:
        return tt.nn.Parameter(tt.tensor(np.array(np.split(values, world, axis=axis)[rank])))

    class Column(tp.ColumnParallelLinear):
        def __init__(self, weight: np.ndarray, bias: np.ndarray, group: Any, rank: int,
                     world: int) -> None:
            tt.nn.Module.__init__(self)
            self.group, self.gather_output, self.sequence_parallel = group, False, True
            self.in_features = weight.shape[1]
            self.out_features_per_partition = weight.shape[0] // world
            self.weight = cut(weight, 0, rank, world)
            self.bias = cut(bias, 0, rank, world)

        def _local_output(self, x: Any) -> Any:
            return linear(x, self.weight, self.bias)

    class Row(tp.RowParallelLinear):
        def __init__(self, weight: np.ndarray, bias: np.ndarray, group: Any, rank: int,
                     world: int) -> None:
            tt.nn.Module.__init__(self)
            self.group, self.input_is_parallel, self.sequence_parallel = group, True, True
            self.out_features = weight.shape[0]
            self.in_features_per_partition = weight.shape[1] // world
            self.weight = cut(weight, 1, rank, world)
            self.bias = tt.nn.Parameter(tt.tensor(np.array(bias)))

        def _partial_product(self, x: Any) -> Any:
            return linear(x, self.weight)

    return Column, Row


@probe
def sequence_parallel_layers(tt: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """Megatron's sequence-parallel MLP block with the submission's ColumnParallelLinear and
    RowParallelLinear (``sequence_parallel=True``; task 7.3's parts are the probes' own, see
    ``_sequence_parallel_layers``), on ``spec["world"]`` ranks cut into the tensor-parallel
    groups ``spec["groups"]`` (lists of ranks, made with new_group on every rank). Group g
    gets the whole x = spec["x"][g]; each of its ranks

        x_r = scatter_to_sequence_parallel_region(x, group)       (its part of the sequence)
        out_r = x_r + row(tanh(column(LayerNorm(x_r))))

    then out_r.backward(its part of spec["grad_output"][g]) and
    allreduce_sequence_parallel_grads([ln.weight, ln.bias, row.bias], group). Marks
    "forward", "backward", "sync", "done"."""
    dist = tt.distributed
    sp = dist.sequence_parallel
    column_cls, row_cls = _sequence_parallel_layers(tt)
    groups = [list(g) for g in spec["groups"]]

    def rank_main(rank: int) -> dict[str, Any]:
        made = [dist.new_group(g) for g in groups]
        index = next(i for i, g in enumerate(groups) if rank in g)
        group, members = made[index], groups[index]
        place, size = members.index(rank), len(members)
        x_full = spec["x"][index]
        ln = _build(tt, lambda: tt.nn.LayerNorm(x_full.shape[-1]))
        _load(ln, spec["ln"])
        column = column_cls(spec["fc1_weight"], spec["fc1_bias"], group, place, size)
        row = row_cls(spec["fc2_weight"], spec["fc2_bias"], group, place, size)
        x = tt.tensor(x_full).requires_grad_(True)
        mark("forward")
        part = sp.scatter_to_sequence_parallel_region(x, group)
        out = part + row(tt.tanh(column(ln(part))))
        mark("backward")
        out.backward(tt.tensor(np.split(spec["grad_output"][index], size, axis=1)[place]))
        mark("sync")
        sp.allreduce_sequence_parallel_grads([ln.weight, ln.bias, row.bias], group)
        mark("done")
        return {"output": array(out), "input_grad": grad(x), "ln_weight_grad": grad(ln.weight),
                "ln_bias_grad": grad(ln.bias), "fc1_weight_grad": grad(column.weight),
                "fc1_bias_grad": grad(column.bias), "fc2_weight_grad": grad(row.weight),
                "fc2_bias_grad": grad(row.bias)}

    results, trace = run_world(tt, spec["world"], rank_main, processes=spec.get("processes", False))
    return {"ranks": results, "trace": trace}
