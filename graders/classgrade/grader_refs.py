"""References to the grader's own modules in a submission (``graders.probes`` and the
rest): an import, or the name in a string (``importlib.import_module("graders...")``).

The worker blocks such imports, and as root the files are unreadable to it; this finds
the attempt itself, which similarity cannot (an import shares no tokens with the code it
names), so the class report can flag it. Read as text, never imported.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

GRADER_PACKAGE = "graders"
_NAME = re.compile(r"\bgraders(?:\.\w+|/\w+)+|\bgraders\b")
MAX_FILES = 2000
MAX_BYTES = 2 << 20


def _in_code(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == GRADER_PACKAGE:
                    found.append((node.lineno, f"import {alias.name}"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] == GRADER_PACKAGE:
                found.append((node.lineno, f"from {node.module} import ..."))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = _NAME.search(node.value)
            if match and (match.group(0) != GRADER_PACKAGE or node.value == GRADER_PACKAGE):
                found.append((node.lineno, f"the name {match.group(0)!r} in a string"))
    return found


def grader_references(submission: Path) -> list[str]:
    """``"tinytrain/x.py:12: import graders.probes"`` for each reference in the
    submission's ``tinytrain/`` (symbolic links not followed), in file order."""
    package = submission / "tinytrain"
    if not package.is_dir() and (submission / "__init__.py").is_file():
        package = submission  # the package's own files, uploaded at the top
    found: list[str] = []
    files = 0
    for root, dirs, names in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            path = Path(root) / name
            if not name.endswith(".py") or path.is_symlink():
                continue
            files += 1
            if files > MAX_FILES:
                return found
            try:
                text = path.read_bytes()[:MAX_BYTES].decode("utf-8", "replace")
            except OSError:
                continue
            rel = Path("tinytrain") / path.relative_to(package)
            try:
                hits = _in_code(ast.parse(text))
            except (SyntaxError, ValueError, RecursionError):
                hits = [(text.count("\n", 0, m.start()) + 1, f"the name {m.group(0)!r}")
                        for m in _NAME.finditer(text) if m.group(0) != GRADER_PACKAGE]
            found += [f"{rel}:{line}: {what}" for line, what in sorted(set(hits))]
    return found
