"""Hostile submissions for the sandbox tests: the student template with attacks appended to
a homework file run at import (``HOOK_FILE``). Each attack prints one line, ``A:<name>:held:<why>`` when
the sandbox stopped it or ``A:<name>:BROKE:<what it got>`` when it worked; the tests read
those lines from the graded output and the score files.

``attack`` below is appended (by its source text) to the submission with a ``CONFIG``
naming the attacks to run and what each may aim at; it runs while the worker imports the
submission, so as the worker user, inside the worker's limits."""

from __future__ import annotations

import inspect
import json
import shutil
from pathlib import Path
from typing import Any

from .conftest import TEMPLATE


def attack(cfg: dict[str, Any]) -> None:
    import contextlib
    import ctypes
    import json
    import os
    import resource
    import signal
    import socket
    import subprocess
    import sys
    import time

    grader = os.getppid()  # the worker's parent is the grader
    wanted = set(cfg["attacks"])

    def say(name: str, held: bool, detail: object = "") -> None:
        line = f"A:{name}:{'held' if held else 'BROKE'}:{str(detail)[:50]}"
        print(line, flush=True)
        if cfg.get("report_file"):  # in the grader's process (the control), prints are lost
            with open(cfg["report_file"], "a") as f:
                f.write(line + "\n")

    def run(name: str, fn: Any) -> None:
        """fn returns evidence (truthy) when the attack worked, raises or returns a false
        value when it was stopped."""
        if name.split("#")[0] not in wanted:
            return
        try:
            got = fn()
        except BaseException as exc:  # noqa: BLE001 - any failure means it was held
            say(name, True, type(exc).__name__)
        else:
            say(name, not got, got)

    # ----- torch, by every route ---------------------------------------------------
    def fresh_path() -> Any:
        saved = (list(sys.meta_path), list(sys.path))
        modules = {m: v for m, v in sys.modules.items() if m.partition(".")[0] == "torch"}

        def restore() -> None:
            sys.meta_path[:], sys.path[:] = saved
            for name in [m for m in sys.modules if m.partition(".")[0] == "torch"]:
                if name not in modules:
                    del sys.modules[name]
        return restore

    def without_blocker() -> None:
        sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "_BlockImports"]

    def import_torch() -> str:
        import importlib

        torch = importlib.import_module("torch")
        if getattr(torch, "__file__", None) is None:
            # a folder the worker may see but not enter imports as an empty namespace
            # package (a world-readable virtual environment): no torch to use
            return ""
        return f"torch {torch.__version__}"

    def torch_blocker_removed() -> str:
        restore = fresh_path()
        try:
            without_blocker()
            return import_torch()
        finally:
            restore()

    def torch_find_spec_patched() -> str:
        restore = fresh_path()
        try:
            for finder in sys.meta_path:
                if type(finder).__name__ == "_BlockImports":
                    finder.find_spec = lambda *args, **kwargs: None
            return import_torch()
        finally:
            restore()

    def torch_own_finder() -> str:
        from importlib.machinery import PathFinder

        class First:
            def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
                if name.partition(".")[0] == "torch":
                    return PathFinder.find_spec(name, path or cfg["site_dirs"])
                return None

        restore = fresh_path()
        try:
            sys.meta_path.insert(0, First())
            return import_torch()
        finally:
            restore()

    def torch_sys_path() -> str:
        import importlib.util

        restore = fresh_path()
        try:
            without_blocker()
            sys.path.extend(cfg["site_dirs"])
            if importlib.util.find_spec("torch") is None:
                return ""
            return import_torch()
        finally:
            restore()

    def torch_child(exe: str) -> Any:
        def go() -> str:
            # torch found is torch used: a folder the worker may see but not enter is an
            # empty namespace package to find_spec (a world-readable virtual environment)
            code = "import torch; print('TORCH', float(torch.ones(2).sum()))"
            env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(cfg["site_dirs"]),
                   "LD_LIBRARY_PATH": ":".join(cfg.get("lib_dirs", []))}
            done = subprocess.run([exe, "-c", code], capture_output=True, text=True,
                                  timeout=60, env=env)
            return "found torch" if "TORCH" in done.stdout else ""
        return go

    run("torch-blocker-removed", torch_blocker_removed)
    run("torch-find-spec-patched", torch_find_spec_patched)
    run("torch-own-finder", torch_own_finder)
    run("torch-sys-path", torch_sys_path)
    for i, exe in enumerate([*cfg["pythons"], sys.executable]):
        run(f"torch-child#{i}", torch_child(exe))

    # ----- the grader's own code and the solution ----------------------------------
    def oracle_import() -> str:
        import importlib

        saved = {k: v for k, v in sys.modules.items() if k == "graders" or k.startswith("graders.")}
        restore = fresh_path()
        try:
            for name in saved:
                del sys.modules[name]
            sys.path[:0] = cfg["sources"]
            oracle = importlib.import_module("graders.oracle")
            return f"graders.oracle from {oracle.__file__}"
        finally:
            restore()
            sys.modules.update(saved)

    def grader_site() -> str:
        """The folder on sys.path that holds the grader's worker side (found by path:
        the grader's modules are sealed, so they cannot be imported to ask them)."""
        return next((p for p in sys.path if os.path.isdir(os.path.join(p, "graders"))), "")

    def install_dirs() -> list[str]:
        return [*cfg["sources"], grader_site(), f"/proc/{grader}/cwd", "/autograder/source"]

    def oracle_on_disk() -> str:
        for src in install_dirs():
            path = os.path.join(src, "graders", "oracle", "__init__.py")
            with contextlib.suppress(OSError):
                with open(path) as f:
                    f.read()
                return f"read {path}"
        return ""

    def solution() -> str:
        """Copy the reference over this package and run it: full marks if it works."""
        package = __name__.partition(".")[0]
        here = os.path.dirname(os.path.abspath(sys.modules[package].__file__))
        candidates = [*cfg["solutions"], *[os.path.join(d, "reference", "tinytrain")
                                           for d in install_dirs()]]
        for cand in candidates:
            with contextlib.suppress(OSError):
                with open(os.path.join(cand, "__init__.py")) as f:
                    f.read()
                import shutil as sh

                sh.copytree(cand, here, dirs_exist_ok=True)
                with open(os.path.join(here, "__init__.py")) as f:
                    code = f.read()
                for name in [m for m in sys.modules if m.startswith(package + ".")]:
                    del sys.modules[name]  # import the stolen modules, not the stubs
                exec(compile(code, os.path.join(here, "__init__.py"), "exec"),
                     sys.modules[package].__dict__)
                return f"re-exported {cand}"
        return ""

    run("oracle-import", oracle_import)
    run("oracle-on-disk", oracle_on_disk)
    run("solution", solution)

    # ----- secrets -----------------------------------------------------------------
    def seed_env() -> str:
        found = [k for k in os.environ if "SEED" in k and k != "PYTHONHASHSEED"]
        return f"env {found} of {sorted(os.environ)}" if found else ""

    def seed_proc() -> str:
        found = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            for what in ("environ", "cmdline"):
                with contextlib.suppress(OSError):
                    with open(f"/proc/{pid}/{what}", "rb") as f:
                        data = f.read()
                    for item in data.split(b"\0"):
                        if b"TINYTRAIN_GRADER_SEED=" in item or item.startswith(b"--seed="):
                            found.append(item.decode(errors="replace"))
                    if b"--seed" in data.split(b"\0"):
                        args = data.split(b"\0")
                        found.append(args[args.index(b"--seed") + 1].decode())
        return f"found {found}" if found else ""

    def seed_file() -> str:
        with open(cfg["seed_file"]) as f:
            return f"seed file says {f.read().strip()}"

    def listing(path: str) -> Any:
        return lambda: f"listed {os.listdir(path)[:3]}"

    if "environment" in wanted:  # what the worker was started with
        print("ENVKEYS " + ",".join(sorted(os.environ)), flush=True)
        print("SYSPATH " + "|".join(sys.path), flush=True)
        print("ARGV " + " ".join(sys.argv), flush=True)
    run("seed-env", seed_env)
    run("seed-proc", seed_proc)
    if cfg.get("seed_file"):
        run("seed-file", seed_file)
    run("read-out", listing(cfg["out"]))
    run("read-submission", listing(cfg["submission"]))

    # ----- the grader's install ----------------------------------------------------
    def tamper(path: str) -> Any:
        def go() -> str:
            with open(path, "a") as f:
                f.write("\n# tampered by a submission\n")
            return f"appended to {path}"
        return go

    import numpy

    probes_init = os.path.join(grader_site(), "graders", "probes", "__init__.py")
    targets = [*cfg["tamper"], probes_init, numpy.__file__]
    for i, path in enumerate(targets):
        run(f"tamper#{i}", tamper(path))

    # ----- limits ------------------------------------------------------------------
    def raise_limit(kind: int) -> Any:
        def go() -> str:
            resource.setrlimit(kind, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            return "raised to infinity"
        return go

    def memory() -> str:
        block = bytearray(5 << 30)
        return f"held {len(block) >> 30} GiB"

    def big_file(folder: str) -> Any:
        def go() -> str:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            path = os.path.join(folder, f"tinytrain-attack-{os.getpid()}")
            chunk = b"x" * (1 << 20)
            written = 0
            try:
                with open(path, "wb") as f:
                    for _ in range(cfg["big_file_mb"]):
                        written += f.write(chunk)
            except OSError:
                pass
            print(f"BIGFILE {path} {written}", flush=True)
            return f"wrote {written >> 20} MiB" if written >> 20 >= cfg["big_file_mb"] else ""
        return go

    def fork_many() -> str:
        count = 0
        try:
            for _ in range(cfg["fork_max"]):
                pid = os.fork()
                if pid == 0:
                    time.sleep(600)
                    os._exit(0)
                count += 1
        except OSError as exc:
            print(f"FORKS {count} then errno {exc.errno}", flush=True)
            return ""
        return f"forked {count}"

    run("rlimit-as", raise_limit(resource.RLIMIT_AS))
    run("rlimit-fsize", raise_limit(resource.RLIMIT_FSIZE))
    run("rlimit-nproc", raise_limit(resource.RLIMIT_NPROC))
    run("memory", memory)
    for i, folder in enumerate(cfg.get("big_file_dirs", [])):
        run(f"big-file#{i}", big_file(folder))

    # ----- network (held only where the worker gets its own network namespace) ----
    def network() -> str:
        with socket.create_connection(("127.0.0.1", cfg["port"]), timeout=3):
            return f"connected to 127.0.0.1:{cfg['port']}"

    if cfg.get("port"):
        run("network", network)

    # ----- acting on the grader ------------------------------------------------------
    def forge() -> str:
        fake = json.dumps({"score": 1e6, "max_score": 1e6, "forged": True})
        for name in ("score.json", "results.json", "classroom.json"):
            with open(os.path.join(cfg["out"], name), "w") as f:
                f.write(fake)
        return "forged score files"

    def score_dir() -> str:
        path = os.path.join(cfg["out"], "score.json")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        os.mkdir(path)
        with open(os.path.join(path, "x"), "w") as f:
            f.write("in the way")
        return "score.json is a folder now"

    def daemon() -> str:
        """Leaves the session; once the grader is gone, forges the score files and kills
        every process of its user (the next grading's) for a while."""
        first = os.fork()
        if first == 0:
            os.setsid()
            if os.fork() == 0:
                try:
                    null = os.open(os.devnull, os.O_RDWR)
                    for fd in (0, 1, 2):
                        os.dup2(null, fd)
                    os.closerange(3, 4096)
                    while os.path.exists(f"/proc/{grader}"):
                        time.sleep(0.05)
                    end = time.time() + cfg["daemon_s"]
                    while time.time() < end:
                        with contextlib.suppress(OSError):
                            forge()
                        with contextlib.suppress(OSError):
                            os.kill(-1, signal.SIGKILL)
                        time.sleep(0.05)
                finally:
                    os._exit(0)
            os._exit(0)
        os.waitpid(first, 0)
        print("DAEMON started", flush=True)
        return ""

    def ptrace() -> str:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.ptrace(16, grader, 0, 0) == 0:  # PTRACE_ATTACH
            libc.ptrace(17, grader, 0, 0)  # PTRACE_DETACH
            return f"attached to the grader {grader}"
        return ""

    def send(sig: int, group: bool) -> Any:
        def go() -> str:
            # said first: the grader may stop this worker before the line after the kill
            say(f"signal-{signal.Signals(sig).name}{'#group' if group else ''}", False,
                "sending")
            if group:
                os.killpg(os.getpgid(grader), sig)
            else:
                os.kill(grader, sig)
            if sig == signal.SIGSTOP:
                time.sleep(1)
                os.kill(grader, signal.SIGCONT)
            return f"sent {signal.Signals(sig).name}"
        return go

    run("daemon", daemon)
    run("ptrace", ptrace)
    run("forge", forge)
    run("score-dir", score_dir)
    run("fork-many", fork_many)
    for name in cfg.get("signals", []):
        sig = getattr(signal, name)
        run(f"signal-{name}", send(sig, group=False))
        run(f"signal-{name}#group", send(sig, group=True))


# a file with a homework region that ``import tinytrain`` runs: code a submission adds
# runs from there (the given files, tinytrain/__init__.py among them, are put back by the
# grader before grading, so what is appended to them never runs)
HOOK_FILE = "ops/arithmetic.py"


def hostile_submission(folder: Path, cfg: dict[str, Any]) -> Path:
    """The template with ``attack(cfg)`` run at the end of ``HOOK_FILE``."""
    shutil.copytree(TEMPLATE / "tinytrain", folder / "tinytrain",
                    ignore=shutil.ignore_patterns("__pycache__"))
    hook = folder / "tinytrain" / HOOK_FILE
    source = inspect.getsource(attack)
    call = f"attack(__import__('json').loads({json.dumps(cfg)!r}))"
    hook.write_text(hook.read_text() + "\n\nfrom typing import Any\n\n\n" + source + "\n\n" +
                    call + "\n")
    return folder


def with_init(folder: Path, code: str) -> Path:
    """The template with ``code`` appended to ``HOOK_FILE`` (run by ``import tinytrain``)."""
    shutil.copytree(TEMPLATE / "tinytrain", folder / "tinytrain",
                    ignore=shutil.ignore_patterns("__pycache__"))
    hook = folder / "tinytrain" / HOOK_FILE
    hook.write_text(hook.read_text() + "\n" + code)
    return folder


def reports(score: dict[str, Any], extra: str = "") -> dict[str, tuple[str, str]]:
    """{attack: (held or BROKE, detail)} from every test's output in ``score`` (and from
    ``extra``, a report file's text)."""
    found: dict[str, tuple[str, str]] = {}
    texts = [t.get("output", "") for task in score.get("tasks", []) for t in task["tests"]]
    texts.append(extra)
    for text in texts:
        for line in text.splitlines():
            if line.startswith("A:"):
                _, name, verdict, detail = [*line.split(":", 3), ""][:4]
                # a signal attack says "sending" first; its outcome, if it lived, wins
                if name not in found or found[name][1] == "sending":
                    found[name] = (verdict, detail)
    return found


def lines_with(score: dict[str, Any], prefix: str) -> list[str]:
    texts = [t.get("output", "") for task in score.get("tasks", []) for t in task["tests"]]
    return [line for text in texts for line in text.splitlines() if line.startswith(prefix)]
