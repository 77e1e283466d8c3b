"""The given files of the framework: every file of ``reference/tinytrain`` without a
homework region, the same in the template and in every submission. The grader ships
them (``graders/given/tinytrain.json``) and puts them back over a submission's copies
before grading (``graders.harness.pristine``): only the homework regions are the
student's, so the evidence a verdict rests on (a trace recorder, a collective backend,
the kernel runtime) is never code the student wrote.

    python -m graders.authoring.given            # rewrite graders/given/tinytrain.json
    python -m graders.authoring.given --check    # exit 1 when it is out of date
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .template import BEGIN

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "graders" / "given" / "tinytrain.json"


def given_files(reference: Path) -> dict[str, str]:
    """{path below the package's parent folder: text} of each ``.py`` file of the
    package ``reference`` that holds no solution block."""
    found = {}
    for path in sorted(reference.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        text = path.read_text()
        if not any(BEGIN.match(line) for line in text.splitlines()):
            found[path.relative_to(reference.parent).as_posix()] = text
    return found


def render(reference: Path) -> str:
    return json.dumps({"package": reference.name, "files": given_files(reference)},
                      indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=Path, default=ROOT / "reference" / "tinytrain")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    text = render(args.reference)
    if args.check:
        current = MANIFEST.read_text() if MANIFEST.exists() else ""
        if current != text:
            print(f"{MANIFEST} is out of date: run python -m graders.authoring.given",
                  file=sys.stderr)
            return 1
        return 0
    MANIFEST.write_text(text)
    print(f"wrote {MANIFEST} ({len(json.loads(text)['files'])} given files)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
