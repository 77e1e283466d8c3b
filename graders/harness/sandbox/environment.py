"""The worker environment: what the worker may import (NumPy, ml_dtypes, the grader's
worker side and, as root, a copy of the interpreter), built once and cached."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from .base import GRADERS_DIR, STATE_ROOT, SandboxError, is_root
from .user import WorkerUser

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
