"""Known-wrong variants of the reference, each of which its task's graders must catch.

Every assignment has a module here (``hw1.py`` ...) with a list ``MUTANTS``; a mutant
replaces one exact snippet of one reference file. ``tests/suites/test_mutants.py`` grades each
and checks that it loses points in its own task and in no other task of its assignment.
A module may also list ``ALTERNATIVES``: correct code written differently from the
reference (same ``Mutant`` form), which must keep full marks.
"""

from __future__ import annotations

import importlib
import pkgutil
import shutil
from dataclasses import dataclass
from pathlib import Path

REFERENCE = Path(__file__).resolve().parents[2] / "reference" / "tinytrain"


@dataclass(frozen=True)
class Mutant:
    id: str
    task: str  # the task whose tests must catch it
    file: str  # path inside the tinytrain package
    find: str  # exact text of the reference, present exactly once in that file
    replace: str
    why: str  # the mistake it stands for

    @property
    def assignment(self) -> str:
        return self.task.split(".")[0]

    def apply(self, submission: Path) -> None:
        """Make ``submission/tinytrain`` the reference with this mutation applied."""
        target = submission / "tinytrain"
        shutil.copytree(REFERENCE, target, ignore=shutil.ignore_patterns("__pycache__"))
        path = target / self.file
        text = path.read_text()
        count = text.count(self.find)
        if count != 1:
            raise ValueError(f"mutant {self.id}: snippet found {count} times in {self.file}")
        mutated = text.replace(self.find, self.replace)
        if path.suffix == ".py":
            # a mutant stands for a wrong idea, not a syntax error: it must compile
            compile(mutated, str(path), "exec")
        path.write_text(mutated)


def _collect(name: str) -> list[Mutant]:
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        found.extend(getattr(module, name, []))
    return found


def all_mutants() -> list[Mutant]:
    """Every wrong variant."""
    return _collect("MUTANTS")


def all_alternatives() -> list[Mutant]:
    """Every correct-but-different variant."""
    return _collect("ALTERNATIVES")
