"""The README is the entry page: the three commands (the ones .ci/run runs), at most ~200
lines, and every relative link of it and of docs/ leads to a file that exists."""

from __future__ import annotations

import re

from .conftest import ROOT

README = ROOT / "README.md"
SETUP = 'python -m pip install -e ".[dev]"'
TESTS = "python -m pytest -n auto"
# written by another change (the instructors' guide); linked from the README already
PENDING = {"docs/instructors.md"}


def test_readme_has_the_three_commands_that_ci_runs():
    text = README.read_text()
    blocks = re.findall(r"```\n(.*?)\n```", text, flags=re.S)
    assert SETUP in blocks and TESTS in blocks
    assert any(b.startswith("tinytrain-grade ") for b in blocks)
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert SETUP in ci and TESTS in ci
    assert len(text.splitlines()) <= 200


def test_relative_links_resolve():
    pages = [README, ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue
            path = (page.parent / target).resolve()
            if not path.exists() and path.relative_to(ROOT).as_posix() not in PENDING:
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken
