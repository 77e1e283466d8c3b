"""Where and as whom the worker runs, and what is cleaned up after it (grader side only;
the worker never imports this module).

Two modes, chosen by who runs the grader:

- **root** (Gradescope, containers, CI runners): the worker runs as a dedicated
  unprivileged user (``tinytrain-worker``; one user per concurrent grading, so cleaning up
  one grading's user never touches another's), with its own Python environment: a copy of
  the interpreter and its standard library, NumPy, ml_dtypes and the worker side of the
  grader, in a root-owned folder. It gets a private scratch folder with a copy of the
  submission; what of the grader it could read (torch, the grader's install, a
  ``reference/`` beside it, the submission's original folder, the output folder, a seed
  file) is made unreadable to it; every process of that user is killed after each test and
  at the end, and its files in world-writable places are removed.
- **user** (a student's laptop): the worker runs as the grader's own user, so this is a
  fault boundary only: the same environment (without the interpreter copy), limits,
  deadlines, scratch folder and process clean-up, but the worker could read and write
  whatever the user can.

In both modes the grader becomes the reaper of its orphans (``PR_SET_CHILD_SUBREAPER``)
and kills every process it started (daemons included) before it writes a score.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import json
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from . import pristine

GRADERS_DIR = Path(__file__).resolve().parents[1]  # the grader's own package folder
STATE_ROOT = Path("/var/lib/tinytrain-grader")
DEFAULT_USER = "tinytrain-worker"
MAX_USERS = 32  # concurrent gradings as root, each with its own worker user
ENV_FORMAT = 5  # bump when the layout of a worker environment changes

# the worker side of the grader, copied into the worker environment (probes: the whole
# package, so probe modules added later come along)
WORKER_FILES = ("__init__.py", "harness/__init__.py", "harness/worker.py", "harness/protocol.py")
WORKER_PACKAGES = ("probes",)
WORKER_DISTRIBUTIONS = ("numpy", "ml_dtypes")
OPTIONAL_DISTRIBUTIONS = ("triton",)  # assignment 6's probes launch Triton kernels
# parts of the standard library the worker never needs (tests, GUIs, installers, the
# static library for building extensions), left out of the interpreter copy
STDLIB_SKIP = frozenset({"site-packages", "dist-packages", "test", "idlelib", "tkinter",
                         "turtledemo", "ensurepip", "lib2to3", "venv", "__phello__"})
# world-writable places the worker user can leave files in, cleaned after each test
WORLD_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/dev/mqueue")
# the only variables a worker inherits from the grader's environment (not secrets)
PASS_THROUGH = ("CUDA_VISIBLE_DEVICES", "TRITON_INTERPRET")

_PR_SET_CHILD_SUBREAPER = 36
_FS_IOC_GETFLAGS = 0x80086601
_FS_IOC_SETFLAGS = 0x40086602
_FS_IMMUTABLE_FL = 0x10
_FS_APPEND_FL = 0x20


class SandboxError(Exception):
    """The sandbox cannot be set up (no worker user, an untrusted cache folder, ...)."""


def is_root() -> bool:
    return os.geteuid() == 0


def log(message: str) -> None:
    print(f"tinytrain-grade: {message}", file=sys.stderr, flush=True)


# ----- processes -------------------------------------------------------------------------

@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    uid: int  # the real uid
    zombie: bool


def _read(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 8192)
    finally:
        os.close(fd)


def processes() -> dict[int, Proc]:
    """Every process now in /proc (threads excluded), from one read of each status file
    (about 7 ms for 110 processes on a loaded 2-core machine)."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            raw = _read(f"/proc/{name}/status")
            ppid = int(raw[raw.index(b"\nPPid:") + 6:].split(None, 1)[0])
            uid = int(raw[raw.index(b"\nUid:") + 5:].split(None, 1)[0])
            zombie = b"\nState:\tZ" in raw
        except (OSError, ValueError):
            continue  # gone meanwhile
        found[int(name)] = Proc(int(name), ppid, uid, zombie)
    return found


def _start_time(pid: int) -> int | None:
    """Clock ticks after boot when ``pid`` started (a reused pid is another process)."""
    try:
        raw = _read(f"/proc/{pid}/stat")
        return int(raw[raw.rindex(b")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


class ProcessGuard:
    """Makes this process the reaper of its orphans and kills what it started.

    Processes that were already this process's descendants when the guard was made (a
    test runner's helpers, say) are left alone; everything started later, daemons that
    left their session included (they are reparented to us), is killed by
    ``kill_descendants``."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        libc = ctypes.CDLL(None, use_errno=True)
        self.subreaper = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        self._before = {p.pid: _start_time(p.pid) for p in self._descendants(processes())}
        self.own_children: set[int] = set()  # Popen children whose exit status we read

    def _descendants(self, table: dict[int, Proc]) -> list[Proc]:
        children: dict[int, list[Proc]] = {}
        for proc in table.values():
            children.setdefault(proc.ppid, []).append(proc)
        found, todo = [], [self.pid]
        while todo:
            for child in children.get(todo.pop(), []):
                found.append(child)
                todo.append(child.pid)
        return found

    def _started_before(self, pid: int) -> bool:
        return pid in self._before and _start_time(pid) == self._before[pid]

    def descendants(self, keep: Iterable[int] = (), table: dict[int, Proc] | None = None
                    ) -> list[Proc]:
        """Live descendants started since the guard was made, except ``keep``."""
        keep = set(keep)
        table = processes() if table is None else table
        return [p for p in self._descendants(table)
                if not p.zombie and p.pid not in keep and not self._started_before(p.pid)]

    def reap(self, table: dict[int, Proc] | None = None) -> None:
        """Collect the exit status of orphans reparented to us (not of our own Popen
        children, whose status subprocess reads)."""
        table = processes() if table is None else table
        for proc in table.values():
            if proc.ppid == self.pid and proc.zombie and proc.pid not in self.own_children:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(proc.pid, os.WNOHANG)

    def kill_descendants(self, keep: Iterable[int] = (), rounds: int = 100) -> int:
        """SIGKILL every descendant (except ``keep``) until none is left; the number
        killed."""
        killed: set[int] = set()  # a process killed but not yet dead is seen again
        for attempt in range(rounds):
            found = self.descendants(keep)
            if not found:
                break
            for proc in found:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(proc.pid, signal.SIGKILL)
                    killed.add(proc.pid)
            time.sleep(min(0.002 * attempt, 0.05))
            self.reap()
        return len(killed)


def user_processes(uid: int, keep: Iterable[int] = ()) -> list[Proc]:
    keep = set(keep)
    return [p for p in processes().values()
            if p.uid == uid and not p.zombie and p.pid not in keep]


def kill_user_processes(uid: int, guard: ProcessGuard | None = None, timeout: float = 10.0) -> int:
    """SIGKILL every process of ``uid`` (root only) until /proc shows none: a child that
    becomes ``uid`` sends kill(-1), every process of the user at once, so a process
    forking in a loop cannot outrun a scan."""
    killed = 0
    deadline = time.monotonic() + timeout
    attempt = 0
    while True:
        found = user_processes(uid)
        if not found or time.monotonic() > deadline:
            break
        killed += len(found)
        _kill_all_as(uid)
        attempt += 1
        time.sleep(min(0.002 * attempt, 0.05))
        if guard is not None:
            guard.reap()
    return killed


def _kill_all_as(uid: int) -> None:
    pid = os.fork()
    if pid == 0:  # only system calls here: this is a fork of a process with threads
        code = 1
        try:
            # out of the grader's process group first: as the worker user, a process in it
            # would let the worker's killpg() of that group succeed
            os.setsid()
            os.setgroups([])
            os.setresuid(uid, uid, uid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(-1, signal.SIGKILL)
            code = 0
        finally:
            os._exit(code)
    os.waitpid(pid, 0)


# ----- the worker user -------------------------------------------------------------------

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


# ----- the worker environment ------------------------------------------------------------

@dataclass
class WorkerEnv:
    """A folder holding what the worker may import: ``site/`` (NumPy, ml_dtypes, the
    worker side of the grader) and, as root, ``python/`` (the interpreter and its standard
    library)."""

    path: Path
    python: str
    site: Path
    variables: dict[str, str] = field(default_factory=dict)

    def command(self, code: str, *args: str) -> list[str]:
        """The interpreter with no site-packages (-S), no user site (-s), no script folder
        or current folder on the path (-P), running ``code`` with only the worker
        environment and the standard library to import from."""
        boot = f"import sys; sys.path.insert(0, {str(self.site)!r}); {code}"
        return [self.python, "-s", "-S", "-P", "-c", boot, *args]


def env_cache_root(root_mode: bool) -> Path:
    override = os.environ.get("TINYTRAIN_WORKER_ENV")
    if override:
        return Path(override)
    if root_mode:
        return STATE_ROOT / "env"
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "tinytrain-grader" / "env"


def _worker_sources() -> list[tuple[str, Path]]:
    """(path inside graders/, file) of every worker-side module."""
    files = [(rel, GRADERS_DIR / rel) for rel in WORKER_FILES]
    for package in WORKER_PACKAGES:
        for path in sorted((GRADERS_DIR / package).rglob("*.py")):
            files.append((str(path.relative_to(GRADERS_DIR)), path))
    return files


def _distributions() -> list[metadata.Distribution]:
    found = []
    for name in WORKER_DISTRIBUTIONS + OPTIONAL_DISTRIBUTIONS:
        try:
            found.append(metadata.distribution(name))
        except metadata.PackageNotFoundError:
            if name in WORKER_DISTRIBUTIONS:
                raise SandboxError(f"{name} is not installed: the worker needs it") from None
    return found


def env_key(with_python: bool) -> str:
    """A hash of everything a worker environment is built from."""
    digest = hashlib.sha256()
    parts = [f"format {ENV_FORMAT}", sys.version, os.path.realpath(sys.executable),
             f"python copy {with_python}"]
    # where each distribution lives too: another installation of the same release (a
    # fresh venv, with other owners and modes) is another environment
    parts += [f"{d.metadata['Name']}=={d.version} at {Path(d.locate_file('')).resolve()}"
              for d in _distributions()]
    for part in parts:
        digest.update(part.encode() + b"\0")
    for rel, path in _worker_sources():
        digest.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


def _check_trusted(path: Path) -> None:
    """As root: ``path`` and every folder above it must be root's and writable by no one
    else (a shared folder above it only with the sticky bit, like /tmp), or another user
    could swap the worker environment."""
    for folder in [path, *path.parents]:
        st = os.stat(folder)
        shared = st.st_mode & 0o002 or (st.st_mode & 0o020 and st.st_gid != 0)
        sticky = folder != path and st.st_mode & stat.S_ISVTX
        if st.st_uid != 0 or (shared and not sticky):
            raise SandboxError(f"{folder} must be owned by root and writable by no one else "
                               f"to hold the worker environment ({path})")


def worker_env(root_mode: bool, rebuild: bool = False) -> tuple[WorkerEnv, bool]:
    """The worker environment for this grader, built once and cached (a folder named by
    ``env_key``; concurrent builds each build in a temporary folder and the first rename
    wins). Returns (environment, built now)."""
    cache = env_cache_root(root_mode)
    cache.mkdir(parents=True, exist_ok=True)
    if root_mode:
        os.chmod(cache, 0o755)
        _check_trusted(cache)
    key = env_key(with_python=root_mode)
    target = cache / key
    built = False
    if rebuild and target.exists():
        shutil.rmtree(target)
    if not (target / "READY").exists():
        _prune(cache)
        tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=cache))
        try:
            _build(tmp, with_python=root_mode)
            (tmp / "READY").write_text(key + "\n")
            os.chmod(tmp, 0o755)
            try:
                os.rename(tmp, target)
                built = True
            except OSError:  # another grader finished first: use its copy
                if not (target / "READY").exists():
                    raise
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return _describe(target, root_mode), built


def _prune(cache: Path) -> None:
    """Remove half-built folders of builds that died (a day old)."""
    for entry in cache.glob(".build-*"):
        with contextlib.suppress(OSError):
            if time.time() - entry.stat().st_mtime > 86400:
                shutil.rmtree(entry, ignore_errors=True)


def _describe(path: Path, with_python: bool) -> WorkerEnv:
    variables = {}
    if with_python:
        info = json.loads((path / "python.json").read_text())
        python = str(path / "python" / "bin" / info["executable"])
        variables["LD_LIBRARY_PATH"] = str(path / "python" / "lib")
    else:
        python = sys.executable
        if os.environ.get("LD_LIBRARY_PATH"):  # an interpreter that needs it to start
            variables["LD_LIBRARY_PATH"] = os.environ["LD_LIBRARY_PATH"]
    return WorkerEnv(path=path, python=python, site=path / "site", variables=variables)


def shareable(st: os.stat_result) -> bool:
    """Whether a worker environment may hard-link a file with this status: a file the
    worker user can read and no one but root can change (the inode is shared: a mode
    that is root's alone would lock the worker out, a writable one would let it in)."""
    return (stat.S_ISREG(st.st_mode) and st.st_uid == 0 and st.st_mode & 0o004 != 0
            and st.st_mode & 0o022 == 0)


def _private_copy(src: Path, dst: Path) -> None:
    """A copy of ``src`` at ``dst`` (its own inode, readable by everyone, written by root)."""
    tmp = dst.with_name(f".{dst.name}.copy")
    shutil.copyfile(src, tmp)
    executable = os.stat(src).st_mode & 0o111
    os.chmod(tmp, 0o755 if executable else 0o644)
    os.replace(tmp, dst)


def _link_or_copy(src: Path, dst: Path, root_mode: bool | None = None) -> None:
    """Hard-link ``src`` to ``dst`` where it may be shared, else copy it. As root only a
    root-owned, world-readable, root-writable file is linked (``shareable``); as a normal
    user the worker runs as that user and reads whatever the grader reads."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    root_mode = is_root() if root_mode is None else root_mode
    if not root_mode or shareable(os.stat(src)):
        try:
            os.link(src, dst)
            return
        except OSError:
            pass
    if root_mode:
        _private_copy(src, dst)
    else:
        shutil.copy2(src, dst)


# files of the grader's worker side the child process that compiles a kernel for sm_90
# runs as the worker user (by path, and what it imports): harness code only, no probe of
# a task and nothing of a solution
READABLE_GRADER_FILES = frozenset({"__init__.py", "probes/__init__.py", "probes/_state.py",
                                   "probes/_cuda_source.py", "probes/_cuda_compile.py"})


def seal_grader_files(graders: Path) -> None:
    """As root: the grader's worker side readable by root alone (files 0600; folders
    0755, since an import lists a folder to find what is in it, and names are no secret).
    The worker loads them as root before it drops to the worker user, so no code of the
    submission can read or import them."""
    for root, _dirs, files in os.walk(graders):
        os.chmod(root, 0o755)
        for name in files:
            path = Path(root) / name
            rel = str(path.relative_to(graders))
            os.chmod(path, 0o644 if rel in READABLE_GRADER_FILES else 0o600)


def repair_env(path: Path) -> list[str]:
    """As root: give every file of a worker environment that shares an inode it may no
    longer share (its source made root's alone after the build, ``chmod -R go-rwx``, or
    handed to another user) a private copy; returns the files repaired. A grading never
    starts on an environment the worker user cannot read."""
    repaired = []
    sealed = path / "site" / "graders"  # private copies, root's alone on purpose
    for root, dirs, files in os.walk(path):
        if Path(root) == sealed.parent:
            dirs[:] = [d for d in dirs if d != sealed.name]
        for name in files:
            file = Path(root) / name
            st = os.lstat(file)
            if stat.S_ISREG(st.st_mode) and not shareable(st):
                if st.st_nlink > 1 or st.st_uid != 0:
                    _private_copy(file, file)
                else:
                    os.chmod(file, 0o755 if st.st_mode & 0o111 else 0o644)
                repaired.append(str(file.relative_to(path)))
    return repaired


def _copy_distribution(dist: metadata.Distribution, site: Path) -> None:
    """Copy an installed distribution by its file list (so ``numpy.libs`` and the like
    come along), hard-linked where the file system allows."""
    base = Path(dist.locate_file("")).resolve()
    for entry in dist.files or []:
        rel = Path(str(entry))
        if rel.parts[0] == ".." or rel.parts[0].endswith((".dist-info", ".egg-info")):
            continue  # scripts in bin/, metadata
        src = Path(dist.locate_file(entry))
        if src.is_file() and base in src.resolve().parents:
            _link_or_copy(src, site / rel)


def _copy_tree(src: Path, dst: Path, skip: frozenset[str] = frozenset()) -> None:
    for root, dirs, files in os.walk(src):
        rel = Path(root).relative_to(src)
        if rel == Path("."):
            dirs[:] = [d for d in dirs if d not in skip and not d.startswith("config-")]
        for name in files:
            path = Path(root) / name
            if path.is_symlink():
                target = dst / rel / name
                target.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(os.readlink(path), target)
            elif path.is_file():
                _link_or_copy(path, dst / rel / name)


def _build(tmp: Path, with_python: bool) -> None:
    import py_compile

    site = tmp / "site"
    site.mkdir()
    for dist in _distributions():
        _copy_distribution(dist, site)
    for rel, src in _worker_sources():  # copied, not linked: a later edit must not leak in
        dst = site / "graders" / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
        py_compile.compile(str(dst), doraise=True)
    if with_python:
        _copy_python(tmp / "python")
    for root, dirs, files in os.walk(tmp):  # readable by the worker user, writable by none
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o755)
        for name in files:
            path = os.path.join(root, name)
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:  # a copy, not a shared inode
                os.chmod(path, 0o755 if st.st_mode & 0o111 else 0o644)
    if with_python:
        repair_env(tmp)
        seal_grader_files(site / "graders")
    _smoke_test(tmp, with_python)


def _copy_python(dst: Path) -> None:
    """The running interpreter, its shared library and its standard library, laid out so
    the copy finds its own prefix (bin/python3.X beside lib/python3.X/os.py)."""
    executable = Path(os.path.realpath(sys.executable))
    (dst / "bin").mkdir(parents=True)
    shutil.copy2(executable, dst / "bin" / executable.name)
    if sysconfig.get_config_var("Py_ENABLE_SHARED"):
        libdir = Path(sysconfig.get_config_var("LIBDIR"))
        soname = sysconfig.get_config_var("INSTSONAME") or sysconfig.get_config_var("LDLIBRARY")
        (dst / "lib").mkdir(parents=True, exist_ok=True)
        shutil.copy2(libdir / soname, dst / "lib" / soname)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    paths = sysconfig.get_paths()
    _copy_tree(Path(paths["stdlib"]), dst / "lib" / version, STDLIB_SKIP)
    if os.path.realpath(paths["platstdlib"]) != os.path.realpath(paths["stdlib"]):
        _copy_tree(Path(paths["platstdlib"]), dst / sys.platlibdir / version, STDLIB_SKIP)
    (dst.parent / "python.json").write_text(json.dumps({"executable": executable.name,
                                                         "source": str(executable)}))


def _smoke_test(tmp: Path, with_python: bool) -> None:
    env = _describe(tmp, with_python)
    code = ("import importlib.util, numpy, ml_dtypes, graders.harness.worker, graders.probes; "
            "print(sys.prefix if importlib.util.find_spec('torch') is None else 'TORCH')")
    done = subprocess.run(env.command(code), env={"PATH": "/usr/bin:/bin", **env.variables},
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0 or "TORCH" in done.stdout:
        raise SandboxError(f"the worker environment in {tmp} does not work: "
                           f"{(done.stderr or done.stdout).strip()[-2000:]}")


def import_names(dist: metadata.Distribution) -> list[str]:
    """The top-level packages and modules a distribution installs (by its file list)."""
    names = set()
    for entry in dist.files or []:
        parts = Path(str(entry)).parts
        if parts[0] == ".." or parts[0].endswith((".dist-info", ".egg-info", ".libs", ".data")):
            continue
        if len(parts) == 2 and parts[1] == "__init__.py":
            names.add(parts[0])
        elif len(parts) == 1 and parts[0].endswith((".py", ".so")) and not parts[0].startswith("_"):
            names.add(parts[0].split(".")[0])
    return sorted(names)


def worker_modules(env: WorkerEnv) -> list[str]:
    """The packages the worker user imports from its environment: each distribution's
    top-level packages (the grader's own modules are loaded as root, before)."""
    return [name for dist in _distributions() for name in import_names(dist)]


def check_imports(user: WorkerUser, env: WorkerEnv) -> None:
    """Import every worker module as the worker does, in a process of its own: the
    grader's modules as root, then, as the worker user, every package of the environment
    (files the user cannot read, a library it cannot load, show up here and not in a
    grading)."""
    code = ("import importlib, traceback\n"
            "from graders.harness import worker\n"
            "worker.seal_grader_modules()\n"
            f"worker.drop_privileges({user.uid}, {user.gid}, False)\n"
            "for name in sys.argv[1:]:\n"
            "    try:\n"
            "        importlib.import_module(name)\n"
            "    except BaseException:\n"
            "        print(f'cannot import {name}:', traceback.format_exc()[-1500:])\n"
            "        sys.exit(1)\n"
            "print('ok')")
    done = subprocess.run(env.command(code, *worker_modules(env)), start_new_session=True, cwd="/",
                          env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent",
                               "PYTHONDONTWRITEBYTECODE": "1", **env.variables},
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0 or done.stdout.strip().splitlines()[-1:] != ["ok"]:
        raise SandboxError(f"the worker user {user.name!r} cannot use the worker environment "
                           f"{env.path}: {(done.stdout + done.stderr).strip()[-2000:]}")


def env_size(path: Path) -> int:
    """Bytes the worker environment's files hold (hard links counted in full)."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


# ----- the submission --------------------------------------------------------------------

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


# ----- locking the grader's files away from the worker user ------------------------------

def sensitive_paths(submission: Path | None = None, out: Path | None = None,
                    secrets: Iterable[Path] = ()) -> list[Path]:
    """What the worker user must not read: torch, the grader's install (the whole source
    checkout when it is one: it holds ``reference/``, the tests and the history), the
    original submission folder, the output folder, secret files."""
    import importlib.util

    paths = []
    for name in ("torch", "functorch", "torchgen"):
        with contextlib.suppress(ImportError, ValueError):
            spec = importlib.util.find_spec(name)
            if spec and spec.submodule_search_locations:
                paths.extend(Path(p) for p in spec.submodule_search_locations)
    install = GRADERS_DIR.parent
    checkout = any((install / marker).exists() for marker in ("reference", "pyproject.toml", ".git"))
    paths.append(install if checkout else GRADERS_DIR)
    paths.append(Path("/autograder/source"))  # Gradescope's copy of the autograder zip
    paths += [p for p in (submission, out, *secrets) if p is not None]
    unique: list[Path] = []
    for path in paths:
        path = Path(os.path.realpath(path))
        if path.exists() and path not in unique and path != Path("/"):
            unique.append(path)
    return unique


def readable_by(user: WorkerUser, env: WorkerEnv, paths: list[Path]) -> list[tuple[bool, bool]]:
    """For each path, whether ``user`` can (read, write) it: asked of a process running
    as that user."""
    code = ("import os, json; print(json.dumps([[os.access(p, os.R_OK), os.access(p, os.W_OK)] "
            "for p in sys.argv[1:]]))")
    done = subprocess.run(env.command(code, *map(str, paths)), user=user.uid, group=user.gid,
                          extra_groups=[], start_new_session=True,
                          env={"PATH": "/usr/bin:/bin", **env.variables},
                          capture_output=True, text=True, timeout=120, cwd="/")
    if done.returncode != 0:
        raise SandboxError(f"the worker user {user.name!r} cannot run the worker environment "
                           f"({env.path}): {done.stderr.strip()[-1000:]}")
    return [tuple(x) for x in json.loads(done.stdout)]


def lock_down(user: WorkerUser, env: WorkerEnv, paths: list[Path]) -> list[str]:
    """Make ``paths`` unreadable and unwritable to ``user`` (chmod go-rwx, root as owner
    where the user owned it); returns what was changed. Raises if it stays reachable."""
    changed: list[Path] = []
    for path, (read, write) in zip(paths, readable_by(user, env, paths)):
        if not (read or write) or any(c in path.parents for c in changed):
            continue
        st = os.stat(path)
        if st.st_uid == user.uid:
            os.chown(path, 0, 0)
        os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o077)
        changed.append(path)
    if changed:
        still = [str(p) for p, (r, w) in zip(paths, readable_by(user, env, paths)) if r or w]
        if still:
            raise SandboxError("the worker user can still reach " + ", ".join(still) +
                               " (access control lists?)")
    return [str(p) for p in changed]


# ----- score files -----------------------------------------------------------------------

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
    if is_root():
        clear_immutable(name, dir_fd)
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        if is_root():
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
        if is_root():
            clear_immutable(str(out))
        os.unlink(out)
    with contextlib.suppress(FileExistsError):
        os.mkdir(out)
    return os.open(out, flags)


# ----- the sandbox of one grading ---------------------------------------------------------

@dataclass
class Limits:
    memory_mb: int = 4096
    file_mb: int = 256
    nproc: int = 256   # processes and threads of the worker user (a normal user: extra ones)
    nofile: int = 1024


class Sandbox:
    """Everything one grading's workers need; ``open`` sets it up, ``close`` tears it
    down (every worker process gone, scratch folders removed)."""

    _warned = False

    def __init__(self, submission: Path, out: Path | None = None,
                 secrets: Iterable[Path] = (), limits: Limits | None = None,
                 guard: ProcessGuard | None = None, root_mode: bool | None = None) -> None:
        self.submission = Path(os.path.realpath(submission))
        self.out = Path(os.path.abspath(out)) if out is not None else None
        self.secrets = [Path(s) for s in secrets]
        self.limits = limits or Limits()
        self.guard = guard or ProcessGuard()
        self.root_mode = is_root() if root_mode is None else root_mode
        self.user: WorkerUser | None = None
        self.env: WorkerEnv | None = None
        self.run_dir: Path | None = None
        self.staged: Path | None = None
        self.namespaces = self.root_mode
        self._count = 0
        self._out_mode: tuple[int, int, int] | None = None
        self._scan: WritableScan | None = None
        self.given_restored: list[str] = []

    # ----- setting up
    def open(self) -> Sandbox:
        problem = check_submission(self.submission)
        if problem:
            raise SubmissionRefused(problem)
        if self.root_mode:
            self._open_as_root()
        else:
            if not Sandbox._warned:
                Sandbox._warned = True
                log("not running as root: the worker runs as your own user, so its sandbox "
                    "is a fault boundary (limits, deadlines, clean-up), not a security "
                    "boundary (see README, 'How a submission is run')")
            self._make_env(root_mode=False)
            self.run_dir = Path(tempfile.mkdtemp(prefix="tinytrain-grade-"))
            self.limits = _relative_nproc(self.limits)
        self._stage()
        return self

    def _open_as_root(self) -> None:
        self.user, created = acquire_user()
        if created:
            log(f"sandbox: created the worker user {self.user.name} (uid {self.user.uid})")
        self._make_env(root_mode=True)
        if self.out is not None:  # the output folder: root's alone while grading
            self.out.mkdir(parents=True, exist_ok=True)
            st = os.stat(self.out)
            self._out_mode = (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)
            os.chown(self.out, 0, 0)
            os.chmod(self.out, 0o700)
        locked = lock_down(self.user, self.env,
                           sensitive_paths(self.submission, self.out, self.secrets))
        if locked:
            log("sandbox: made unreadable to the worker user (chmod go-rwx): " + ", ".join(locked))
        base = _state_dir("run", mode=0o711)
        self.run_dir = Path(tempfile.mkdtemp(prefix="grade-", dir=base))
        os.chmod(self.run_dir, 0o711)  # the worker may pass through to its own folder only
        # the worker's own scratch folders are removed whole at the end: not scanned
        self._scan = WritableScan(self.user.uid, self.user.gid, skip=[str(base)])

    def _make_env(self, root_mode: bool) -> None:
        start = time.perf_counter()
        self.env, built = worker_env(root_mode)
        if built:
            log(f"sandbox: built the worker environment {self.env.path} in "
                f"{time.perf_counter() - start:.1f} s (once; later gradings reuse it)")
        if root_mode and self.user is not None:
            repaired = repair_env(self.env.path)
            if repaired:
                log(f"sandbox: {len(repaired)} files of the worker environment had become "
                    f"unreadable to the worker user (e.g. {repaired[0]}): copied")
            if built or repaired:
                check_imports(self.user, self.env)

    def _stage(self) -> None:
        """A private copy of the submission, taken once: every worker gets a copy of it."""
        assert self.run_dir is not None
        self.staged = self.run_dir / "submission"
        self.staged.mkdir(mode=0o700)
        package = self.submission / "tinytrain"
        if package.is_dir():
            _copy_package(package, self.staged / "tinytrain", owner=None)
            try:
                self.given_restored = pristine.restore(self.staged)
            except OSError as exc:  # a folder where a given file belongs, say
                raise SubmissionRefused(f"the framework's given files cannot be put back: "
                                        f"{exc}") from None
            if self.given_restored:
                shown = ", ".join(self.given_restored[:5])
                more = len(self.given_restored) - 5
                log(f"sandbox: {len(self.given_restored)} given files (no homework region) "
                    f"differed from the framework's and were put back: {shown}"
                    + (f" and {more} more" if more > 0 else ""))

    def describe(self) -> str:
        """One line for score.json's environment: who ran the worker, with what."""
        if self.user is not None:
            return (f"root: worker user {self.user.name} (uid {self.user.uid}), its own "
                    f"environment {self.env.path if self.env else '?'}")
        return "normal user: the worker runs as the grader's user (a fault boundary only)"

    # ----- workers
    def new_scratch(self) -> tuple[Path, Path]:
        """A fresh private folder for one worker (its home, temporary files and working
        folder) holding a copy of the submission; returns (scratch, submission copy)."""
        assert self.run_dir is not None and self.staged is not None
        self._count += 1
        scratch = self.run_dir / f"worker-{self._count}"
        scratch.mkdir(mode=0o700)
        (scratch / "tmp").mkdir(mode=0o700)
        copy = scratch / "submission"
        copy.mkdir(mode=0o700)
        owner = (self.user.uid, self.user.gid) if self.user else None
        if (self.staged / "tinytrain").is_dir():
            _copy_package(self.staged / "tinytrain", copy / "tinytrain", owner)
        if owner:
            for path in (scratch, scratch / "tmp", copy):
                os.chown(path, *owner)
        return scratch, copy

    def remove_scratch(self, scratch: Path) -> None:
        shutil.rmtree(scratch, ignore_errors=True)

    def worker_command(self, fd_in: int, fd_out: int, scratch: Path, copy: Path
                       ) -> tuple[list[str], dict[str, str]]:
        assert self.env is not None
        args = ["--fd-in", str(fd_in), "--fd-out", str(fd_out),
                "--memory-mb", str(self.limits.memory_mb), "--file-mb", str(self.limits.file_mb),
                "--nproc", str(self.limits.nproc), "--nofile", str(self.limits.nofile)]
        if self.user is not None:
            args += ["--uid", str(self.user.uid), "--gid", str(self.user.gid)]
            if self.namespaces:
                args.append("--namespaces")
        argv = self.env.command("from graders.harness.worker import main; main()",
                                *args, str(copy))
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(scratch),
            "TMPDIR": str(scratch / "tmp"),
            "LANG": "C.UTF-8",
            "PYTHONHASHSEED": "0",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            **self.env.variables,
            **{k: os.environ[k] for k in PASS_THROUGH if k in os.environ},
        }
        return argv, env

    def after_test(self, live: Iterable[int] = ()) -> None:
        """Kill what the worker started besides itself, and remove its files left in
        shared places. Every process of the worker user descends from this grader (orphans
        are reparented to it), so killing descendants kills all of them."""
        self.guard.kill_descendants(keep=live)
        if self.user is not None:
            scan = self._scan
            extra = scan.folders(0) if scan is not None and scan.done() else []
            remove_user_files(self.user.uid, extra)

    # ----- tearing down
    def kill_everything(self) -> None:
        self.guard.kill_descendants()
        if self.user is not None:
            kill_user_processes(self.user.uid, guard=self.guard)
            extra = self._scan.folders() if self._scan is not None else []
            remove_user_files(self.user.uid, extra)
            remove_user_ipc(self.user.uid)

    def close(self) -> None:
        self.kill_everything()
        if self.run_dir is not None:
            shutil.rmtree(self.run_dir, ignore_errors=True)
            self.run_dir = None
        if self.user is not None:
            self.user.release()

    def restore_out(self) -> None:
        """Give the output folder back its mode (after the score files are written)."""
        if self.out is not None and self._out_mode is not None:
            mode, uid, gid = self._out_mode
            with contextlib.suppress(OSError):
                os.chown(self.out, uid, gid)
                os.chmod(self.out, mode)


class SubmissionRefused(Exception):
    """The submission cannot be graded as it is (a symbolic link in it, ...)."""


def _relative_nproc(limits: Limits) -> Limits:
    """RLIMIT_NPROC counts every process and thread of the real user: as a normal user,
    allow what the user runs now plus the worker's share."""
    uid = os.getuid()
    running = 0
    for proc in processes().values():
        if proc.uid == uid:
            with contextlib.suppress(OSError):
                running += len(os.listdir(f"/proc/{proc.pid}/task"))
    return Limits(limits.memory_mb, limits.file_mb, running + limits.nproc, limits.nofile)
