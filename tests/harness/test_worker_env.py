"""The worker environment as root, built from a grader installation that is root's alone
(Gradescope's setup.sh runs ``chmod -R go-rwx`` on it): it must never share an inode the
worker user cannot read, and a file whose source is locked away after the build gets its
own copy before the next grading. Checked by imports run as the real worker user."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from graders.harness import sandbox

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the worker user needs root")

WORKER_USER = f"tinytrain-e{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A folder the worker user can pass through (pytest's own is root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="tinytrain-env-test-"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _file(path: Path, mode: int, text: str = "x = 1\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, mode)
    return path


def test_only_files_the_worker_can_read_are_shared(tmp_path):
    readable = _file(tmp_path / "src" / "open.py", 0o644)
    private = _file(tmp_path / "src" / "private.py", 0o600)
    group_writable = _file(tmp_path / "src" / "shared.py", 0o664)
    for src in (readable, private, group_writable):
        sandbox._link_or_copy(src, tmp_path / "env" / src.name, root_mode=True)
    linked = {p.name: os.stat(p).st_ino == os.stat(tmp_path / "src" / p.name).st_ino
              for p in (tmp_path / "env").iterdir()}
    assert linked == {"open.py": True, "private.py": False, "shared.py": False}
    for name in ("private.py", "shared.py"):
        assert stat.S_IMODE(os.stat(tmp_path / "env" / name).st_mode) == 0o644
    assert stat.S_IMODE(private.stat().st_mode) == 0o600  # the source keeps its mode


def test_a_source_locked_after_the_build_is_copied_at_repair(tmp_path):
    src = _file(tmp_path / "src" / "mod.py", 0o644, "value = 42\n")
    env = tmp_path / "env"
    sandbox._link_or_copy(src, env / "site" / "mod.py", root_mode=True)
    assert sandbox.repair_env(env) == []
    os.chmod(src, 0o600)  # setup.sh's chmod -R go-rwx of the grader, after the build
    assert sandbox.repair_env(env) == ["site/mod.py"]
    copy = env / "site" / "mod.py"
    assert os.stat(copy).st_ino != src.stat().st_ino
    assert stat.S_IMODE(os.stat(copy).st_mode) == 0o644 and copy.read_text() == "value = 42\n"
    assert stat.S_IMODE(src.stat().st_mode) == 0o600
    assert sandbox.repair_env(env) == []


def test_every_worker_module_is_imported_as_the_worker_user(open_dir, monkeypatch):
    """A worker environment with one file the worker user cannot read fails the check as
    that user (root could read it: a smoke test as root proves nothing), and passes once
    repaired."""
    monkeypatch.setenv("TINYTRAIN_WORKER_ENV", str(open_dir / "envs"))
    env, built = sandbox.worker_env(root_mode=True)
    assert built
    names = sandbox.worker_modules(env)
    assert {"numpy", "ml_dtypes"} <= set(names)
    user, _ = sandbox.acquire_user(WORKER_USER)
    try:
        sandbox.check_imports(user, env)
        target = env.site / "ml_dtypes" / "__init__.py"
        sandbox._private_copy(target, target)  # its own inode: the install is untouched
        os.chmod(target, 0o600)
        with pytest.raises(sandbox.SandboxError, match="ml_dtypes"):
            sandbox.check_imports(user, env)
        assert sandbox.repair_env(env.path) == ["site/ml_dtypes/__init__.py"]
        sandbox.check_imports(user, env)
    finally:
        user.release()


def test_a_root_only_installation_builds_a_readable_environment(open_dir, monkeypatch):
    """The grader's Python packages made root's alone (a copy of NumPy and ml_dtypes here,
    mode 0600 under a 0700 folder) and the worker environment built from them: the worker
    user imports them (on main 9efcd2d every file was a 0600 hard link)."""
    import ml_dtypes
    import numpy

    site = open_dir / "grader-site"
    site.mkdir()
    for module in (numpy, ml_dtypes):
        src = Path(module.__file__).parent
        subprocess.run(["cp", "-a", str(src), str(site / src.name)], check=True)
        dist = next(src.parent.glob(f"{src.name}-*.dist-info"))
        subprocess.run(["cp", "-a", str(dist), str(site / dist.name)], check=True)
    libs = Path(numpy.__file__).parent.parent / "numpy.libs"
    if libs.is_dir():
        subprocess.run(["cp", "-a", str(libs), str(site / libs.name)], check=True)
    subprocess.run(["chmod", "-R", "go-rwx", str(site)], check=True)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("TINYTRAIN_WORKER_ENV", str(open_dir / "envs"))
    from importlib import metadata

    real = metadata.distribution
    monkeypatch.setattr(sandbox.metadata, "distribution",
                        lambda name: (metadata.Distribution.at(next(site.glob(f"{name}-*.dist-info")))
                                      if name in ("numpy", "ml_dtypes") else real(name)))
    env, built = sandbox.worker_env(root_mode=True)
    assert built and str(site) not in str(env.path)
    shared = [p for p in (env.site / "numpy").rglob("*")
              if p.is_file() and os.stat(p).st_nlink > 1]
    assert shared == []  # nothing linked to the 0600 files
    user, _ = sandbox.acquire_user(WORKER_USER)
    try:
        sandbox.check_imports(user, env)
    finally:
        user.release()
    assert sys.modules["numpy"] is numpy
