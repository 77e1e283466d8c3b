"""The tinytrain autograder.

Kept import-light on purpose: the sandboxed worker imports ``graders.harness`` and
``graders.probes`` only, and must never pull in torch or the trusted checking code.
"""

__version__ = "0.1.0"
