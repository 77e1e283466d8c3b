"""Nested grad-mode scripts: contexts inside contexts, plain set_grad_enabled calls."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

_CONTEXTS = st.sampled_from([
    ("no_grad", None), ("enable_grad", None), ("set_grad_enabled", True),
    ("set_grad_enabled", False), ("inference_mode", True), ("inference_mode", False),
])


def _steps(children: Any) -> Any:
    context = st.tuples(_CONTEXTS, children).map(lambda t: [t[0][0], t[0][1], t[1]])
    return st.lists(st.one_of(st.just(["check"]), context), min_size=1, max_size=4)


def scripts() -> Any:
    """A list of steps: ["check"], ["call_set", bool] or [context, arg, [steps...]]."""
    body = st.recursive(_steps(st.just([["check"]])), _steps, max_leaves=8)
    call_set = st.lists(st.booleans().map(lambda b: ["call_set", b]), max_size=1)
    return st.tuples(call_set, body).map(lambda t: t[0] + [["check"]] + t[1] + [["check"]])


def _inside(outer: list[Any], inner: list[Any]) -> list[Any]:
    """check; with outer: (with inner: check); check; then a check after both."""
    return [["check"], [*outer, [[*inner, [["check"]]], ["check"]]], ["check"]]


# Scripts every grading runs whatever the seed: each mode entered while another has
# already switched recording off, where "restore the previous mode" and "switch it back
# on" differ.
KEY_SCRIPTS = [
    _inside(["no_grad", None], ["no_grad", None]),
    _inside(["set_grad_enabled", False], ["set_grad_enabled", False]),
    _inside(["no_grad", None], ["enable_grad", None]),
    _inside(["inference_mode", True], ["inference_mode", False]),
    _inside(["no_grad", None], ["inference_mode", True]),
]


def describe(script: list[Any], indent: int = 0) -> str:
    """The script as the Python it stands for."""
    lines = []
    pad = "    " * indent
    for step in script:
        if step[0] == "check":
            lines.append(f"{pad}check()")
        elif step[0] == "call_set":
            lines.append(f"{pad}tt.set_grad_enabled({step[1]})")
        else:
            arg = "" if step[1] is None else str(step[1])
            lines.append(f"{pad}with tt.{step[0]}({arg}):")
            lines.append(describe(step[2], indent + 1))
    return "\n".join(lines)
