"""Task 7.3: tensor-parallel layers on 2 and 4 ranks, against the full layer in PyTorch.

Every rank cuts its part from the same full layer (float64). Each rank's output, input
gradient and parameter gradients must be the full layer's, or this rank's part of them
in Megatron's layouts (``graders/oracle/distributed.py``, ``local_part``): a column-
parallel weight's rows, a row-parallel weight's columns (its bias whole), the
attention's query/key/value rows of this rank's heads, the embedding's rows of this
rank's vocabulary range. Tolerance: torch.testing's float64 default (only summation
orders differ). Communication, from the trace: one all-reduce of the activations in
forward and one in backward for an MLP and for an attention block, and what each
layer's definition needs otherwise; the vocabulary-parallel cross entropy all-reduces
three values per token in forward (max, sum of exponentials, target logit), nothing in
backward. The options axis: an MLP and an attention block with ``sequence_parallel=True``
(Megatron's sequence parallelism: each rank holds its part of the sequence of the input
and of the output; the block's column-parallel Linear all-gathers the sequence and its
row-parallel one reduce-scatters its output along the sequence) match the full block
cut along the sequence, with the row-parallel bias's gradient over the rank's positions
(``oracle.sequence_parallel_layer_run``); the layers' sequence-parallel branches are the
probes' own there (task 7.4's code does not run).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from graders.checks import assert_close, assert_conforms, assert_equal
from graders.oracle import distributed as oracle
from graders.oracle import distributed_collectives as table
from graders.oracle import gpt as gpt_oracle
from graders.suites._seed import case_rng
from graders.suites._support import task

BATCH, STEPS = 2, 3
SP_STEPS = 4  # a sequence that 2 and 4 ranks split


@dataclass(frozen=True)
class LayerCase:
    """A layer: its kind, config, options, and the collectives (kind, elements) it issues
    in forward and backward (elements as a function of the config)."""

    name: str
    kind: str
    cfg: dict[str, Any]
    options: dict[str, Any] = field(default_factory=dict)
    forward_calls: tuple[tuple[str, str], ...] = ()
    backward_calls: tuple[tuple[str, str], ...] = ()
    steps: int = STEPS

    @property
    def sequence_parallel(self) -> bool:
        return bool(self.options.get("sequence_parallel"))

    def parts(self) -> dict[str, int | None]:
        """The dim along which rank r of w holds its part of the layer's input (and of
        the input's gradient) and of its output (and of the output's gradient); None:
        the whole."""
        if self.sequence_parallel:
            return {"input": 1, "output": 1}
        column_part = self.kind == "column" and not self.options.get("gather_output")
        row_part = self.kind == "row" and self.options.get("input_is_parallel")
        return {"input": -1 if row_part else None, "output": -1 if column_part else None}


def _part(value: np.ndarray, axis: int | None, world: int, rank: int) -> np.ndarray:
    return value if axis is None else oracle.split(value, world, rank, axis)


GPT_CFG = gpt_oracle.config(n_embd=8, n_head=4, block_size=STEPS)
SP_CFG = gpt_oracle.config(n_embd=8, n_head=4, block_size=SP_STEPS)
# with sequence_parallel: an all-gather of the sequence into the column-parallel layer and
# a reduce-scatter out of the row-parallel one, in forward and (as their conjugates) in
# backward, each of the whole activations
SP_CALLS = (("all_gather", "n_embd"), ("reduce_scatter", "n_embd"))
LAYERS = [
    LayerCase("column", "column", {"in": 6, "out": 8, "bias": True},
              backward_calls=(("all_reduce", "in"),)),
    LayerCase("column-gather-output", "column", {"in": 6, "out": 8, "bias": False},
              {"gather_output": True}, (("all_gather", "out"),), (("all_reduce", "in"),)),
    LayerCase("row", "row", {"in": 8, "out": 6, "bias": True}, {"input_is_parallel": True},
              (("all_reduce", "out"),)),
    LayerCase("row-scatter-input", "row", {"in": 8, "out": 6, "bias": False},
              {"input_is_parallel": False}, (("all_reduce", "out"),), (("all_gather", "in"),)),
    LayerCase("vocab-embedding", "embedding", {"num": 12, "dim": 5},
              forward_calls=(("all_reduce", "dim"),)),
    LayerCase("mlp", "mlp", GPT_CFG, forward_calls=(("all_reduce", "n_embd"),),
              backward_calls=(("all_reduce", "n_embd"),)),
    LayerCase("attention", "attention", GPT_CFG, forward_calls=(("all_reduce", "n_embd"),),
              backward_calls=(("all_reduce", "n_embd"),)),
    LayerCase("mlp-sequence-parallel", "mlp", SP_CFG, {"sequence_parallel": True},
              SP_CALLS, SP_CALLS, steps=SP_STEPS),
    LayerCase("attention-sequence-parallel", "attention", SP_CFG, {"sequence_parallel": True},
              SP_CALLS, SP_CALLS, steps=SP_STEPS),
]
CASES = [pytest.param(case, world, id=f"{case.name}-world{world}")
         for case in LAYERS for world in (2, 4)]


def _weights(case: LayerCase, rng: np.random.Generator) -> dict[str, np.ndarray]:
    shapes = {
        "column": {"weight": (case.cfg.get("out", 0), case.cfg.get("in", 0)),
                   "bias": (case.cfg.get("out", 0),)},
        "row": {"weight": (case.cfg.get("out", 0), case.cfg.get("in", 0)),
                "bias": (case.cfg.get("out", 0),)},
        "embedding": {"weight": (case.cfg.get("num", 0), case.cfg.get("dim", 0))},
    }
    if case.kind in shapes:
        names = shapes[case.kind]
        if case.kind in ("column", "row") and not case.cfg["bias"]:
            names = {"weight": names["weight"]}
        return {n: rng.uniform(-0.5, 0.5, s) for n, s in names.items()}
    make = gpt_oracle.MLP if case.kind == "mlp" else gpt_oracle.CausalSelfAttention
    return gpt_oracle.random_weights(make(case.cfg), int(rng.integers(1 << 30)))


def _width(case: LayerCase) -> tuple[int, int]:
    """(input features, output features) of the full layer."""
    if case.kind in ("column", "row"):
        return case.cfg["in"], case.cfg["out"]
    if case.kind == "embedding":
        return 0, case.cfg["dim"]
    return case.cfg["n_embd"], case.cfg["n_embd"]


def _draw(case: LayerCase, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The full layer's input and output gradient."""
    d_in, d_out = _width(case)
    if case.kind == "embedding":
        x = rng.integers(0, case.cfg["num"], (BATCH, case.steps))
    else:
        x = rng.uniform(-1, 1, (BATCH, case.steps, d_in))
    return x, rng.uniform(-1, 1, (BATCH, case.steps, d_out))


def _expected(case: LayerCase, weights: dict[str, np.ndarray], x: np.ndarray, g: np.ndarray,
              world: int) -> dict[str, Any]:
    """The full layer's run in torch; ``rank_grads[r]``: the parameter gradients rank r
    holds that are not its part of the full layer's (sequence parallelism's row-parallel
    bias)."""
    if case.sequence_parallel:
        return oracle.sequence_parallel_layer_run(case.kind, case.cfg, weights, x, g, world)
    return {**oracle.layer_run(case.kind, case.cfg, weights, x, g),
            "rank_grads": [{} for _ in range(world)]}


def prepare(case: LayerCase, world: int) -> tuple[dict[str, Any], dict[str, Any]]:
    # the weights and inputs come from the grading seed (seed 0: today's values)
    rng = case_rng(world, "7.3", case.name, world)
    weights = _weights(case, rng)
    x, g = _draw(case, rng)
    expected = _expected(case, weights, x, g, world)
    parts = case.parts()
    inputs = [_part(x, parts["input"], world, r) for r in range(world)]
    grads = [_part(g, parts["output"], world, r) for r in range(world)]
    spec = {"world": world, "kind": case.kind, "cfg": case.cfg, "weights": weights,
            "options": case.options, "inputs": inputs, "grad_outputs": grads,
            "local_names": list(weights)}
    return spec, expected


def check_rank(case: LayerCase, result: dict[str, Any], want: dict[str, Any], size: int,
               place: int, label: str, what: str, group_word: str = "") -> None:
    """One rank's output, input gradient and parameter gradients (``place`` of ``size``
    ranks of its group; ``want``: its group's ``_expected``)."""
    parts, n_embd = case.parts(), case.cfg.get("n_embd", 0)
    assert_close(result["output"], _part(want["output"], parts["output"], size, place),
                 what=f"{label}: the output", case=what)
    if case.kind != "embedding":
        assert_close(result["input_grad"],
                     _part(want["input_grad"], parts["input"], size, place),
                     what=f"{label}: the input's gradient", case=what)
    own = want["rank_grads"][place]
    for name, full in want["grads"].items():
        if name in own:
            output = f"{group_word}output" if group_word else "the output"
            assert_close(result["grads"][name], own[name],
                         what=f"{label}: {name}.grad (the gradient of this rank's part of the "
                              f"sequence of {output} only: with sequence_parallel the bias is "
                              "added after the reduce-scatter, on the rank's positions)",
                         case=what)
            continue
        whose = "its part of its group's full layer's" if group_word else \
            "this rank's part of the full layer's"
        assert_close(result["grads"][name],
                     oracle.local_part(case.kind, name, full, size, place, n_embd),
                     what=f"{label}: {name}.grad ({whose} gradient)", case=what)


def describe(case: LayerCase, world: int) -> str:
    classes = {"column": "ColumnParallelLinear", "row": "RowParallelLinear",
               "embedding": "VocabParallelEmbedding", "mlp": "ParallelMLP",
               "attention": "ParallelCausalSelfAttention"}
    options = "".join(f", {k}={v}" for k, v in case.options.items())
    text = (f"{world} ranks, tt.distributed.tensor_parallel.{classes[case.kind]}(<full layer "
            f"{case.cfg}>{options}), input of batch {BATCH}, {case.steps} positions (float64)")
    if case.sequence_parallel:
        text += (" [the options axis: sequence_parallel=True, each rank holding its part of "
                 "the sequence (dim 1) of the input and of the output]")
    return text


def run(submission: Any, spec: dict[str, Any]) -> list[dict[str, Any]]:
    got = submission.call("distributed_tp.layer", spec)
    rank = {"output": None, "input_grad": None, "grads": {n: None for n in spec["local_names"]}}
    assert_conforms(got, {"ranks": [rank] * spec["world"], "trace": [None] * spec["world"]},
                    what="distributed_tp.layer")
    table.check_trace(got["trace"])
    return got


@task("7.3")
@pytest.mark.parametrize(("case", "world"), CASES)
def test_layer_matches_the_full_layer(submission, case, world):
    """Each rank's output, input gradient and parameter gradients: the full layer's, or
    this rank's part of them."""
    spec, expected = prepare(case, world)
    got = run(submission, spec)
    what = describe(case, world)
    for rank, result in enumerate(got["ranks"]):
        check_rank(case, result, expected, world, rank, f"rank {rank}", what)


@task("7.3")
@pytest.mark.parametrize(("case", "world"), CASES)
def test_layer_communicates_as_megatron(submission, case, world):
    """The collectives each rank issues in forward and in backward (kind, elements): one
    all-reduce each way for an MLP or an attention block."""
    spec, _ = prepare(case, world)
    got = run(submission, spec)
    sizes = {"in": _width(case)[0], "out": _width(case)[1], "dim": _width(case)[1],
             "n_embd": _width(case)[1]}
    for rank in range(world):
        trace = got["trace"][rank]
        marks = {m["label"]: m["index"] for m in trace if m["kind"] == "mark"}
        for phase, start, stop, calls in (
                ("forward", marks["forward"], marks["backward"], case.forward_calls),
                ("backward", marks["backward"], marks["done"], case.backward_calls)):
            found = [(e["kind"], e["numel"]) for e in table.calls(table.between(trace, start, stop))]
            assert_equal(found, [(kind, BATCH * case.steps * sizes[dim])
                                 for kind, dim in calls],
                         what=f"rank {rank}: the collectives in {phase} (kind, elements)",
                         case=describe(case, world))


def _ce_case(world: int, offset: float, lead: tuple[int, ...],
             ) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    rng = case_rng(world, "7.3 cross-entropy", world, offset, lead)
    vocab = 4 * world
    logits = rng.uniform(-3, 3, (*lead, vocab)) + offset
    target = rng.integers(0, vocab, lead)
    return logits, target, rng.uniform(0.1, 1, lead)


@task("7.3")
@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("offset", [0.0, 1e4], ids=["plain", "logits-near-1e4"])
@pytest.mark.parametrize("lead", [(7,), (2, 3)], ids=["tokens-7", "batch-2x3"])
def test_vocab_parallel_cross_entropy(submission, world, offset, lead):
    """Per-token losses on every rank and each rank's part of the logits' gradient, as
    F.cross_entropy(reduction='none') on the whole logits (logits near 1e4 too: no
    overflow; logits (tokens, vocab) and (batch, sequence, vocab): the vocabulary is the
    last dim); three all-reduces of one value per token in forward (max, sum, sum),
    none in backward."""
    logits, target, g = _ce_case(world, offset, lead)
    expected = oracle.cross_entropy_run(logits, target, g)
    parts = [oracle.split(logits, world, r, -1) for r in range(world)]
    got = submission.call("distributed_tp.cross_entropy", world, parts, target, g)
    assert_conforms(got, {"ranks": [{"loss": None, "logits_grad": None}] * world,
                          "trace": [None] * world}, what="distributed_tp.cross_entropy")
    table.check_trace(got["trace"])
    vocab = logits.shape[-1]
    what = (f"{world} ranks, vocab_parallel_cross_entropy(this rank's {vocab // world} of "
            f"{vocab} classes, target) for logits of shape {logits.shape}")
    for rank, result in enumerate(got["ranks"]):
        assert_close(result["loss"], expected["loss"], what=f"rank {rank}: the losses", case=what)
        assert_close(result["logits_grad"], oracle.split(expected["logits_grad"], world, rank, -1),
                     what=f"rank {rank}: its part of the logits' gradient", case=what)
        trace = got["trace"][rank]
        marks = {m["label"]: m["index"] for m in trace if m["kind"] == "mark"}
        forward = table.calls(table.between(trace, marks["forward"], marks["backward"]))
        assert_equal(sorted((e["kind"], e["numel"], e["op"]) for e in forward),
                     sorted([("all_reduce", target.size, "max"),
                             ("all_reduce", target.size, "sum"),
                             ("all_reduce", target.size, "sum")]),
                     what=f"rank {rank}: the collectives in forward", case=what)
        assert_equal(table.calls(table.between(trace, marks["backward"], marks["done"])), [],
                     what=f"rank {rank}: the collectives in backward", case=what)


MPI_CASES = [pytest.param(case, world, id=f"{case.name}-world{world}-mpi")
             for case in LAYERS if case.kind in ("column", "row") for world in (2, 4)]


@task("7.3")
@pytest.mark.parametrize(("case", "world"), MPI_CASES)
def test_linear_layers_as_processes_match_the_full_layer(submission, case, world):
    """Column- and row-parallel Linear with the ranks as separate processes (``-mpi``:
    forked by the grader, each with its own memory, the grader's collectives between
    them): each rank's output, input gradient and parameter gradients, the full layer's or
    this rank's part of them."""
    spec, expected = prepare(case, world)
    got = run(submission, {**spec, "processes": True})
    what = describe(case, world) + ", each rank its own process"
    for rank, result in enumerate(got["ranks"]):
        check_rank(case, result, expected, world, rank, f"rank {rank}", what)


BLOCK_CASES = [pytest.param(kind, sequence_parallel, id=f"{kind}-sequence_parallel="
                            f"{sequence_parallel}")
               for kind in ("mlp", "attention") for sequence_parallel in (False, True)]


@task("7.3")
@pytest.mark.parametrize(("kind", "sequence_parallel"), BLOCK_CASES)
def test_block_passes_its_options_to_its_layers(submission, kind, sequence_parallel):
    """The options axis of the parallel blocks: ParallelMLP(mlp, sequence_parallel=...) and
    ParallelCausalSelfAttention(attn, sequence_parallel=...) build a column-parallel and a
    row-parallel Linear, each with the block's sequence_parallel (Megatron's blocks pass it
    to both; the Linear layers keep it as ``sequence_parallel``), for True and for False."""
    world = 2
    case = next(c for c in LAYERS if c.kind == kind)
    spec = {"world": world, "kind": kind, "cfg": case.cfg,
            "weights": _weights(case, case_rng(world, "7.3 block options", kind)),
            "options": {"sequence_parallel": sequence_parallel}}
    got = submission.call("distributed_tp.block_options", spec)
    assert_conforms(got, {"ranks": [{"layers": None}] * world, "trace": [None] * world},
                    what="distributed_tp.block_options")
    block = "ParallelMLP" if kind == "mlp" else "ParallelCausalSelfAttention"
    what = (f"{world} ranks, tt.distributed.tensor_parallel.{block}(<full {kind} "
            f"{case.cfg}>, sequence_parallel={sequence_parallel}) [the options axis: "
            f"sequence_parallel={sequence_parallel}]")
    for rank, result in enumerate(got["ranks"]):
        layers = result["layers"]
        assert isinstance(layers, dict), f"rank {rank}: no layers observed\n  case: {what}"
        kinds = sorted(layer.get("class") for layer in layers.values()
                       if isinstance(layer, dict))
        assert_equal(kinds, ["ColumnParallelLinear", "RowParallelLinear"],
                     what=f"rank {rank}: the tensor-parallel Linear layers inside the block",
                     case=what)
        for name, layer in layers.items():
            assert_equal(layer.get("sequence_parallel"), sequence_parallel,
                         what=f"rank {rank}: {name}.sequence_parallel (the block's "
                              f"sequence_parallel={sequence_parallel} passed on)", case=what)


# the group axis: world 4 cut into two tensor-parallel groups whose ranks are not their
# global ranks (rank 2 is the second of [0, 2], rank 1 the first of [1, 3])
SUB_GROUPS = [[0, 2], [1, 3]]
SUB_GROUP_CASES = [pytest.param(case, id=f"{case.name}-groups{SUB_GROUPS}") for case in LAYERS]


@task("7.3")
@pytest.mark.parametrize("case", SUB_GROUP_CASES)
def test_layer_on_a_sub_group(submission, case):
    """The group axis: every tensor-parallel layer built with group= a sub-group of 4 ranks
    ([0, 2] and [1, 3], each group its own input): each rank's output, input gradient and
    parameter gradients are its group's full layer's, or its part by its rank in the group
    (not its global rank), with the group's collectives only."""
    world, size = 4, len(SUB_GROUPS[0])
    spec, _ = prepare(case, size)
    rng = case_rng(world, "7.3 sub-group", case.name)
    parts = case.parts()
    inputs, grads, expected = [None] * world, [None] * world, []
    for members in SUB_GROUPS:
        x, g = _draw(case, rng)
        expected.append(_expected(case, spec["weights"], x, g, size))
        for place, rank in enumerate(members):
            inputs[rank] = _part(x, parts["input"], size, place)
            grads[rank] = _part(g, parts["output"], size, place)
    spec = {**spec, "world": world, "groups": SUB_GROUPS, "inputs": inputs,
            "grad_outputs": grads}
    got = run(submission, spec)
    what = describe(case, size).replace(f"{size} ranks", f"{world} ranks in the groups "
                                        f"{SUB_GROUPS}, group=<its group>") + \
        " [the group axis: on a sub-group]"
    for index, members in enumerate(SUB_GROUPS):
        for place, rank in enumerate(members):
            check_rank(case, got["ranks"][rank], expected[index], size, place,
                       f"rank {rank} ({place} of group {members})", what,
                       group_word="its group's ")


@task("7.3")
def test_vocab_parallel_cross_entropy_on_a_sub_group(submission):
    """The group axis: vocab_parallel_cross_entropy(logits_r, target, group=) on the
    sub-groups [0, 2] and [1, 3] of 4 ranks, each group its own logits and target: each
    rank's losses are its group's, its part of the logits' gradient by its rank in the
    group (the vocabulary range of rank 2 is the second half, as the second of [0, 2])."""
    world, size = 4, len(SUB_GROUPS[0])
    parts, targets, grads, expected = [None] * world, [], [], []
    for index, members in enumerate(SUB_GROUPS):
        logits, target, g = _ce_case(size, 0.0, (2, 3 + index))
        expected.append(oracle.cross_entropy_run(logits, target, g))
        targets.append(target)
        grads.append(g)
        for place, rank in enumerate(members):
            parts[rank] = oracle.split(logits, size, place, -1)
    got = submission.call("distributed_tp.cross_entropy", world, parts, targets, grads,
                          SUB_GROUPS)
    assert_conforms(got, {"ranks": [{"loss": None, "logits_grad": None}] * world,
                          "trace": [None] * world}, what="distributed_tp.cross_entropy")
    table.check_trace(got["trace"])
    what = (f"{world} ranks in the groups {SUB_GROUPS}, vocab_parallel_cross_entropy(its part "
            "of its group's logits, target, group=<its group>) [the group axis: on a "
            "sub-group]")
    for index, members in enumerate(SUB_GROUPS):
        for place, rank in enumerate(members):
            result = got["ranks"][rank]
            label = f"rank {rank} ({place} of group {members})"
            assert_close(result["loss"], expected[index]["loss"], what=f"{label}: the losses",
                         case=what)
            assert_close(result["logits_grad"],
                         oracle.split(expected[index]["logits_grad"], size, place, -1),
                         what=f"{label}: its part of the logits' gradient", case=what)
