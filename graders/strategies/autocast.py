"""Inputs for task 4.2's graders: argument lists for the probe Functions of each autocast
policy, region scripts (nested regions, enabled or not, with calls and state queries),
and the input dtypes of op-table samples under autocast."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

FLOATS = ("float16", "bfloat16", "float32", "float64")
LOW = ("float16", "bfloat16")
POLICIES = ("lower_precision", "fp32", "promote", "none")


@st.composite
def argument_specs(draw: Any) -> list[list[Any]]:
    """One to four arguments: tensors of any floating type or int64 (some requiring
    grad), Python numbers and None; the first is always a tensor."""
    tensor = st.tuples(st.just("tensor"), st.sampled_from([*FLOATS, "int64"]),
                       st.booleans()).map(list)
    other = st.one_of(
        tensor,
        st.sampled_from([2.5, 3, True]).map(lambda v: ["number", v]),
        st.just(["none"]),
    )
    first = draw(tensor)
    if first[1] == "int64":
        first[2] = False
    rest = draw(st.lists(other, max_size=3))
    for spec in rest:
        if spec[0] == "tensor" and spec[1] == "int64":
            spec[2] = False
    return [first, *rest]


def region_spec() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({
        "device": st.sampled_from(["cuda", "cpu"]),
        "enabled": st.booleans(),
    }, optional={"dtype": st.sampled_from(list(LOW))})


@st.composite
def region_scripts(draw: Any) -> list[list[Any]]:
    """Nested autocast regions (enabled or not, float16 or bfloat16 or the current dtype,
    "cuda" or "cpu") with calls of each policy on float32/float16/bfloat16/float64
    inputs and state queries between them; every region is exited (["exit"], or
    ["raise"]: through an exception raised inside it), and a call and a state query
    follow the outermost exit."""
    script: list[list[Any]] = []
    depth = 0
    for _ in range(draw(st.integers(4, 14))):
        choices = ["call", "call", "state", "enter"] + (["exit"] if depth else [])
        if depth == 0:
            choices.append("decorated")
        kind = draw(st.sampled_from(choices))
        if kind == "enter":
            script.append(["enter", draw(region_spec())])
            depth += 1
        elif kind == "exit":
            # left normally, or through an exception raised inside the region
            script.append([draw(st.sampled_from(["exit", "raise"]))])
            depth -= 1
        elif kind == "state":
            script.append(["state"])
        else:
            call = [draw(st.sampled_from(["lower_precision", "fp32", "none"])),
                    draw(st.sampled_from(FLOATS))]
            script.append(["call", *call] if kind == "call" else
                          ["decorated", draw(region_spec()), *call])
    script.extend([["exit"]] * depth)
    script.extend([["call", "lower_precision", "float32"], ["state"]])
    return script


INPUT_MODES = ("float32", "float16", "bfloat16", "float64", "mixed")


def input_dtypes(draw: Any, mode: str, n: int, autocast_dtype: str) -> list[str]:
    """The dtype of each of ``n`` floating point tensors: all ``mode``, or for "mixed"
    each float32 or the autocast dtype, as in a model whose float32 weights meet
    low-precision activations (float16 with bfloat16 is type promotion, task 4.1)."""
    if mode != "mixed":
        return [mode] * n
    return [draw(st.sampled_from(["float32", autocast_dtype])) for _ in range(n)]
