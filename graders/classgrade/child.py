"""``python -m graders.classgrade.child SUBMISSION --out DIR ...``: the per-submission grader
(``graders.cli``) as a class grading runs it, taking a secret seed from the environment.

The seed arrives in ``TINYTRAIN_GRADER_SEED`` and is handed to the grader inside this
process, so it never appears on a command line (``/proc/PID/cmdline`` is readable by every
user, student code included); it is removed from the environment first, so the worker
this grader starts does not inherit it.
"""

from __future__ import annotations

import os
import sys

from .. import cli

SEED_ENV = "TINYTRAIN_GRADER_SEED"


def main(argv: list[str]) -> int:
    seed = os.environ.pop(SEED_ENV, None)
    if seed is not None and "--seed" not in argv:
        argv = [*argv, "--seed", seed]
    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
