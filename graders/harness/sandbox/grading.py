"""The sandbox of one grading: set up (worker user, environment, locked-down files, a
staged copy of the submission), a scratch folder and a command per worker, torn down."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .. import pristine
from .base import is_root, log
from .environment import WorkerEnv, check_imports, repair_env, worker_env
from .lockdown import lock_down, sensitive_paths
from .processes import ProcessGuard, kill_user_processes, processes
from .submission import SubmissionRefused, _copy_package, check_submission
from .user import WorkerUser, WritableScan, _state_dir, acquire_user, remove_user_files, remove_user_ipc

# the only variables a worker inherits from the grader's environment (not secrets)
PASS_THROUGH = ("CUDA_VISIBLE_DEVICES", "TRITON_INTERPRET")



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
