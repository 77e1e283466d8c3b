"""The sandboxed worker: imports the submission's tinytrain and runs probes for the grader.

Started by ``SandboxClient`` from the worker environment (``graders.harness.sandbox``):
an interpreter with ``-s -S -P``, a ``sys.path`` of that environment (NumPy, ml_dtypes,
this package's worker side) and the standard library, and a minimal set of environment
variables. Before anything of the submission runs, ``main`` drops to the worker user (when
started as root), forbids gaining privileges again and sets hard resource limits.
It never sees expected values; it answers each request with an observation or an error
description. torch is not on its path; an import blocker says so clearly. Student output
goes to stdout/stderr, which the grader captures apart from the protocol pipes.
"""

from __future__ import annotations

import argparse
import ctypes
import faulthandler
import importlib
import importlib.abc
import os
import resource
import signal
import sys
import traceback
from typing import Any

from graders.harness import protocol

BLOCKED_PACKAGES = frozenset({"torch", "jax", "jaxlib", "tensorflow", "cupy", "functorch"})
GRADER_PACKAGE = "graders"  # the grader's own modules: loaded before the submission, sealed


class _BlockImports(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> None:
        top = fullname.partition(".")[0]
        if top in BLOCKED_PACKAGES:
            raise ImportError(
                f"import of {fullname!r} is blocked while grading: tinytrain must do its own "
                "math with NumPy (the grader uses torch only to compute expected values)"
            )
        if top == GRADER_PACKAGE:
            raise ImportError(
                f"import of {fullname!r} is blocked while grading: the grader's modules are "
                "not part of tinytrain, and a submission that uses them is not graded on "
                "its own work"
            )
        return None


def install_import_blocker() -> None:
    for name in list(sys.modules):
        if name.partition(".")[0] in BLOCKED_PACKAGES:
            del sys.modules[name]
    sys.meta_path.insert(0, _BlockImports())


def seal_grader_modules() -> Any:
    """Load every probe module now (as root, before the submission runs: the worker user
    cannot read their files) and take the grader's modules out of ``sys.modules``, so no
    import of the submission finds them; returns the probes package, which the worker
    keeps for itself."""
    from graders import probes

    probes.load_all()
    for name in list(sys.modules):
        if name.partition(".")[0] == GRADER_PACKAGE:
            del sys.modules[name]
    return probes


_PR_SET_DUMPABLE = 4
_PR_SET_NO_NEW_PRIVS = 38
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWNET = 0x40000000


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def set_limits(memory_mb: int, file_mb: int, nproc: int = 0, nofile: int = 0) -> None:
    """Hard limits equal to the soft ones, so the submission cannot raise them again:
    address space, file size, no core files, and (when given) processes and open files."""

    def limit(kind: int, value: int) -> None:
        _, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(kind, (value, value))

    if memory_mb > 0:
        limit(resource.RLIMIT_AS, memory_mb << 20)
    limit(resource.RLIMIT_FSIZE, file_mb << 20)
    limit(resource.RLIMIT_CORE, 0)
    if nproc > 0:
        limit(resource.RLIMIT_NPROC, nproc)
    if nofile > 0:
        limit(resource.RLIMIT_NOFILE, nofile)


def drop_privileges(uid: int, gid: int, namespaces: bool) -> list[str]:
    """As root: optionally enter new network and IPC namespaces (no network, no shared
    SysV IPC; where the kernel and the container allow it), then become ``uid``/``gid``
    with no supplementary groups (and so no capabilities). Returns the extra layers in
    place."""
    layers = []
    if namespaces and _libc().unshare(_CLONE_NEWNET | _CLONE_NEWIPC) == 0:
        layers.append("network and IPC namespaces")
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getuid() != uid or os.geteuid() != uid or os.getgid() != gid or os.getgroups():
        raise SystemExit("worker: could not drop privileges")
    try:
        os.setuid(0)
    except PermissionError:
        pass
    else:
        raise SystemExit("worker: privileges came back after dropping them")
    # changing uid made the process non-dumpable (its /proc files root's); undo that so
    # the worker looks like any process of its user
    _libc().prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)
    return layers


def no_new_privileges() -> None:
    """Neither setuid programs nor file capabilities can raise privileges from here on."""
    _libc().prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


def submission_traceback(exc: BaseException, root: str, limit: int = 8000) -> str:
    """The traceback frames inside the submission (the ones a student can act on), in at
    most ``limit`` characters: outer frames go first, the innermost (where it raised)
    is always kept."""
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if os.path.realpath(f.filename).startswith(root + os.sep)]
    if not mine:
        return ""
    for frame in mine:
        frame.filename = os.path.relpath(os.path.realpath(frame.filename), os.path.dirname(root))
    formatted = traceback.format_list(mine)
    dropped = 0
    while len(formatted) > 1 and sum(map(len, formatted)) > limit:
        formatted.pop(0)
        dropped += 1
    text = "".join(formatted).rstrip()
    if dropped:
        text = f"  [... {dropped} outer frames left out ...]\n" + text
    return text[-limit:]


def describe_exception(exc: BaseException, root: str) -> dict[str, Any]:
    kind = "not_implemented" if isinstance(exc, NotImplementedError) else "exception"
    message = str(exc)
    if isinstance(exc, SyntaxError) and exc.filename:
        where = os.path.relpath(os.path.realpath(exc.filename), os.path.dirname(root))
        message = f"{exc.msg} ({where}, line {exc.lineno})"
    return {
        "kind": kind,
        "type": type(exc).__name__,
        "message": message[:4000],
        "traceback": submission_traceback(exc, root),
    }


def import_submission(submission: str) -> tuple[Any, str]:
    """Import ``tinytrain`` from ``submission``; returns (module, package root)."""
    sys.path.insert(0, submission)
    module = importlib.import_module("tinytrain")
    root = os.path.realpath(os.path.join(submission, "tinytrain"))
    location = os.path.realpath(getattr(module, "__file__", "") or "")
    if not location.startswith(root + os.sep):
        raise ImportError(
            f"imported tinytrain from {location or 'an unknown place'}, not from the "
            f"submission folder {root}"
        )
    return module, root


def serve(fd_in: int, fd_out: int, submission: str, probes: Any) -> None:
    root = os.path.realpath(os.path.join(submission, "tinytrain"))
    try:
        tt, root = import_submission(submission)
        import_error = None
    except BaseException as exc:  # noqa: BLE001 - whatever the submission raises on import
        tt, import_error = None, describe_exception(exc, root)
        import_error["kind"] = "import"
    while True:
        try:
            request = protocol.read_message(fd_in)
        except EOFError:
            return
        if request.get("cmd") == "exit":
            return
        if import_error is not None:
            reply = {"ok": False, "error": import_error}
        elif request.get("cmd") == "hello":
            reply = {"ok": True, "value": {"tinytrain": tt.__file__}}
        else:
            reply = run_probe(tt, root, probes, request)
        try:
            data = protocol.encode(reply)
        except Exception as exc:  # noqa: BLE001 - an observation that cannot be sent
            data = protocol.encode(
                {"ok": False, "error": {"kind": "harness", "type": type(exc).__name__,
                                        "message": f"probe result could not be sent: {exc}",
                                        "traceback": ""}}
            )
        view = memoryview(data)
        while view:
            view = view[os.write(fd_out, view):]


def run_probe(tt: Any, root: str, probes: Any, request: dict[str, Any]) -> dict[str, Any]:
    try:
        fn = probes.resolve(request["probe"])
    except Exception as exc:  # noqa: BLE001 - an unknown probe name
        return {"ok": False, "error": {"kind": "harness", "type": type(exc).__name__,
                                       "message": str(exc), "traceback": ""}}
    try:
        probes.reset_state(tt)
        value = fn(tt, *request.get("args", []), **request.get("kwargs", {}))
        return {"ok": True, "value": value}
    except BaseException as exc:  # noqa: BLE001 - SystemExit from student code included
        return {"ok": False, "error": describe_exception(exc, root)}
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fd-in", type=int, required=True)
    parser.add_argument("--fd-out", type=int, required=True)
    parser.add_argument("--memory-mb", type=int, default=4096)
    parser.add_argument("--file-mb", type=int, default=512)
    parser.add_argument("--nproc", type=int, default=0)
    parser.add_argument("--nofile", type=int, default=0)
    parser.add_argument("--uid", type=int, default=-1)
    parser.add_argument("--gid", type=int, default=-1)
    parser.add_argument("--namespaces", action="store_true")
    parser.add_argument("submission")
    args = parser.parse_args()
    probes = seal_grader_modules()
    if args.uid >= 0:
        drop_privileges(args.uid, args.gid, args.namespaces)
    no_new_privileges()
    set_limits(args.memory_mb, args.file_mb, args.nproc, args.nofile)
    install_import_blocker()
    # on a deadline the grader sends SIGUSR1 first: the stack shows where the code hung
    faulthandler.register(signal.SIGUSR1, all_threads=False)
    serve(args.fd_in, args.fd_out, os.path.realpath(args.submission), probes)


if __name__ == "__main__":
    main()
