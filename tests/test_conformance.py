"""The conformance matrix (``docs/conformance.json``, from ``scripts/conformance.py``) is
current and complete: it names exactly the public API that introspection of the reference
finds now, every gap in it (a parameter no task gives a non-default value, an array
argument no task gives a non-contiguous layout, a solution branch its own task never
takes) has an exemption with a reason in ``scripts/conformance_exemptions.toml``, no
exemption is stale, and ``docs/conformance.md`` is what the generator renders. These read
the committed files; only the last test grades (one small task, instrumented)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REFERENCE, ROOT

_spec = importlib.util.spec_from_file_location("conformance", ROOT / "scripts" / "conformance.py")
assert _spec is not None and _spec.loader is not None
conformance = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conformance)

REGENERATE = "regenerate it: python scripts/conformance.py (see docs/conformance.md)"


@pytest.fixture(scope="module")
def matrix() -> dict:
    return json.loads(conformance.JSON_PATH.read_text())


@pytest.fixture(scope="module")
def exemptions() -> dict[str, dict[str, str]]:
    return conformance.load_exemptions()


def test_matrix_names_exactly_the_public_api_found_now(matrix: dict) -> None:
    api = conformance._api_in_subprocess(twins=False)
    committed = matrix["api"]
    missing = sorted(set(api) - set(committed))
    gone = sorted(set(committed) - set(api))
    assert not missing, f"public callables with no entry in the matrix: {missing}; {REGENERATE}"
    assert not gone, f"entries of the matrix that are no public callable now: {gone}; {REGENERATE}"
    changed = [f"{key}: {[p['name'] for p in entry['parameters']]} now, "
               f"{list(committed[key]['parameters'])} in the matrix"
               for key, entry in api.items()
               if [p["name"] for p in entry["parameters"]] != list(committed[key]["parameters"])]
    assert not changed, f"parameters changed: {changed}; {REGENERATE}"


def test_matrix_covers_every_task_with_full_marks_and_current_branches(matrix: dict) -> None:
    sys.path.insert(0, str(ROOT))
    from graders import rubric

    tasks = {t.id for t in rubric.load().tasks}
    assert set(matrix["coverage"]) == tasks, f"tasks graded in the matrix differ; {REGENERATE}"
    not_full = {t: c for t, c in matrix["coverage"].items() if c["passed"] != c["tests"]}
    assert not not_full, f"the reference lost marks when graded instrumented: {not_full}"
    static = conformance.static_branches()
    stale = {t: (c["total"], static.get(t, 0)) for t, c in matrix["coverage"].items()
             if c["total"] != static.get(t, 0)}
    assert not stale, f"solution blocks changed since the matrix (committed, now): {stale}; {REGENERATE}"


def test_every_gap_has_an_exemption_with_a_reason(matrix: dict, exemptions: dict) -> None:
    found = conformance.gaps(matrix)
    open_gaps = {kind: sorted(items - set(exemptions[kind])) for kind, items in found.items()}
    messages = {"parameter": "parameters no graded test gives a non-default value",
                "layout": "array arguments no graded test gives a non-contiguous layout",
                "branch": "solution branches their own task's tests never take"}
    for kind, items in open_gaps.items():
        assert not items, (f"{messages[kind]} (cover them in the suites or exempt them with a "
                           f"reason in scripts/conformance_exemptions.toml): {items}")
    empty = sorted(item for kind in exemptions.values() for item, why in kind.items() if not why)
    assert not empty, f"exemptions without a reason: {empty}"


def test_no_exemption_is_stale(matrix: dict, exemptions: dict) -> None:
    found = conformance.gaps(matrix)
    stale = {kind: sorted(set(items) - found[kind]) for kind, items in exemptions.items()}
    stale = {kind: items for kind, items in stale.items() if items}
    assert not stale, ("exemptions that name nothing, or something the graded tests now cover "
                       f"(remove them): {stale}")


def test_page_is_what_the_generator_renders(matrix: dict, exemptions: dict) -> None:
    assert conformance.DOC_PATH.read_text() == conformance.render(matrix, exemptions), (
        "docs/conformance.md is not what the generator renders: python scripts/conformance.py "
        "--render")


def test_instrumentation_is_refused_for_a_sandboxed_grading() -> None:
    sys.path.insert(0, str(ROOT))
    from graders import rubric as rubric_module
    from graders.runner.run import run_suites

    rubric = rubric_module.load()
    with pytest.raises(ValueError, match="in-process only"):
        run_suites(REFERENCE, rubric, (rubric.task("1.1"),), sandbox=True,
                   instrument=lambda probe: None)


def test_kernel_sources_are_mapped_to_their_files() -> None:
    """The grader's kernel builds (assignment 6) are counted under the reference's files."""
    sys.path.insert(0, str(ROOT))
    from graders.probes import _cuda_source

    assert conformance.KERNEL_FILES == _cuda_source._FILES + "/"


def test_layouts_are_told_apart() -> None:
    import numpy as np

    base = np.zeros((4, 6))
    assert conformance.layout(base) == ["contiguous"]
    assert conformance.layout(base.T) == ["transposed"]
    assert conformance.layout(base[:, ::2]) == ["strided"]
    assert conformance.layout(base[1:]) == ["contiguous", "offset"]
    assert conformance.layout(base[1:, 1:]) == ["strided", "offset"]


def test_instrumented_grading_of_one_task_records_calls_and_branches(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "conformance.py"), "--one", "1.1"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
    task = json.loads(out.stdout.splitlines()[-1])
    assert task["tests"] > 0 and task["passed"] == task["tests"], task["failed"]
    assert task["branches"]["total"] == conformance.static_branches()["1.1"]
    assert task["branches"]["taken"] > 0
    tensor = task["calls"]["tinytrain.Tensor"]
    assert "requires_grad" in tensor["nondefault"]
    assert "contiguous" in tensor["arrays"]["data"]["layouts"]
