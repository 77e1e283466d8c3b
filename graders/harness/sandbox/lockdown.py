"""Locking the grader's files away from the worker user (root only)."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
from collections.abc import Iterable
from pathlib import Path

from .base import GRADERS_DIR, SandboxError
from .environment import WorkerEnv
from .user import WorkerUser


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
