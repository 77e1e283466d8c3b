"""The worker user: one per concurrent grading (a lock each), created when missing, and
what it leaves in shared places (files, System V IPC) removed."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import shutil
import stat
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .base import STATE_ROOT, SandboxError
from .processes import kill_user_processes

DEFAULT_USER = "tinytrain-worker"
MAX_USERS = 32  # concurrent gradings as root, each with its own worker user

# world-writable places the worker user can leave files in, cleaned after each test
WORLD_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/dev/mqueue")


@dataclass
class WorkerUser:
    name: str
    uid: int
    gid: int
    lock_fd: int = -1

    def release(self) -> None:
        if self.lock_fd >= 0:
            os.close(self.lock_fd)
            self.lock_fd = -1


def _state_dir(*parts: str, mode: int = 0o755) -> Path:
    path = STATE_ROOT.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, 0, 0)
    os.chmod(path, mode)
    return path


def ensure_user(name: str) -> tuple[int, int, bool]:
    """(uid, gid, created) of ``name``, created as a system user (no home, no login shell)
    when missing."""
    with contextlib.suppress(KeyError):
        entry = pwd.getpwnam(name)
        return entry.pw_uid, entry.pw_gid, False
    locks = _state_dir("locks", mode=0o700)
    with open(locks / "useradd.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # concurrent gradings creating users
        with contextlib.suppress(KeyError):
            entry = pwd.getpwnam(name)
            return entry.pw_uid, entry.pw_gid, False
        shell = next((s for s in ("/usr/sbin/nologin", "/sbin/nologin", "/bin/false")
                      if os.path.exists(s)), "/bin/false")
        if shutil.which("useradd"):
            cmd = ["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                   "--shell", shell, "--user-group", name]
        elif shutil.which("adduser"):  # busybox (Alpine)
            cmd = ["adduser", "-S", "-D", "-H", "-h", "/nonexistent", "-s", shell, name]
        else:
            raise SandboxError(f"cannot create the worker user {name!r}: no useradd or adduser")
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise SandboxError(f"cannot create the worker user {name!r}: "
                               f"{(done.stderr or done.stdout).strip()}")
    entry = pwd.getpwnam(name)
    return entry.pw_uid, entry.pw_gid, True


def acquire_user(base: str | None = None) -> tuple[WorkerUser, bool]:
    """A worker user no other grading holds (a lock per user), created if needed; its
    leftovers from an earlier grading (processes, files) are removed first."""
    base = base or os.environ.get("TINYTRAIN_WORKER_USER") or DEFAULT_USER
    locks = _state_dir("locks", mode=0o700)
    for slot in range(MAX_USERS):
        name = base if slot == 0 else f"{base}{slot}"
        fd = os.open(locks / f"{name}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            uid, gid, created = ensure_user(name)
            if uid == 0 or gid == 0:
                raise SandboxError(f"the worker user {name!r} must not be root or in group root")
        except BaseException:
            os.close(fd)
            raise
        user = WorkerUser(name, uid, gid, fd)
        kill_user_processes(uid)
        remove_user_files(uid)
        remove_user_ipc(uid)
        return user, created
    raise SandboxError(f"all {MAX_USERS} worker users are busy (concurrent gradings)")


# file systems with no files a user can leave behind (or none worth a scan)
PSEUDO_FILESYSTEMS = frozenset({
    "proc", "sysfs", "cgroup", "cgroup2", "devpts", "securityfs", "debugfs", "tracefs",
    "bpf", "pstore", "configfs", "fusectl", "binfmt_misc", "autofs", "hugetlbfs", "efivarfs",
    "nsfs", "rpc_pipefs", "nfsd", "selinuxfs", "squashfs", "iso9660", "overlay-ro"})
SCAN_DEPTH = 12  # folders below a mount point the writable-folder scan looks into


def _mounts() -> list[tuple[str, str]]:
    """(mount point, file system type) of every mount, from /proc/self/mounts."""
    found = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mounts").read_text().splitlines():
            parts = line.split()
            if len(parts) >= 3:
                found.append((parts[1].replace("\\040", " "), parts[2]))
    return found


def writable_folders(uid: int, gid: int, skip: Iterable[str] = ()) -> list[str]:
    """Every folder on this machine's real file systems that ``uid`` (in group ``gid``
    only) could create a file in: world-writable ones, ones it owns, ones its group may
    write. A walk of the whole tree (pseudo file systems left out), so a folder no list
    names (a shared spool, a world-writable folder a package made) is found too."""
    skipped = {os.path.realpath(p) for p in skip}
    pseudo = {point for point, kind in _mounts() if kind in PSEUDO_FILESYSTEMS}
    found: list[str] = []
    todo = [("/", 0)]
    while todo:
        folder, depth = todo.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if not entry.is_dir(follow_symlinks=False):
                    continue
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            path = entry.path
            if path in pseudo or path in skipped:
                continue
            mode = st.st_mode
            if (mode & 0o002 or (st.st_uid == uid and mode & 0o200)
                    or (st.st_gid == gid and mode & 0o020)):
                found.append(path)
            elif depth < SCAN_DEPTH:
                todo.append((path, depth + 1))
    return sorted(found)


class WritableScan:
    """``writable_folders`` in a thread of its own, started when a grading starts (about
    a second or two on a container's tree, while the first tests run); ``folders`` waits
    for it. Not cached between gradings: a shared folder made since would be missed."""

    def __init__(self, uid: int, gid: int, skip: Iterable[str] = ()) -> None:
        import threading

        self._result: list[str] = []
        self._thread = threading.Thread(target=self._run, args=(uid, gid, list(skip)),
                                        name="writable-scan", daemon=True)
        self._thread.start()

    def _run(self, uid: int, gid: int, skip: list[str]) -> None:
        with contextlib.suppress(Exception):
            self._result = writable_folders(uid, gid, skip)

    def done(self) -> bool:
        return not self._thread.is_alive()

    def folders(self, timeout: float = 120.0) -> list[str]:
        self._thread.join(timeout)
        return list(self._result)


def remove_user_ipc(uid: int) -> list[str]:
    """Remove the System V shared memory segments, semaphore sets and message queues
    ``uid`` owns or created (they outlive every process)."""
    removed = []
    for kind, flag in (("shm", "-m"), ("sem", "-s"), ("msg", "-q")):
        try:
            lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
        except OSError:
            continue
        if not lines:
            continue
        header = lines[0].split()
        for line in lines[1:]:
            row = dict(zip(header, line.split()))
            if str(uid) in (row.get("uid"), row.get("cuid")):
                ident = row.get("shmid") or row.get("semid") or row.get("msqid")
                if ident and shutil.which("ipcrm"):
                    subprocess.run(["ipcrm", flag, ident], capture_output=True)
                    removed.append(f"System V {kind} {ident}")
    return removed


def remove_user_files(uid: int, extra: Iterable[str] = ()) -> list[str]:
    """Remove what ``uid`` left in world-writable places (``WORLD_WRITABLE`` and the
    folders in ``extra``, those a ``WritableScan`` found); returns what was removed."""
    removed = []
    seen = set()
    for top in (*WORLD_WRITABLE, *extra):
        real = os.path.realpath(top)
        if real in seen or not os.path.isdir(real):
            continue
        seen.add(real)
        removed += _remove_owned(real, uid, depth=0)
    return removed


def _remove_owned(folder: str, uid: int, depth: int) -> list[str]:
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if st.st_uid == uid:
            with contextlib.suppress(OSError):
                if stat.S_ISDIR(st.st_mode):
                    shutil.rmtree(entry.path)
                else:
                    os.unlink(entry.path)
                removed.append(entry.path)
        elif stat.S_ISDIR(st.st_mode) and st.st_mode & 0o002 and depth < 3:
            removed += _remove_owned(entry.path, uid, depth + 1)  # another shared folder
    return removed
