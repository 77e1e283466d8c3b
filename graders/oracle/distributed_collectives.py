"""The collective table: one declarative entry per collective of ``tt.distributed``
(OpInfo-style). From it come

- the project's checks of both backends (``tests/oracle/test_distributed_collectives.py``):
  each entry draws per-rank inputs, the backend runs the call, and every rank's output
  must equal ``expected`` (NumPy semantics: the oracle needs no torch.distributed);
- the graders' checks of a trace against itself (``check_trace``): the fingerprints the
  framework records for one call on every rank must agree with what the call computes
  (an all-reduce's output sums to the sum of the inputs, a broadcast delivers the
  source's values, a recv gets what was sent), so a trace is tied to real data;
- communication volume (``bytes_sent``): what each rank sends under the ring
  algorithms NCCL uses, to compare strategies (sequence parallelism moves an
  all-reduce's bytes as an all-gather plus a reduce-scatter).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

Inputs = list[np.ndarray]


def _fold(arrays: Inputs, op: str) -> np.ndarray:
    out = np.array(arrays[0], dtype=np.float64, copy=True)
    for a in arrays[1:]:
        out = {"sum": np.add, "avg": np.add, "max": np.maximum, "min": np.minimum,
               "product": np.multiply}[op](out, a)
    return out / len(arrays) if op == "avg" else out


def _all_reduce(inputs: Inputs, kw: dict[str, Any]) -> list[Any]:
    return [_fold(inputs, kw["op"])] * len(inputs)


def _all_gather(inputs: Inputs, kw: dict[str, Any]) -> list[Any]:
    return [np.concatenate([np.ravel(a) for a in inputs])] * len(inputs)


def _reduce_scatter(inputs: Inputs, kw: dict[str, Any]) -> list[Any]:
    w = len(inputs)
    total = _fold([np.asarray(a, np.float64).reshape(w, -1) for a in inputs], kw["op"])
    return [total[r] for r in range(w)]


def _broadcast(inputs: Inputs, kw: dict[str, Any]) -> list[Any]:
    return [np.asarray(inputs[kw["src"]], np.float64)] * len(inputs)


def _barrier(inputs: Inputs, kw: dict[str, Any]) -> list[Any]:
    return [None] * len(inputs)


def _close(a: float, b: float, scale: float) -> bool:
    return abs(a - b) <= 1e-6 * (abs(a) + abs(b) + scale) + 1e-9


def _fp(event: dict[str, Any], key: str) -> tuple[float, float]:
    value = event.get(key)
    if not (isinstance(value, list) and len(value) == 2):
        raise AssertionError(f"trace event {event.get('kind')} #{event.get('seq')}: no "
                             f"fingerprint {key!r}")
    return float(value[0]), float(value[1])


def _same_output(events: list[dict[str, Any]]) -> str | None:
    first = _fp(events[0], "out")
    for e in events[1:]:
        got = _fp(e, "out")
        if not all(_close(a, b, abs(first[1]) ** 0.5) for a, b in zip(got, first)):
            return "the ranks got different results"
    return None


def _reduce_consistent(events: list[dict[str, Any]]) -> str | None:
    op = events[0]["op"]
    if op not in ("sum", "avg"):
        return _same_output(events)
    total_in = sum(_fp(e, "in")[0] for e in events)
    scale = sum(_fp(e, "in")[1] for e in events) ** 0.5
    out = _fp(events[0], "out")[0]
    expected = total_in / len(events) if op == "avg" else total_in
    if not _close(out, expected, scale):
        return f"the output sums to {out:.10g}, the inputs' {op} to {expected:.10g}"
    return _same_output(events)


def _gather_consistent(events: list[dict[str, Any]]) -> str | None:
    total = [sum(_fp(e, "in")[k] for e in events) for k in (0, 1)]
    out = _fp(events[0], "out")
    if not all(_close(a, b, abs(total[1]) ** 0.5) for a, b in zip(out, total)):
        return "the gathered output is not the inputs put together"
    return _same_output(events)


def _scatter_consistent(events: list[dict[str, Any]]) -> str | None:
    op = events[0]["op"]
    if op not in ("sum", "avg"):
        return None
    total_in = sum(_fp(e, "in")[0] for e in events)
    total_out = sum(_fp(e, "out")[0] for e in events)
    expected = total_in / len(events) if op == "avg" else total_in
    scale = sum(_fp(e, "in")[1] for e in events) ** 0.5
    if not _close(total_out, expected, scale):
        return f"the scattered outputs sum to {total_out:.10g}, the inputs' {op} to {expected:.10g}"
    return None


def _broadcast_consistent(events: list[dict[str, Any]]) -> str | None:
    src = [e for e in events if e.get("in") is not None]
    if len(src) != 1:
        return "not exactly one rank sent the broadcast's values"
    sent = _fp(src[0], "in")
    for e in events:
        got = _fp(e, "out")
        if not all(_close(a, b, abs(sent[1]) ** 0.5) for a, b in zip(got, sent)):
            return "a rank did not receive the source's values"
    return None


def _same_shape(rng: np.random.Generator, world: int, dtype: np.dtype) -> Inputs:
    shape = tuple(rng.integers(1, 4, rng.integers(0, 3)))
    return [_values(rng, shape, dtype) for _ in range(world)]


def _chunked(rng: np.random.Generator, world: int, dtype: np.dtype) -> Inputs:
    """Inputs of world chunks along dim 0 (for reduce-scatter)."""
    shape = (world * int(rng.integers(1, 3)), *rng.integers(1, 4, rng.integers(0, 2)))
    return [_values(rng, shape, dtype) for _ in range(world)]


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-5, 6, shape).astype(dtype)
    return rng.uniform(-2, 2, shape).astype(dtype)


@dataclass(frozen=True)
class CollectiveInfo:
    """One collective: its name in the trace, how tinytrain is called (the first
    spelling takes and returns whole tensors; a second takes lists of tensors), the
    reduce ops it takes, per-rank inputs (``sample(rng, world, dtype)``), what each rank
    gets (``expected(inputs, kwargs)``, one entry per group rank), how one call's
    fingerprints on every rank must agree (``consistent``: None or what is wrong), and the
    bytes each rank sends under the ring algorithm (``bytes_sent(B, w)`` for B the bytes
    of the full tensor in the trace: the all-gather's output, the reduce-scatter's
    input)."""

    name: str
    calls: tuple[str, ...]
    ops: tuple[str | None, ...]
    sample: Callable[[np.random.Generator, int, np.dtype], Inputs]
    expected: Callable[[Inputs, dict[str, Any]], list[Any]]
    consistent: Callable[[list[dict[str, Any]]], str | None]
    bytes_sent: Callable[[int, int], float]


COLLECTIVES = [
    CollectiveInfo("all_reduce", ("tt.distributed.all_reduce",), ("sum", "avg", "max", "min"),
                   _same_shape, _all_reduce, _reduce_consistent,
                   lambda b, w: 2 * (w - 1) / w * b),
    CollectiveInfo("all_gather", ("tt.distributed.all_gather_into_tensor",
                                  "tt.distributed.all_gather"), (None,),
                   _same_shape, _all_gather, _gather_consistent, lambda b, w: (w - 1) / w * b),
    CollectiveInfo("reduce_scatter", ("tt.distributed.reduce_scatter_tensor",
                                      "tt.distributed.reduce_scatter"), ("sum", "avg", "max"),
                   _chunked, _reduce_scatter, _scatter_consistent,
                   lambda b, w: (w - 1) / w * b),
    CollectiveInfo("broadcast", ("tt.distributed.broadcast",), (None,), _same_shape,
                   _broadcast, _broadcast_consistent, lambda b, w: (w - 1) / w * b),
    CollectiveInfo("barrier", ("tt.distributed.barrier",), (None,), _same_shape, _barrier,
                   lambda events: None, lambda b, w: 0.0),
]
BY_NAME = {c.name: c for c in COLLECTIVES}


# ----- reading traces -------------------------------------------------------------------------
EVENT_KEYS = ("index", "kind", "group", "seq", "op", "dtype", "shape", "numel", "bytes",
              "async", "peer", "tag", "in", "out", "end")


def calls(trace: list[dict[str, Any]], kinds: tuple[str, ...] | None = None,
          ) -> list[dict[str, Any]]:
    """The events of one rank that are calls (not marks), optionally of some kinds."""
    return [e for e in trace if e.get("kind") != "mark"
            and (kinds is None or e.get("kind") in kinds)]


def marks(trace: list[dict[str, Any]], label: str) -> list[dict[str, Any]]:
    return [e for e in trace if e.get("kind") == "mark" and e.get("label") == label]


def between(trace: list[dict[str, Any]], start: int, stop: float) -> list[dict[str, Any]]:
    """The events with start <= index < stop."""
    return [e for e in trace if start <= e["index"] < stop]


def check_trace(traces: list[list[dict[str, Any]]]) -> None:
    """Fail unless the ranks' traces are well formed and agree with each other: every
    call has the recorded fields and completed, each collective was called by every rank
    of its group with the same size, its fingerprints agree with the table's entry, and
    every recv got what its send sent."""
    groups: defaultdict[tuple[Any, ...], dict[int, dict[str, Any]]] = defaultdict(dict)
    sends: dict[tuple[Any, ...], dict[str, Any]] = {}
    recvs: dict[tuple[Any, ...], dict[str, Any]] = {}
    for rank, trace in enumerate(traces):
        if not isinstance(trace, list):
            raise AssertionError(f"rank {rank}: the trace is not a list of events")
        for event in calls(trace):
            missing = [k for k in EVENT_KEYS if k not in event]
            if missing:
                raise AssertionError(f"rank {rank}: a trace event lacks {missing}: {event}")
            where = f"rank {rank}: {event['kind']} #{event['seq']} of group {event['group']}"
            if event["end"] is None:
                raise AssertionError(f"{where} never completed (wait() was not called)")
            if event["kind"] == "send":
                sends[(rank, event["peer"], event["tag"], event["seq"])] = event
            elif event["kind"] == "recv":
                recvs[(event["peer"], rank, event["tag"], event["seq"])] = event
            elif event["kind"] in BY_NAME:
                groups[(tuple(event["group"]), event["seq"])][rank] = event
            else:
                raise AssertionError(f"rank {rank}: unknown trace event kind {event['kind']!r}")
    for (group, seq), by_rank in groups.items():
        if sorted(by_rank) != sorted(group):
            raise AssertionError(f"{next(iter(by_rank.values()))['kind']} #{seq} of group "
                                 f"{list(group)} was called by ranks {sorted(by_rank)} only")
        events = [by_rank[r] for r in group]
        kinds = {(e["kind"], e["numel"], e["op"]) for e in events}
        if len(kinds) != 1:
            raise AssertionError(f"call #{seq} of group {list(group)} differs between ranks: "
                                 f"{sorted(kinds, key=str)}")
        problem = BY_NAME[events[0]["kind"]].consistent(events)
        if problem:
            raise AssertionError(f"{events[0]['kind']} #{seq} of group {list(group)}: the trace "
                                 f"does not match the data: {problem}")
    if set(sends) != set(recvs):
        unmatched = sorted(set(sends) ^ set(recvs), key=str)[:4]
        raise AssertionError(f"sends and recvs do not pair up (src, dst, tag, seq): {unmatched}")
    for key, sent in sends.items():
        got = _fp(recvs[key], "out")
        if not all(_close(a, b, abs(_fp(sent, 'in')[1]) ** 0.5)
                   for a, b in zip(got, _fp(sent, "in"))):
            raise AssertionError(f"recv {key} did not get what was sent")


def bytes_sent(trace: list[dict[str, Any]]) -> float:
    """What one rank sent, summed over its calls (ring algorithms)."""
    total = 0.0
    for e in calls(trace):
        if e["kind"] == "send":
            total += e["bytes"]
        elif e["kind"] in BY_NAME:
            total += BY_NAME[e["kind"]].bytes_sent(e["bytes"], len(e["group"]))
    return total
