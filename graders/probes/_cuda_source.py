"""Building a submission's kernels from the source text the grader sent
(``graders.probes._cuda_ast``), in a namespace of their own.

Only the ``@triton.jit`` functions the grader checked are compiled, each from its own
``def`` in the module's text (line numbers kept, so errors point at the file's lines);
their globals hold ``triton.language`` under the module's names for it, the module's
literal constexprs, the other jit functions, and a few builtins. The module's top-level
code never runs: what the interpreter runs here is what the compile child builds for
sm_90 from the same text, with the same constexprs.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import hashlib
import json
import linecache
from typing import Any

# the builtins a kernel may name (graders.probes._cuda_ast.BUILTINS)
_BUILTINS = ("range", "min", "max", "len", "float", "int", "bool", "abs", "print", "tuple",
             "zip", "enumerate", "isinstance", "NotImplementedError", "ValueError",
             "AssertionError")
_FILES = "<tinytrain kernel source>"


def _key(source: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(source, sort_keys=True).encode()).hexdigest()


def build(triton: Any, source: dict[str, Any], cache: dict[str, Any] | None = None) -> Any:
    """The kernel ``source["kernel"]`` built with ``triton.jit`` (an InterpretedFunction
    under the interpreter, a JITFunction otherwise) from ``source`` (the grader's
    ``KernelSource.wire()``)."""
    key = _key(source)
    if cache is not None and key in cache:
        return cache[key]
    tl = triton.language
    restricted = {name: getattr(builtins, name) for name in _BUILTINS}
    spaces: dict[str, dict[str, Any]] = {}
    for mod, info in source["modules"].items():
        filename = f"{_FILES}/{key[:12]}/{info['path']}"
        text = str(info["text"])
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        ns: dict[str, Any] = {"__name__": f"tinytrain_kernels.{mod}", "__file__": filename,
                              "__builtins__": restricted}
        for alias in info["tl"]:
            ns[str(alias)] = tl
        for name, value in info["constants"].items():
            ns[str(name)] = tl.constexpr(value)
        tree = ast.parse(text, filename=filename)
        wanted = set(info["functions"])
        defs = {node.name: node for node in tree.body
                if isinstance(node, ast.FunctionDef) and node.name in wanted}
        missing = wanted - set(defs)
        if missing:
            raise RuntimeError(f"the kernel source lacks {sorted(missing)}")
        for name, node in defs.items():
            node.decorator_list = []
            code = compile(ast.Module(body=[node], type_ignores=[]), filename, "exec",
                           flags=__future__.annotations.compiler_flag, dont_inherit=True)
            exec(code, ns)  # the checked def alone, in its own namespace
            ns[name] = triton.jit(ns[name], **dict(info["jit_kwargs"].get(name, {})))
        spaces[mod] = ns
    for mod, info in source["modules"].items():
        for local, (other, name) in info["imports"].items():
            spaces[mod][str(local)] = spaces[str(other)][str(name)]
    kernel = spaces[source["module"]][source["kernel"]]
    if cache is not None:
        cache[key] = kernel
    return kernel
