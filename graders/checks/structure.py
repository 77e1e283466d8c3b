"""Structure templates for observations whose shape is not fixed by one expected value.

``assert_conforms`` (compare.py) checks an observation against an expected value of the
same form. Some observations have parts whose length is itself graded later (how many
hook calls, how many batches): for those, a template says what each part must be, so an
empty or hollowed answer still fails before any value is compared, while an honest wrong
length reaches the comparison that explains it.

Template forms, mixed freely with plain expected values (handled by ``assert_conforms``):

- ``ListOf(item, min_len=0, max_len=None)``: a list or tuple of any length in the range,
  each element conforming to ``item``;
- ``Kind(*types)``: a value that is an instance of one of ``types`` (``None`` allowed
  when ``type(None)`` or ``None`` is among them), e.g. ``Kind(None, np.ndarray)``;
- ``Shaped(shape)``: an array of that shape (any dtype);
- a dict: the same keys must be present, each conforming (extra keys are allowed);
- a list or tuple: the same length, element by element;
- anything else: passed to ``assert_conforms`` (so ``None`` accepts anything).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .compare import _kind, assert_conforms


class ListOf:
    """A sequence of any length between ``min_len`` and ``max_len`` whose elements all
    conform to ``item``."""

    def __init__(self, item: Any, min_len: int = 0, max_len: int | None = None) -> None:
        self.item, self.min_len, self.max_len = item, min_len, max_len

    def __repr__(self) -> str:
        bound = f"{self.min_len}.." + ("" if self.max_len is None else str(self.max_len))
        return f"a sequence ({bound} elements)"


class Kind:
    """A value of one of the given Python types (``None`` for None)."""

    def __init__(self, *types: Any) -> None:
        self.types = tuple(type(None) if t is None else t for t in types)

    def __repr__(self) -> str:
        return " or ".join("None" if t is type(None) else t.__name__ for t in self.types)


class Shaped:
    """An array of the given shape, any dtype."""

    def __init__(self, shape: tuple[int, ...] | list[int]) -> None:
        self.shape = tuple(shape)

    def __repr__(self) -> str:
        return f"an array of shape {self.shape}"


def conform(got: Any, template: Any, *, what: str = "the observation") -> None:
    """Fail unless ``got`` has the structure ``template`` describes (see the module
    docstring), before any of its values is compared."""
    _walk(got, template, what)


def _fail(where: str, got: Any, wanted: str) -> None:
    raise AssertionError(f"{where}: malformed answer: got {_kind(got)}, expected {wanted}")


def _instance(value: Any, kind: Any) -> bool:
    """isinstance, with NumPy's scalars counted as Python's and bools not as numbers."""
    is_bool = isinstance(value, (bool, np.bool_))
    if kind is bool:
        return is_bool
    if kind is int:
        return not is_bool and isinstance(value, (int, np.integer))
    if kind is float:
        return not is_bool and isinstance(value, (int, float, np.integer, np.floating))
    return isinstance(value, kind)


def _walk(got: Any, template: Any, where: str) -> None:
    if isinstance(template, ListOf):
        if not isinstance(got, (list, tuple)):
            _fail(where, got, repr(template))
        if len(got) < template.min_len or (template.max_len is not None
                                           and len(got) > template.max_len):
            _fail(where, got, repr(template))
        for i, item in enumerate(got):
            _walk(item, template.item, f"{where}[{i}]")
    elif isinstance(template, Kind):
        if not any(_instance(got, t) for t in template.types):
            _fail(where, got, repr(template))
    elif isinstance(template, Shaped):
        if not isinstance(got, np.ndarray) or got.shape != template.shape:
            _fail(where, got, repr(template))
    elif isinstance(template, dict):
        if not isinstance(got, dict):
            _fail(where, got, _kind(template))
        missing = [k for k in template if k not in got]
        if missing:
            raise AssertionError(f"{where}: malformed answer: keys {missing} are missing")
        for key, value in template.items():
            _walk(got[key], value, f"{where}[{key!r}]")
    elif isinstance(template, (list, tuple)):
        if not isinstance(got, (list, tuple)) or len(got) != len(template):
            _fail(where, got, _kind(template))
        for i, (g, t) in enumerate(zip(got, template, strict=True)):
            _walk(g, t, f"{where}[{i}]")
    else:
        assert_conforms(got, template, what=where)


def loose(expected: Any) -> Any:
    """A template from an expected value that checks its keys and the kind of each value
    (a sequence, an array, a bool, a number, a string) but not the lengths of sequences
    nor the shapes of arrays: for observations whose lengths and shapes the comparison
    that follows checks itself, with a message that explains them."""
    if isinstance(expected, dict):
        return {key: loose(value) for key, value in expected.items()}
    if isinstance(expected, (list, tuple)):
        return ListOf(None)
    if isinstance(expected, np.ndarray):
        return Kind(np.ndarray)
    if isinstance(expected, (bool, np.bool_)):
        return Kind(bool)
    if isinstance(expected, (int, float, np.number)):
        return Kind(float)
    if isinstance(expected, str):
        return Kind(str)
    return None


RAISED = {"type": Kind(None, str), "message": Kind(str)}
"""What ``graders.probes._observe.raised`` returns."""
