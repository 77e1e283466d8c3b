"""The given files put back: before a submission is graded, every file of the framework
without a homework region is replaced by the grader's own copy
(``graders/given/tinytrain.json``, made by ``graders.authoring.given``), and one
that is missing is restored. Grader side only."""

from __future__ import annotations

import functools
import json
import os
import shutil
from pathlib import Path

MANIFEST = Path(__file__).resolve().parents[1] / "given" / "tinytrain.json"


@functools.cache
def given_files() -> dict[str, str]:
    """{path below the submission folder (``tinytrain/...``): text} of the given files."""
    data = json.loads(MANIFEST.read_text())
    files = data["files"]
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise ValueError(f"{MANIFEST} is malformed")
    return files


def restore(submission: Path) -> list[str]:
    """Write each given file into ``submission`` (a private copy: ``tinytrain/`` inside
    it), never following a symbolic link; returns the ones that differed or were
    missing. Nothing is written when ``tinytrain/`` is absent."""
    package = submission / "tinytrain"
    if not package.is_dir() or package.is_symlink():
        return []
    changed = []
    for rel, text in sorted(given_files().items()):
        target = submission / rel
        data = text.encode()
        shadow = target.with_suffix("")  # a package of the same name is imported first
        if target.name != "__init__.py" and (shadow.is_dir() or shadow.is_symlink()):
            if shadow.is_symlink():
                shadow.unlink()
            else:
                shutil.rmtree(shadow)
            changed.append(f"{shadow.relative_to(submission)}/ (removed: it hid {rel})")
        try:
            with open(target, "rb") as f:  # the copy holds no links (checked before)
                if f.read() == data:
                    continue
        except OSError:
            pass
        parent = target.parent
        for folder in reversed([parent, *parent.parents]):
            if folder == submission or submission not in folder.parents:
                continue
            if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
                raise OSError(f"{folder} is in the way of a given file")
            if not folder.exists():
                folder.mkdir(mode=0o700)
        tmp = target.with_name(f".{target.name}.given")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if target.is_dir() and not target.is_symlink():
            raise OSError(f"{target} is a folder where a given file belongs")
        os.replace(tmp, target)
        changed.append(rel)
    return changed
