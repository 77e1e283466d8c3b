"""Writing the score files (score.json, results.json, classroom.json, pytest's JSON
report) into the output folder, whatever sits at their place: a folder, a read-only or
immutable file, a symbolic link (replaced, never followed)."""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import shutil
import stat
from pathlib import Path

from .classroom import classroom_json
from .gradescope import results_json
from .pytest_json import PYTEST_REPORT, pytest_json_report
from .score import Score

_FS_IOC_GETFLAGS = 0x80086601
_FS_IOC_SETFLAGS = 0x40086602
_FS_IMMUTABLE_FL = 0x10
_FS_APPEND_FL = 0x20


def clear_immutable(path: str, dir_fd: int | None = None) -> None:
    """Clear the immutable and append-only attributes (chattr -i -a), if set."""
    flags_open = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(path, flags_open, dir_fd=dir_fd)
    except OSError:
        return
    try:
        buf = ctypes.c_long(0)
        fcntl.ioctl(fd, _FS_IOC_GETFLAGS, buf)
        if buf.value & (_FS_IMMUTABLE_FL | _FS_APPEND_FL):
            buf.value &= ~(_FS_IMMUTABLE_FL | _FS_APPEND_FL)
            fcntl.ioctl(fd, _FS_IOC_SETFLAGS, buf)
    except OSError:
        pass
    finally:
        os.close(fd)


def replace_file(dir_fd: int, name: str, data: bytes) -> None:
    """Write ``name`` in the folder ``dir_fd`` whatever sits there now (a folder, a
    read-only or immutable file, a symbolic link, which is replaced, never followed)."""
    tmp = f".{name}.{os.getpid()}.tmp"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp, dir_fd=dir_fd)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dir_fd)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    try:
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        return
    except OSError:
        pass
    # something in the way: an immutable file, or a folder
    if _is_root():
        clear_immutable(name, dir_fd)
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        if _is_root():
            _clear_immutable_tree(name, dir_fd)
        shutil.rmtree(name, dir_fd=dir_fd)
    os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


def _clear_immutable_tree(name: str, dir_fd: int) -> None:
    clear_immutable(name, dir_fd)
    with contextlib.suppress(OSError):
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
        try:
            for entry in os.listdir(fd):
                st = os.stat(entry, dir_fd=fd, follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    _clear_immutable_tree(entry, fd)
                elif stat.S_ISREG(st.st_mode):
                    clear_immutable(entry, fd)
        finally:
            os.close(fd)


def open_out_dir(out: Path) -> int:
    """A descriptor of the output folder (an absolute path, resolved by the caller before
    grading began), made if missing; a symbolic link or a file put in its place meanwhile
    is removed, never followed."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    os.makedirs(out.parent, exist_ok=True)
    try:
        return os.open(out, flags)
    except FileNotFoundError:
        pass
    except OSError:  # a symbolic link (ELOOP) or a file (ENOTDIR) in the way
        if _is_root():
            clear_immutable(str(out))
        os.unlink(out)
    with contextlib.suppress(FileExistsError):
        os.mkdir(out)
    return os.open(out, flags)


def _is_root() -> bool:
    return os.geteuid() == 0


def write_outputs(out: Path, score: Score) -> list[str]:
    """Write score.json, results.json, classroom.json and pytest's JSON report
    (``PYTEST_REPORT``) into ``out``, replacing whatever
    is at their place (a folder, a read-only or immutable file, a symbolic link: never
    followed); each is written even if another fails. Returns the failures."""
    builders = {"score.json": score.to_json, "results.json": lambda: results_json(score),
                "classroom.json": lambda: classroom_json(score),
                PYTEST_REPORT: lambda: pytest_json_report(score)}
    failures = []
    try:
        dir_fd = open_out_dir(out)
    except OSError as exc:
        return [f"{out}: {exc}"]
    try:
        for name, build in builders.items():
            try:
                data = (json.dumps(build(), indent=2, sort_keys=False) + "\n").encode()
                replace_file(dir_fd, name, data)
            except Exception as exc:  # noqa: BLE001 - the other files must still be written
                failures.append(f"{name}: {type(exc).__name__}: {exc}")
    finally:
        os.close(dir_fd)
    return failures
