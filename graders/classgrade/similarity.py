"""Similarity between submissions, MOSS-style, with copydetect (winnowing over normalised
tokens: names become V, strings S, comments and whitespace vanish).

What is compared: each submission's *solution regions*, the lines of its ``tinytrain/``
files that differ from the student template (what the student wrote). Two things count as
boilerplate and never make two submissions alike: fingerprints of the template itself
(copydetect's boilerplate), and fingerprints found in more than ``common_max``
submissions (MOSS's ``-m``: a passage most of the class shares, such as an idiom from the
lectures, is not evidence of copying between two of them).

copydetect hashes k-grams with Python's ``hash``, which is salted per process; the
comparison runs in a child process with ``PYTHONHASHSEED=0`` so that a rerun reports the
same figures.
"""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .collect import PACKAGE, iter_files

NOISE = 25  # copydetect's default k: matches shorter than this many normalised chars vanish
GUARANTEE = 30  # copydetect's default: matches this long are always found
DISPLAY = 0.33  # copydetect's default display threshold (share of a submission's code)
MIN_SHARED = 4 * NOISE  # shared tokens below which a pair is listed but not flagged


def default_common_max(count: int) -> int:
    """MOSS's default is 10; a small class would then ignore nothing, so at most a third
    of the class (and at least 2) may share a passage before it counts as common."""
    return max(2, min(10, count // 3))


def solution_regions(root: Path, template: Path | None) -> str:
    """The lines of ``root/tinytrain`` that are not the template's, file by file, each
    run of lines headed by a comment naming its file and lines (comments do not count in
    the comparison)."""
    package = root / PACKAGE if (root / PACKAGE).is_dir() else root
    parts = []
    for path in iter_files(package):
        if path.suffix != ".py":
            continue
        rel = path.relative_to(package)
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        base = template / rel if template is not None else None
        if base is None or not base.is_file():
            if lines:
                parts.append(f"# {rel}: whole file\n" + "\n".join(lines))
            continue
        base_lines = base.read_text(encoding="utf-8").splitlines()
        matcher = difflib.SequenceMatcher(None, base_lines, lines, autojunk=False)
        for op, _, _, j1, j2 in matcher.get_opcodes():
            if op in ("replace", "insert") and any(ln.strip() for ln in lines[j1:j2]):
                parts.append(f"# {rel}: lines {j1 + 1}-{j2}\n" + "\n".join(lines[j1:j2]))
    return "\n".join(parts) + ("\n" if parts else "")


@dataclass
class Pair:
    a: str
    b: str
    similarity_a: float  # share of a's compared code also found in b
    similarity_b: float
    shared_tokens: int
    snippet_a: str = ""  # HTML: a's regions with the shared code marked (truncated)
    snippet_b: str = ""

    @property
    def similarity(self) -> float:
        return max(self.similarity_a, self.similarity_b)

    @property
    def flagged(self) -> bool:
        """Worth reading: a large share of one of them, and more than a few lines."""
        return self.similarity >= DISPLAY and self.shared_tokens >= MIN_SHARED


def compare(documents: dict[str, Path], template: Path | None, common_max: int,
            snippets_for: int = 10) -> tuple[list[Pair], dict[str, Any]]:
    """Every pair of documents that shares code, most similar first, and what was done.
    Runs copydetect in a child process with a fixed hash seed."""
    request = {"documents": {k: str(v) for k, v in documents.items()},
               "template": str(template) if template else None,
               "common_max": common_max, "snippets_for": snippets_for}
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-m", "graders.classgrade.similarity"],
                          input=json.dumps(request), capture_output=True, text=True, env=env,
                          timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"similarity check failed: {proc.stderr.strip()[-2000:]}")
    answer = json.loads(proc.stdout)
    return [Pair(**p) for p in answer["pairs"]], answer["info"]


def _compare_here(request: dict[str, Any]) -> dict[str, Any]:
    import io

    import numpy as np
    from copydetect import CodeFingerprint, compare_files
    from copydetect.utils import highlight_overlap

    window = GUARANTEE - NOISE + 1

    def fingerprint(text: str, boilerplate: Any) -> CodeFingerprint:
        return CodeFingerprint("solution.py", NOISE, window, boilerplate=boilerplate,
                               language="python", fp=io.StringIO(text))

    template_hashes: list[int] = []
    if request["template"]:
        template_root = Path(request["template"])
        for path in iter_files(template_root):
            if path.suffix == ".py":
                template_hashes.extend(fingerprint(path.read_text(encoding="utf-8"), None).hashes)
    template_set = np.unique(np.array(template_hashes, dtype=np.int64))

    texts = {name: Path(path).read_text(encoding="utf-8")
             for name, path in sorted(request["documents"].items())}
    first = {name: fingerprint(text, template_set) for name, text in texts.items() if text.strip()}
    counts: dict[int, int] = {}
    for fp in first.values():
        for h in fp.hashes:
            counts[h] = counts.get(h, 0) + 1
    common_max = int(request["common_max"])
    common = [h for h, n in counts.items() if n > common_max]
    boilerplate = np.unique(np.concatenate([template_set, np.array(common, dtype=np.int64)]))
    prints = {name: fingerprint(texts[name], boilerplate) for name in first}

    names = sorted(prints)
    pairs = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            overlap, (sim_a, sim_b), slices = compare_files(prints[a], prints[b])
            if overlap <= 0:
                continue
            pairs.append({"a": a, "b": b, "similarity_a": round(float(sim_a), 4),
                          "similarity_b": round(float(sim_b), 4),
                          "shared_tokens": int(overlap), "_slices": slices})
    # most shared code first, as MOSS orders by lines matched: a share alone would rank a
    # submission with little code of its own above two that share a lot
    pairs.sort(key=lambda p: (-p["shared_tokens"], -max(p["similarity_a"], p["similarity_b"]),
                              p["a"], p["b"]))
    for rank, pair in enumerate(pairs):
        slices = pair.pop("_slices")
        if rank < request["snippets_for"]:
            for side, name, cut in (("snippet_a", pair["a"], slices[0]),
                                    ("snippet_b", pair["b"], slices[1])):
                html, _ = highlight_overlap(prints[name].raw_code, cut, "<mark>", "</mark>",
                                            truncate=3, escape_html=True)
                pair[side] = html
    info = {"compared": len(prints), "empty": sorted(set(texts) - set(prints)),
            "common_max": common_max, "common_fingerprints": len(common),
            "template_fingerprints": len(template_set), "noise": NOISE,
            "guarantee": GUARANTEE}
    return {"pairs": pairs, "info": info}


def main() -> int:
    request = json.loads(sys.stdin.read())
    json.dump(_compare_here(request), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
