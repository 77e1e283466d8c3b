"""What honest code and pastes share with the grader's own modules (the known sources of
``tinytrain-grade-class``'s similarity check), to set ``similarity.KNOWN_MIN``.

    python benchmarks/bench_known_sources.py             # the reference, the alternatives,
                                                         # the engines of tests/classgrade/class_builder

Subjects: the reference; every correct alternative of ``tests/mutants`` (ALTERNATIVES);
the task 1.2 engines of ``tests/classgrade/class_builder.ENGINES`` (the probes' ``run_backward``
pasted and renamed, two written without it); and the paste fitted into the template's
three functions (``_count_dependencies``, ``_add_to_buffer``, ``run_backward``). Each is
compared, as a submission's solution regions, with every grader source: as the check
does (without the code the grader's modules share with the reference) and in full.
Prints, per subject, the grader module it shares the most with and how many tokens; then
what the reference shares with every module of the installed grader package in full (why
the check's sources are graders/probes and graders/oracle: the modules that share more
than a k-gram or two with it).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graders.classgrade import similarity  # noqa: E402
from tests.classgrade.class_builder import ENGINES, Student, make_student  # noqa: E402
from tests.mutants import all_alternatives  # noqa: E402

TEMPLATE = ROOT / "student_template" / "tinytrain"

# the probes' engine split over the template's helpers (what a student fitting the paste
# into the given structure writes): the reference's own structure, the probes' bodies
FITTED = '''def run_backward(roots, retain_graph):
    indegree = _count_dependencies([fn for (fn, _), _ in roots])
    pending = {}
    for (fn, idx), g in roots:
        if fn is not None:
            _add_to_buffer(pending, fn, idx, g)
    queue = [fn for fn in pending if indegree.get(fn, 0) == 0]
    while queue:
        fn = queue.pop()
        gs = pending.pop(fn)
        if fn._has_tensor_hooks():
            gs = fn._run_tensor_hooks(gs)
        if any(x is not None for x in gs):
            outs = fn._run_backward(gs)
        else:
            outs = (None,) * len(fn.next_functions)
        if not retain_graph:
            fn._release()
        for (child, idx), g in zip(fn.next_functions, outs, strict=False):
            if child is None:
                continue
            _add_to_buffer(pending, child, idx, g)
            indegree[child] -= 1
            if indegree[child] == 0:
                queue.append(child)


def _count_dependencies(roots):
    indegree = {}
    visited = set()
    todo = [fn for fn in roots if fn is not None]
    while todo:
        fn = todo.pop()
        if fn in visited:
            continue
        visited.add(fn)
        for child, _ in fn.next_functions:
            if child is not None:
                indegree[child] = indegree.get(child, 0) + 1
                todo.append(child)
    return indegree


def _add_to_buffer(pending, fn, idx, g):
    slot = pending.setdefault(fn, [None] * len(fn._output_meta))
    if g is not None:
        slot[idx] = g if slot[idx] is None else slot[idx] + g
'''


def subjects(base: Path) -> dict[str, Path]:
    """Each subject's solution regions, written under ``base``."""
    folders: dict[str, Path] = {}
    make_student(base / "reference", Student("reference", "reference"))
    folders["reference"] = base / "reference"
    for alt in all_alternatives():
        alt.apply(base / f"alt-{alt.id}")
        folders[f"alt-{alt.id}"] = base / f"alt-{alt.id}"
    for name in ENGINES:
        make_student(base / name, Student(name, "engine"))
        folders[name] = base / name
    make_student(base / "paste-fitted", Student("reference", "reference"))
    engine = base / "paste-fitted" / "tinytrain" / "autograd" / "engine.py"
    text = engine.read_text()
    engine.write_text(text[: text.index("def run_backward(")] + FITTED)
    folders["paste-fitted"] = base / "paste-fitted"
    documents = {}
    for name, folder in folders.items():
        documents[name] = base / f"{name}.regions.py"
        documents[name].write_text(similarity.solution_regions(folder, TEMPLATE))
    return documents


def best(pairs: list[similarity.Pair]) -> dict[str, similarity.Pair]:
    top: dict[str, similarity.Pair] = {}
    for p in pairs:
        if p.known and (p.a not in top or p.shared_tokens > top[p.a].shared_tokens):
            top[p.a] = p
    return top


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        documents = subjects(Path(tmp))
        sources = similarity.grader_sources()
        start = time.monotonic()
        checked, info = similarity.compare(documents, TEMPLATE, len(documents),
                                           snippets_for=0, graders=sources,
                                           reference=similarity.REFERENCE)
        seconds = time.monotonic() - start
        full, _ = similarity.compare(documents, TEMPLATE, len(documents), snippets_for=0,
                                     known=sources)
        package = {f"grader:{q.relative_to(ROOT).as_posix()}": q
                   for q in sorted((ROOT / "graders").rglob("*.py"))}
        every, _ = similarity.compare({"reference": documents["reference"]}, TEMPLATE, 1,
                                      snippets_for=0, known=package)
    top, top_full = best(checked), best(full)
    print(f"{len(sources)} grader sources, {len(documents)} subjects, "
          f"{info['reference_kgrams']} reference k-grams left out; the check took {seconds:.1f} s")
    print(f"{'subject':44s} {'as checked':>10s}  {'in full':>7s}  module (as checked)")
    for name in documents:
        p, q = top.get(name), top_full.get(name)
        print(f"{name:44s} {p.shared_tokens if p else 0:10d}  {q.shared_tokens if q else 0:7d}  "
              f"{p.b.removeprefix('grader:graders/') if p else '-'}"
              f"{'  FLAGGED' if p and p.flagged else ''}")
    print(f"\nthe reference's regions against all {len(package)} modules of the grader, in full:")
    parts = tuple(f"grader:graders/{part}/" for part in similarity.GRADER_PARTS)
    for p in sorted(every, key=lambda p: -p.shared_tokens):
        if p.shared_tokens > 2 * similarity.NOISE:
            print(f"  {p.shared_tokens:5d}  {p.b.removeprefix('grader:')}")
    rest = [p.shared_tokens for p in every if not p.b.startswith(parts)]
    print(f"  the most with a module outside {', '.join(similarity.GRADER_PARTS)}: "
          f"{max(rest, default=0)} tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())
