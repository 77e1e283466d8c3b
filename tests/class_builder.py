"""Generated classes of submissions for the class-grading tests and benchmark.

A class is a folder with one entry per student, as an instructor gets it: folders, zips,
and a few broken ones. Its students are the reference, the template, known-wrong variants
(``tests/mutants``), a submission that hangs, one that crashes its worker, one that fills
its memory, and two near-copies of one another: student ``copy-a`` wrote several parts
its own way (the correct alternatives of ``tests/mutants``) and ``copy-b`` copied them,
adding comments and blank lines. Everyone else's code is the reference's, which the class
shares and the similarity check therefore ignores, so the two copies are the only pair with
code in common that nobody else has.
"""

from __future__ import annotations

import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path

from .mutants import Mutant, all_alternatives, all_mutants

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "reference" / "tinytrain"
TEMPLATE = ROOT / "student_template" / "tinytrain"

# where Function.apply records the graph once an input requires grad (task 1.1): every
# assignment goes through it, so these break every graded task
_APPLY = ("autograd/function.py", "    edges, meta = [], []\n")
HANG = "    while True:\n        pass\n"
CRASH = "    import os\n    os._exit(3)\n"
MEMORY = "    _hog = []\n    while True:\n        _hog.append(bytearray(2**26))\n"

COPIED = ("saved-names-by-dict", "copyslices-with-np-put", "scaler-float32-update",
          "named-members-by-id", "autocast-promote-as-a-set", "random-split-numpy")


@dataclass(frozen=True)
class Student:
    name: str  # the entry's name in the class (a zip's without .zip)
    kind: str  # reference, template, mutant, hang, crash, memory, copy, empty, broken
    task: str | None = None  # the task a mutant breaks
    zipped: bool = False


def _edit(package: Path, file: str, find: str, replace: str) -> None:
    path = package / file
    text = path.read_text()
    if text.count(find) != 1:
        raise ValueError(f"{file}: snippet found {text.count(find)} times")
    path.write_text(text.replace(find, replace))


def _copy_reference(folder: Path) -> Path:
    package = folder / "tinytrain"
    shutil.copytree(REFERENCE, package, ignore=shutil.ignore_patterns("__pycache__"))
    return package


def _alternatives() -> list[Mutant]:
    by_id = {a.id: a for a in all_alternatives()}
    return [by_id[i] for i in COPIED]


def make_student(folder: Path, student: Student) -> None:
    """Write one student's submission into ``folder`` (which must not exist)."""
    folder.mkdir(parents=True)
    if student.kind == "reference":
        _copy_reference(folder)
    elif student.kind == "template":
        shutil.copytree(TEMPLATE, folder / "tinytrain", ignore=shutil.ignore_patterns("__pycache__"))
    elif student.kind == "mutant":
        mutant = next(m for m in all_mutants() if m.id == student.name.removeprefix("m-"))
        mutant.apply(folder)
    elif student.kind in ("hang", "crash", "memory"):
        package = _copy_reference(folder)
        body = {"hang": HANG, "crash": CRASH, "memory": MEMORY}[student.kind]
        _edit(package, _APPLY[0], _APPLY[1], body + _APPLY[1])
    elif student.kind == "copy":
        package = _copy_reference(folder)
        for alt in _alternatives():
            replace = alt.replace
            if student.name == "copy-b":  # the copy: same code, its own comments and spacing
                indent = replace[: len(replace) - len(replace.lstrip())]
                replace = f"{indent}# worked this out at office hours\n\n{replace}\n"
            _edit(package, alt.file, alt.find, replace)
    elif student.kind == "empty":
        (folder / "README.md").write_text("I could not get it to work.\n")
    else:
        raise ValueError(student.kind)


def zip_folder(folder: Path, target: Path) -> None:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, str(Path(folder.name) / path.relative_to(folder)))


def small_class() -> list[Student]:
    """Ten entries for the project's tests (graded on task 1.1)."""
    return [
        Student("reference", "reference"),
        Student("template", "template"),
        Student("m-records-without-requires-grad", "mutant", "1.1"),
        Student("hang", "hang"),
        Student("crash", "crash"),
        Student("memory", "memory"),
        Student("copy-a", "copy"),
        Student("copy-b", "copy", zipped=True),
        Student("no-package", "empty"),
        Student("broken", "broken", zipped=True),
    ]


def full_class(size: int = 30) -> list[Student]:
    """``size`` students (at least 12): the small class's kinds, then one known-wrong
    variant per task in rubric order, as many as fit."""
    fixed = [s for s in small_class() if s.kind != "mutant"]
    seen, mutants = set(), []
    for mutant in all_mutants():
        if mutant.task not in seen:
            seen.add(mutant.task)
            mutants.append(Student(f"m-{mutant.id}", "mutant", mutant.task,
                                   zipped=len(mutants) % 4 == 1))
    room = size - len(fixed)
    if room < 1:
        raise ValueError(f"a full class has at least {len(fixed) + 1} students")
    return fixed + mutants[:room]


def build(folder: Path, students: list[Student]) -> Path:
    """Write the class into ``folder`` (created) and return it."""
    folder.mkdir(parents=True)
    for student in students:
        if student.kind == "broken":
            (folder / f"{student.name}.zip").write_bytes(b"PK\x03\x04 this is not a zip file")
            continue
        if student.zipped:
            staging = folder.parent / f".{folder.name}-staging" / student.name
            make_student(staging, student)
            zip_folder(staging, folder / f"{student.name}.zip")
            shutil.rmtree(staging.parent)
        else:
            make_student(folder / student.name, student)
    return folder
