"""The class report's similarity section: the shared code marked at whole tokens, and a
copy among three shown as one cluster (tests without grading: copydetect on texts)."""

from __future__ import annotations

import re
import textwrap
from html import unescape
from pathlib import Path

from graders.classgrade import report, similarity

SHARED = textwrap.dedent('''
    def run_backward(roots, retain_graph):
        pending = {}
        order = []
        while roots:
            node, grad = roots.pop()
            if node in pending:
                pending[node] = pending[node] + grad
                continue
            pending[node] = grad
            order.append(node)
            for child, index in node.next_functions:
                if child is not None:
                    roots.append((child, grad * index))
        for node in reversed(order):
            node.release(retain_graph)
        return order
''')


def _own(seed: int) -> str:
    """Code of a student's own: nobody else's."""
    names = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa"]
    body = "\n".join(f"    {names[(seed + i) % 7]}_{seed}_{i} = {seed * 31 + i} * "
                     f"{names[(seed * 3 + i) % 7]}_{i}(value_{i})"
                     for i in range(12))
    return f"\n\ndef helper_{seed}(value):\n{body}\n    return value\n"


def _compare(tmp_path: Path, texts: dict[str, str]) -> list[similarity.Pair]:
    documents = {}
    for name, text in texts.items():
        documents[name] = tmp_path / f"{name}.py"
        documents[name].write_text(text)
    pairs, _ = similarity.compare(documents, None, common_max=10)
    return pairs


def test_shared_code_is_marked_at_whole_tokens(tmp_path):
    texts = {"ann": _own(1) + SHARED + _own(2),
             "ben": "# my own work\n\n" + _own(3) + SHARED.replace("\n\n", "\n") + _own(4)}
    pairs = _compare(tmp_path, texts)
    top = pairs[0]
    assert {top.a, top.b} == {"ann", "ben"} and top.snippet_a and top.snippet_b
    for snippet in (top.snippet_a, top.snippet_b):
        marked = [unescape(m) for m in re.findall(r"<mark>(.*?)</mark>", snippet, re.S)]
        assert marked
        # no mark starts or ends inside a word
        for match in re.finditer(r"(\w?)<mark>(\w?)", snippet):
            assert not (match.group(1) and match.group(2)), snippet[match.start() - 20:match.end() + 20]
        for match in re.finditer(r"(\w?)</mark>(\w?)", snippet):
            assert not (match.group(1) and match.group(2)), snippet[match.start() - 20:match.end() + 20]
        assert "while roots" in "".join(marked)
        # nothing of the helpers' bodies, each student's own
        assert not any(re.search(r"_\d+_\d+ = \d+", m) for m in marked), marked


def test_a_copy_among_three_is_one_cluster(tmp_path):
    texts = {"ann": _own(1) + SHARED, "ben": _own(2) + SHARED, "cat": _own(3) + SHARED,
             "dan": _own(4) + _own(5), "eve": _own(6) + _own(7)}
    pairs = _compare(tmp_path, texts)
    clusters = report.clusters(pairs)
    assert clusters == [["ann", "ben", "cat"]]
    html = report._similarity_section(pairs, {"compared": 5, "common_max": 10})
    assert "ann, ben, cat" in html and "clusters" in html.lower()
