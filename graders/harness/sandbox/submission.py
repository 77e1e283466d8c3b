"""The submission: checked before grading (links, special files, size), copied for
every worker."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from .base import SandboxError

COMPILED_SUFFIXES = (".so", ".pyd", ".dylib")
MAX_SUBMISSION_BYTES = 256 << 20
MAX_SUBMISSION_FILES = 20000


def check_submission(submission: Path) -> str | None:
    """Why ``submission/tinytrain`` cannot be graded as it is, or None: a symbolic link
    anywhere in it (``tinytrain/`` itself included), or something that is neither a file
    nor a folder, or too much of it. A missing ``tinytrain/`` is left to the worker (it
    reports the import error)."""
    package = submission / "tinytrain"
    if not os.path.lexists(package):
        return None
    count = size = 0
    todo = [package]
    while todo:
        path = todo.pop()
        st = os.lstat(path)
        rel = os.path.relpath(path, submission)
        if stat.S_ISLNK(st.st_mode):
            return (f"{rel} is a symbolic link: submissions must hold real files and "
                    "folders only")
        if stat.S_ISDIR(st.st_mode):
            todo.extend(entry.path for entry in os.scandir(path))
        elif not stat.S_ISREG(st.st_mode):
            return f"{rel} is not a regular file or folder"
        elif path.endswith(COMPILED_SUFFIXES):
            # Python imports an extension module before a .py of the same name: compiled
            # code no one can read, in place of a given file
            return (f"{rel} is a compiled extension module: submissions must hold Python "
                    "source only")
        elif st.st_nlink != 1:
            # another name of the same file may be one the worker user must not read
            return (f"{rel} is a hard link (one of {st.st_nlink} names of the same file): "
                    "submissions must hold plain copies of their files")
        count += 1
        size += st.st_size
        if count > MAX_SUBMISSION_FILES or size > MAX_SUBMISSION_BYTES:
            return (f"tinytrain/ is too large (over {MAX_SUBMISSION_FILES} files or "
                    f"{MAX_SUBMISSION_BYTES >> 20} MiB)")
    real = os.path.realpath(package)
    if os.path.dirname(real) != os.path.realpath(submission):
        return "tinytrain/ resolves outside the submission folder"
    return None


def _copy_package(src: Path, dst: Path, owner: tuple[int, int] | None) -> None:
    """Copy a checked ``tinytrain/`` (no links: a link appearing meanwhile is refused)."""
    dst.mkdir(mode=0o700)
    for entry in os.scandir(src):
        if entry.is_symlink():
            raise SandboxError(f"{entry.path} became a symbolic link while grading")
        target = dst / entry.name
        if entry.is_dir(follow_symlinks=False):
            _copy_package(Path(entry.path), target, owner)
        elif entry.is_file(follow_symlinks=False):
            if entry.name.endswith(".pyc"):
                continue
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
            with os.fdopen(os.open(entry.path, flags), "rb") as fin:
                st = os.fstat(fin.fileno())
                if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
                    raise SubmissionRefused(f"{entry.path} became a hard link or a special "
                                            "file while grading")
                with open(target, "wb") as fout:
                    shutil.copyfileobj(fin, fout)
            os.chmod(target, 0o600)
            if owner:
                os.chown(target, *owner)
    if owner:
        os.chown(dst, *owner)


class SubmissionRefused(Exception):
    """The submission cannot be graded as it is (a symbolic link in it, ...)."""
