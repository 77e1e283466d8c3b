"""Compile one kernel of a submission for sm_90 (H100/H200) without a GPU.

Run by ``graders.probes.cuda.compile`` as a child process of the worker, with
``TRITON_INTERPRET=0`` (the worker runs the interpreter, under which kernels cannot be
compiled): ``python _cuda_compile.py '<json request>'``. It builds each kernel from the
source text the grader checked (``_cuda_source``: the same text and constexprs the
interpreter runs; the submission's package is never imported here), compiles it with
``triton.compile`` for ``GPUTarget("cuda", 90, 32)``
(Triton runs ptxas, one child process at a time) and writes a JSON summary of the PTX to
the request's result path. torch and other array libraries cannot be imported here either.
"""

from __future__ import annotations

import ast
import importlib.abc
import inspect
import json
import linecache
import re
import sys
import textwrap
from typing import Any

from graders.probes import _cuda_source  # the child's PYTHONPATH holds the grader's package

BLOCKED = frozenset({"torch", "jax", "jaxlib", "tensorflow", "cupy", "functorch"})


class _Block(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> None:
        if fullname.partition(".")[0] in BLOCKED:
            raise ImportError(f"import of {fullname!r} is blocked while grading")
        return None


def stub_message(fn: Any) -> str | None:
    """The message of a ``raise NotImplementedError("...")`` in the kernel's body: the
    template's stub (a raise does not compile, and must not read as a compile error)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            func = node.exc.func
            if isinstance(func, ast.Name) and func.id == "NotImplementedError":
                args = node.exc.args
                if args and isinstance(args[0], ast.Constant):
                    return str(args[0].value)
                return "NotImplementedError"
    return None


def _where(error: BaseException, fn: Any, where: str) -> str:
    """'tinytrain/cuda/x.py, line N' for the line a CompilationError points at (``where``:
    the file's path in the submission)."""
    message = str(error)
    lines = message.splitlines()
    caret = next((i for i, line in enumerate(lines) if line.strip() == "^"), None)
    try:
        path = inspect.getsourcefile(fn) or ""
        source = [line.rstrip("\n") for line in linecache.getlines(path)]
    except (OSError, TypeError):
        return ""
    if caret is None or caret == 0:
        return where
    wanted = lines[caret - 1].rstrip()
    first = inspect.getsourcelines(fn)[1]
    for number in range(first - 1, len(source)):
        if source[number].rstrip().endswith(wanted.strip()) and wanted.strip():
            return f"{where}, line {number + 1}"
    return where


def summarise(ptx: str, metadata: Any) -> dict[str, Any]:
    """Counts of the PTX instructions that matter for the checks."""
    opcodes = re.findall(r"^\s*(?:@%p\d+\s+)?([a-z][\w.]*)", ptx, re.MULTILINE)
    mma = [op for op in opcodes if op.startswith(("mma.", "wgmma.mma_async"))]
    target = re.search(r"^\.target\s+(\S+)", ptx, re.MULTILINE)
    return {
        "target": target.group(1) if target else "",
        "wgmma": sum(op.startswith("wgmma.mma_async") for op in opcodes),
        "mma": sum(op.startswith("mma.") for op in opcodes),
        "tf32": sum(".tf32" in op for op in mma),
        "mma_kinds": sorted(set(mma))[:12],
        "ld_global": sum(op.startswith("ld.global") for op in opcodes),
        "st_global": sum(op.startswith("st.global") for op in opcodes),
        "instructions": len(opcodes),
        "shared_bytes": int(getattr(metadata, "shared", 0) or 0),
        "num_warps": int(getattr(metadata, "num_warps", 0) or 0),
    }


def compile_one(triton: Any, item: dict[str, Any]) -> dict[str, Any]:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.runtime.jit import JITFunction

    source = item["source"]
    where = source["modules"][source["module"]]["path"]
    try:
        kernel = _cuda_source.build(triton, source)
    except Exception as exc:  # noqa: BLE001 - the def itself does not build
        return {"error": {"type": type(exc).__name__, "message": str(exc)[-3000:],
                          "where": where}}
    if not isinstance(kernel, JITFunction):
        return {"error": {"type": "TypeError", "where": "",
                          "message": f"{item['kernel']} is not a @triton.jit kernel"}}
    stub = stub_message(kernel.fn)
    if stub is not None:
        return {"not_implemented": stub}
    try:
        compiled = triton.compile(
            ASTSource(kernel, item["signature"], constexprs=item["constexprs"]),
            target=GPUTarget("cuda", 90, 32))
    except Exception as exc:  # noqa: BLE001 - the student's compile error is the observation
        return {"error": {"type": type(exc).__name__, "message": str(exc)[-3000:],
                          "where": _where(exc, kernel.fn, where)}}
    return {"error": None, **summarise(compiled.asm["ptx"], compiled.metadata)}


def main() -> None:
    request = json.loads(sys.argv[1])
    sys.meta_path.insert(0, _Block())
    import triton

    results = [compile_one(triton, item) for item in request["kernels"]]
    with open(request["result"], "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main()
