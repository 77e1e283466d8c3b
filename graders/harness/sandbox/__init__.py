"""Where and as whom the worker runs, and what is cleaned up after it (grader side only;
the worker never imports this package).

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

The package, by concern: ``processes`` (the reaper, killing what was started),
``user`` (the worker user and what it leaves behind), ``environment`` (the worker
environment), ``submission`` (checking and copying it), ``lockdown`` (the grader's files
away from the worker user), ``grading`` (``Sandbox``: one grading). The score files are
written by ``graders.report.files``.
"""

from importlib import metadata  # tests patch ``sandbox.metadata.distribution``

from .base import GRADERS_DIR, STATE_ROOT, SandboxError, is_root, log
from .environment import (
    ENV_FORMAT,
    OPTIONAL_DISTRIBUTIONS,
    READABLE_GRADER_FILES,
    STDLIB_SKIP,
    WORKER_DISTRIBUTIONS,
    WORKER_FILES,
    WORKER_PACKAGES,
    WorkerEnv,
    _copy_python,
    _link_or_copy,
    _private_copy,
    check_imports,
    env_cache_root,
    env_key,
    env_size,
    import_names,
    repair_env,
    seal_grader_files,
    shareable,
    worker_env,
    worker_modules,
)
from .grading import PASS_THROUGH, Limits, Sandbox
from .lockdown import lock_down, readable_by, sensitive_paths
from .processes import Proc, ProcessGuard, kill_user_processes, processes, user_processes
from .submission import (
    COMPILED_SUFFIXES,
    MAX_SUBMISSION_BYTES,
    MAX_SUBMISSION_FILES,
    SubmissionRefused,
    check_submission,
)
from .user import (
    DEFAULT_USER,
    MAX_USERS,
    PSEUDO_FILESYSTEMS,
    SCAN_DEPTH,
    WORLD_WRITABLE,
    WorkerUser,
    WritableScan,
    acquire_user,
    ensure_user,
    remove_user_files,
    remove_user_ipc,
    writable_folders,
)

__all__ = [
    "COMPILED_SUFFIXES", "DEFAULT_USER", "ENV_FORMAT", "GRADERS_DIR", "MAX_SUBMISSION_BYTES",
    "MAX_SUBMISSION_FILES", "MAX_USERS", "OPTIONAL_DISTRIBUTIONS", "PASS_THROUGH",
    "PSEUDO_FILESYSTEMS", "READABLE_GRADER_FILES", "SCAN_DEPTH", "STATE_ROOT", "STDLIB_SKIP",
    "WORKER_DISTRIBUTIONS", "WORKER_FILES", "WORKER_PACKAGES", "WORLD_WRITABLE", "Limits",
    "Proc", "ProcessGuard", "Sandbox", "SandboxError", "SubmissionRefused", "WorkerEnv",
    "WorkerUser", "WritableScan", "_copy_python", "_link_or_copy", "_private_copy",
    "acquire_user", "check_imports", "check_submission", "ensure_user",
    "env_cache_root", "env_key", "env_size", "import_names", "is_root", "kill_user_processes",
    "lock_down", "log", "metadata", "processes", "readable_by",
    "remove_user_files", "remove_user_ipc", "repair_env", "seal_grader_files",
    "sensitive_paths", "shareable", "user_processes", "worker_env",
    "worker_modules", "writable_folders",
]
