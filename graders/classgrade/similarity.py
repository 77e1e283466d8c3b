"""Similarity between submissions, MOSS-style, with copydetect (winnowing over normalised
tokens: names become V, strings S, comments and whitespace vanish).

What is compared: each submission's *solution regions*, the lines of its ``tinytrain/``
files that differ from the student template (what the student wrote). Two things count as
boilerplate and never make two submissions alike: fingerprints of the template itself
(copydetect's boilerplate), and fingerprints found in more than ``common_max``
submissions (MOSS's ``-m``: a passage most of the class shares, such as an idiom from the
lectures, is not evidence of copying between two of them).

Each submission is also compared with *known sources*: the modules of the installed grader
that hold an implementation of a homework region (``grader_sources``: the probes, which
run in the student's worker and carry copies of tasks 1.1, 1.2, 1.4 and 2.1, and the
oracle, which spells out with torch what torch has no function for), and folders an
instructor names (last year's solutions, a solution found online). A grader module is
compared without the code it shares with the reference solution (the copies were made
from it: matching them is matching the reference, which honest code may do); an
instructor's folder is compared in full. Known sources do not count toward a passage
being common, and against a known source a submission's common code does count: copying
one published source is what many students may do at once.

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
# shared tokens from which a match with a known source is listed, whatever its share (a
# paste of one function is a small share of a whole homework). Measured
# (benchmarks/bench_known_sources.py): the reference, its 34 correct alternatives and two
# engines written without the probes share 0 with the grader's modules as compared here,
# and the reference at most 58 (a k-gram or two) with a module that holds no copy of it;
# the probes' run_backward pasted and renamed shares 269
KNOWN_MIN = 6 * NOISE

GRADER = Path(__file__).resolve().parents[1]  # the installed ``graders`` package
# the parts of the grader that compute: every other module draws inputs, calls these
# and compares (measured: none shares more than 33 tokens with the reference's regions)
GRADER_PARTS = ("probes", "oracle")
REFERENCE = Path(__file__).resolve().parents[2] / "reference" / "tinytrain"


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


def grader_sources() -> dict[str, Path]:
    """The installed grader's modules that a student can read and that hold an
    implementation of a homework region, by known-source name (``grader:graders/...``)."""
    found = {}
    for part in GRADER_PARTS:
        for path in sorted((GRADER / part).glob("*.py")):
            found[f"grader:{path.relative_to(GRADER.parent).as_posix()}"] = path
    return found


def known_source_documents(folders: list[Path], template: Path | None,
                           out: Path) -> dict[str, Path]:
    """Each instructor-given folder as a known source (``known:<folder name>``): its
    solution regions (like a submission's: the lines that differ from the template, or
    whole files where the template has none), written under ``out``."""
    documents: dict[str, Path] = {}
    for folder in folders:
        base = name = f"known:{folder.resolve().name}"
        count = 1
        while name in documents:  # two folders of one name
            count += 1
            name = f"{base}-{count}"
        path = out / f"{name.removeprefix('known:')}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(solution_regions(folder, template), encoding="utf-8")
        documents[name] = path
    return documents


@dataclass
class Pair:
    a: str
    b: str  # another submission, or a known source (``known``)
    similarity_a: float  # share of a's compared code also found in b
    similarity_b: float
    shared_tokens: int
    snippet_a: str = ""  # HTML: a's regions with the shared code marked (truncated)
    snippet_b: str = ""
    known: bool = False  # b is a known source

    @property
    def similarity(self) -> float:
        return max(self.similarity_a, self.similarity_b)

    @property
    def flagged(self) -> bool:
        """Worth reading: between submissions, a large share of one of them and more than
        a few lines; with a known source, more code than honest code shares with one."""
        if self.known:
            return self.shared_tokens >= KNOWN_MIN
        return self.similarity >= DISPLAY and self.shared_tokens >= MIN_SHARED


def compare(documents: dict[str, Path], template: Path | None, common_max: int,
            snippets_for: int = 10, known: dict[str, Path] | None = None,
            graders: dict[str, Path] | None = None,
            reference: Path | None = None) -> tuple[list[Pair], dict[str, Any]]:
    """Every pair of documents that shares code, and every document's match with a known
    source (``known``: compared in full; ``graders``: without the code they share with
    the ``reference`` package), most shared code first, and what was done. Runs copydetect
    in a child process with a fixed hash seed."""
    request = {"documents": {k: str(v) for k, v in documents.items()},
               "template": str(template) if template else None,
               "common_max": common_max, "snippets_for": snippets_for,
               "known": {k: str(v) for k, v in (known or {}).items()},
               "graders": {k: str(v) for k, v in (graders or {}).items()},
               "reference": str(reference) if reference else None}
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
    from copydetect.utils import filter_code, hashed_kgrams, highlight_overlap

    window = GUARANTEE - NOISE + 1

    lexed: dict[str, tuple[str, Any]] = {}

    def fingerprint(text: str, boilerplate: Any, cache: bool = False) -> CodeFingerprint:
        """copydetect's fingerprint of ``text``, tokenised once per run (``cache``: a text
        that recurs run after run, the template's, a grader module's: once per machine)."""
        if text not in lexed:
            lexed[text] = _tokenised(text) if cache else filter_code(text, "solution.py",
                                                                     "python")
        filtered, offsets = lexed[text]
        fp = CodeFingerprint("solution.py", NOISE, window, boilerplate=boilerplate,
                             filter=False, fp=io.StringIO(filtered))
        fp.raw_code, fp.offsets = text, offsets
        return fp

    template_hashes: list[int] = []
    template_root = Path(request["template"]) if request["template"] else None
    if template_root is not None:
        for path in iter_files(template_root):
            if path.suffix == ".py":
                template_hashes.extend(fingerprint(path.read_text(encoding="utf-8"), None,
                                                   cache=True).hashes)
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
            pairs.extend(_overlap(compare_files, a, prints[a], b, prints[b], False))

    # known sources: the template is boilerplate; a grader module also loses every k-gram
    # of the reference's regions (all of them, not only the winnowed ones, so that no
    # window of the reference's code survives at the edge of a shared passage)
    reference_set = np.array([], dtype=np.int64)
    if request.get("graders") and request.get("reference") and Path(request["reference"]).is_dir():
        regions = solution_regions(Path(request["reference"]), template_root)
        filtered, _ = _tokenised(regions)
        reference_set = np.unique(np.array(hashed_kgrams(filtered, NOISE), dtype=np.int64))
    sources = {}
    for group, extra in (("known", None), ("graders", reference_set)):
        for source, path in sorted(request.get(group, {}).items()):
            bp = template_set if extra is None else np.union1d(template_set, extra)
            text = Path(path).read_text(encoding="utf-8", errors="replace")
            if text.strip():
                sources[source] = fingerprint(text, bp, cache=group == "graders")
    # against a known source a submission's common code counts: many students copying
    # one published source is still copying
    for name in names:
        for source, fp in sources.items():
            pairs.extend(_overlap(compare_files, name, first[name], source, fp, True))

    # most shared code first, as MOSS orders by lines matched: a share alone would rank a
    # submission with little code of its own above two that share a lot
    pairs.sort(key=lambda p: (-p["shared_tokens"], -max(p["similarity_a"], p["similarity_b"]),
                              p["a"], p["b"]))
    raw = {**{n: fp.raw_code for n, fp in first.items()},
           **{n: fp.raw_code for n, fp in sources.items()}}
    ranks = {False: 0, True: 0}
    for pair in pairs:
        slices = pair.pop("_slices")
        if ranks[pair["known"]] < request["snippets_for"]:
            ranks[pair["known"]] += 1
            fps = ((first[pair["a"]], sources[pair["b"]]) if pair["known"]
                   else (prints[pair["a"]], prints[pair["b"]]))
            exact = exact_slices(*fps)
            for side, name, cut, fixed in (("snippet_a", pair["a"], slices[0], exact[0]),
                                           ("snippet_b", pair["b"], slices[1], exact[1])):
                html, _ = highlight_overlap(raw[name], cut if fixed is None else fixed,
                                            "<mark>", "</mark>", truncate=3, escape_html=True)
                pair[side] = html
    info = {"compared": len(prints), "empty": sorted(set(texts) - set(prints)),
            "common_max": common_max, "common_fingerprints": len(common),
            "template_fingerprints": len(template_set), "noise": NOISE,
            "guarantee": GUARANTEE, "known_sources": sorted(request.get("known", {})),
            "grader_sources": sorted(request.get("graders", {})),
            "reference_kgrams": len(reference_set), "known_min": KNOWN_MIN}
    return {"pairs": pairs, "info": info}


def raw_spans(code: str) -> tuple[str, Any, Any] | None:
    """copydetect's normalised text of ``code`` (``filter_code``'s rules) with, for each of
    its characters, the start and end in ``code`` of the whole token it came from; None
    when the text it gives is not copydetect's. copydetect maps matches back to the code
    through offsets that drift (a match would mark "whi" of ``while``); this map marks
    whole tokens at their places."""
    import numpy as np
    from copydetect.utils import filter_code
    from pygments import lexers, token

    lexer = lexers.get_lexer_by_name("python")
    variable = {token.Name, token.Name.Variable, token.Name.Attribute}
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for index, kind, value in lexer.get_tokens_unprocessed(code):
        if kind in variable:
            text = "V"
        elif kind in token.Name.Function:
            text = "F"
        elif kind in token.Name.Class:
            text = "O"
        elif kind in (token.Comment.Preproc, token.Comment.Hashbang):
            text = "P"
        elif kind in token.Text or kind in token.Comment:
            text = ""
        elif kind in token.Literal.String:
            text = '"' if value in ("'", '"') else "S"
        else:
            text = value
        out.append(text)
        starts.extend([index] * len(text))
        ends.extend([index + len(value)] * len(text))
    filtered = "".join(out)
    if filtered != filter_code(code, "solution.py", "python")[0]:
        return None
    return filtered, np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64)


def exact_slices(fp_a: Any, fp_b: Any) -> tuple[Any, Any]:
    """The shared code of two fingerprints as slices of their raw code, whole tokens
    (see ``raw_spans``); None for a side whose map cannot be made (copydetect's then)."""
    import numpy as np
    from copydetect.utils import find_fingerprint_overlap, get_copied_slices

    idx_a, idx_b = find_fingerprint_overlap(fp_a.hashes, fp_b.hashes, fp_a.hash_idx,
                                            fp_b.hash_idx)
    found = []
    for fp, idx in ((fp_a, idx_a), (fp_b, idx_b)):
        spans = raw_spans(fp.raw_code)
        cut = get_copied_slices(idx, fp.k)
        if spans is None or spans[0] != fp.filtered_code or cut.shape[1] == 0:
            found.append(None)
            continue
        _, starts, ends = spans
        last = len(starts) - 1
        lo = starts[np.clip(cut[0].astype(np.int64), 0, last)]
        hi = ends[np.clip(cut[1].astype(np.int64) - 1, 0, last)]
        merged: list[list[int]] = []  # whole tokens may make neighbours overlap
        for start, end in sorted(zip(lo.tolist(), hi.tolist(), strict=True)):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        found.append(np.array(merged, dtype=np.int64).T)
    return found[0], found[1]


def _tokenised(text: str) -> tuple[str, Any]:
    """copydetect's normalised text and offsets of ``text`` (``filter_code``, most of the
    check's time), cached under ~/.cache/tinytrain/similarity by content, copydetect's and
    pygments' versions (only the texts that recur run after run come here, so the cache
    stays small); an unwritable cache is skipped."""
    import hashlib

    import copydetect
    import numpy as np
    import pygments
    from copydetect.utils import filter_code

    key = hashlib.sha256(f"{copydetect.__version__}\0{pygments.__version__}\0{text}"
                         .encode("utf-8", "surrogatepass")).hexdigest()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = Path(base) / "tinytrain" / "similarity" / f"{key}.json"
    try:
        cached = json.loads(path.read_text(encoding="utf-8"))
        return cached["filtered"], np.array(cached["offsets"], dtype=np.int64).reshape(-1, 2)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    filtered, offsets = filter_code(text, "solution.py", "python")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps({"filtered": filtered, "offsets": offsets.tolist()}),
                           encoding="utf-8")
        os.replace(partial, path)
    except OSError:
        pass
    return filtered, offsets


def _overlap(compare_files: Any, a: str, fp_a: Any, b: str, fp_b: Any,
             known: bool) -> list[dict[str, Any]]:
    overlap, (sim_a, sim_b), slices = compare_files(fp_a, fp_b)
    if overlap <= 0:
        return []
    return [{"a": a, "b": b, "similarity_a": round(float(sim_a), 4),
             "similarity_b": round(float(sim_b), 4), "shared_tokens": int(overlap),
             "known": known, "_slices": slices}]


def main() -> int:
    request = json.loads(sys.stdin.read())
    json.dump(_compare_here(request), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
