"""A hostile submission can replace the probes in its worker and answer anything. An
answer that carries no work must pass no test: every observation is checked for shape and
type before it is compared.

Two kinds of liar: the template answering every probe with one constant (an empty list,
None, ...), and the reference answering with its real observations hollowed out (every
sequence emptied or cut to one element, every mapping emptied). A probe whose answer has
nothing to hollow gets a string instead, so a hollowing liar lies on every call."""

from __future__ import annotations

import shutil

import pytest

from ..conftest import REFERENCE, TEMPLATE
from ..conftest import grade_forked as grade
from ..hostile import HOOK_FILE

# the grader's modules are sealed (no import finds them): a liar reaches the probes the
# worker holds through the garbage collector, which nothing in a process can close
FIND_PROBES = """

def _grader_probes():
    import gc, types
    found = [m for m in gc.get_objects() if isinstance(m, types.ModuleType)
             and getattr(m, "__name__", "") == "graders.probes"]
    if not found:
        raise RuntimeError("LIAR: the grader's probes were not found")
    return found[0]
"""

CONSTANT = FIND_PROBES + """

def _install_liar(answer):
    _probes = _grader_probes()

    _probes.resolve = lambda name: (lambda *args, **kwargs: answer)
    _probes.reset_state = lambda tt: None


_install_liar({answer})
"""

HOLLOW = FIND_PROBES + """

def _install_liar(how):
    _probes = _grader_probes()

    def hollow(x):
        if isinstance(x, dict):
            return {{}} if how == "dicts" else {{k: hollow(v) for k, v in x.items()}}
        if isinstance(x, (list, tuple)):
            if how == "sequences":
                return type(x)()
            if how == "first":
                return type(x)(hollow(v) for v in x[:1]) if len(x) > 1 else type(x)()
            return type(x)(hollow(v) for v in x)
        return x

    real = _probes.resolve

    def resolve(name):
        fn = real(name)

        def liar(*args, **kwargs):
            answer = fn(*args, **kwargs)
            lie = hollow(answer)
            return "a lie" if repr(lie) == repr(answer) else lie

        return liar

    _probes.resolve = resolve


_install_liar({how!r})
"""

CONSTANTS = {"empty-list": "[]", "empty-dict": "{}", "none": "None", "true": "True",
             "zero": "0"}
HOLLOWINGS = ["sequences", "first", "dicts"]
CASES = [("template", name, CONSTANT.format(answer=value)) for name, value in CONSTANTS.items()]
CASES += [("reference", f"hollow-{how}", HOLLOW.format(how=how)) for how in HOLLOWINGS]


@pytest.mark.parametrize(("base", "liar", "code"), CASES, ids=[c[1] for c in CASES])
def test_an_answer_without_the_work_passes_no_test(base, liar, code, tmp_path):
    source = TEMPLATE if base == "template" else REFERENCE
    submission = tmp_path / "liar"
    shutil.copytree(source / "tinytrain", submission / "tinytrain",
                    ignore=shutil.ignore_patterns("__pycache__"))
    hook = submission / "tinytrain" / HOOK_FILE  # run by import tinytrain
    hook.write_text(hook.read_text() + code)
    score = grade(submission, tmp_path / "out", "--no-shrink")
    assert score["_exit"] == 0, score["_stderr"]
    passed = [f"{t['id']} {x['name']}" for t in score["tasks"] for x in t["tests"]
              if x["status"] == "passed"]
    assert not passed, f"the liar {liar} passed {len(passed)} tests: {passed}"
    assert score["score"] == 0
    # the liar was in place: the submission imported (a liar that cannot even install
    # itself proves nothing)
    unimported = [x["message"] for t in score["tasks"] for x in t["tests"]
                  if "could not be imported" in x["message"]]
    assert not unimported, unimported[:1]
