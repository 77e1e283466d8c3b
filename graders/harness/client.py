"""Grader-side clients that run probes against a submission.

``SandboxClient`` runs them in a separate worker process with a deadline per call and
restarts the worker after a hang or crash; ``InProcessClient`` runs them directly (for
debugging with pdb). Both return plain observations or raise a ``ProbeOutcome``.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from . import protocol
from .errors import (
    HarnessError,
    NotImplementedInSubmission,
    ProbeOutcome,
    ProbeTimeout,
    SubmissionImportError,
    SubmissionRaised,
    WorkerCrashed,
)
from .sandbox import Sandbox


def outcome_from_error(error: dict[str, Any]) -> ProbeOutcome:
    """Map a worker's error description to the matching ProbeOutcome."""
    kind = error.get("kind")
    exc_type = str(error.get("type", "Exception"))
    message = str(error.get("message", ""))
    detail = str(error.get("traceback", ""))
    if kind == "not_implemented":
        return NotImplementedInSubmission(f"NotImplementedError: {message}", detail)
    if kind == "import":
        return SubmissionImportError(
            f"the submission could not be imported: {exc_type}: {message}", detail
        )
    if kind == "harness":
        return HarnessError(f"internal grader error: {exc_type}: {message}", detail)
    if exc_type == "BdbQuit":  # pdb found no terminal: the grader's input is no keyboard
        where = [line.strip() for line in detail.splitlines() if line.strip().startswith("File")]
        at = f" ({where[-1]})" if where else ""
        return SubmissionRaised(exc_type, "a breakpoint() or pdb.set_trace() left in your code "
                                f"stopped it{at}: the grader runs your code with no terminal; "
                                "remove it before grading")
    return SubmissionRaised(exc_type, message, detail)


_DUMP_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line \d+ in ')


def tidy(text: str, submission: Path, scratch: Path) -> str:
    """What a worker printed or reported, as a student reads it: paths into the worker's
    copy of the submission relative to it (``tinytrain/ops/x.py``), its scratch folder
    as ``~`` (its home), and the grader's own frames of a stack dump left out."""
    if not text:
        return text
    roots = {str(submission), os.path.realpath(submission)}
    homes = {str(scratch), os.path.realpath(scratch)}
    lines = []
    for line in text.splitlines(keepends=True):
        frame = _DUMP_FRAME.match(line)
        if frame and not any(frame["file"].startswith(r + os.sep) for r in roots):
            continue  # a frame of the worker or a probe: nothing a student can act on
        lines.append(line)
    text = "".join(lines)
    for root in sorted(roots, key=len, reverse=True):
        text = text.replace(root + os.sep, "")
    for home in sorted(homes, key=len, reverse=True):
        text = text.replace(home, "~")
    return text


def hang_site(dump: str, submission: Path) -> str:
    """The submission's frames in a faulthandler dump: where the code was stuck
    (``submission`` is the folder holding the worker's copy of ``tinytrain/``)."""
    root = str(submission)
    frames = []
    for line in dump.splitlines():
        line = line.strip()
        if line.startswith('File "') and root in line:
            frames.append("  " + line.replace(root + os.sep, ""))
    if not frames:
        return ""
    # faulthandler prints the innermost frame first
    return "it was running (innermost first):\n" + "\n".join(frames[:8])


class OutputCapture:
    """Drains the worker's stdout/stderr on a thread: keeps the first ``cap`` bytes and
    the last ``tail`` bytes, counts the rest, so endless printing costs nothing."""

    def __init__(self, stream: Any, cap: int, tail: int = 2048) -> None:
        self._stream = stream
        self._cap = cap
        self._tail_cap = tail
        self._lock = threading.Lock()
        self._reset()
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _reset(self) -> None:
        self._head = bytearray()
        self._tail = bytearray()
        self._dropped = 0

    def _drain(self) -> None:
        fd = self._stream.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            with self._lock:
                room = self._cap - len(self._head)
                if room > 0:
                    self._head += chunk[:room]
                    chunk = chunk[room:]
                if chunk:
                    self._tail += chunk
                    excess = len(self._tail) - self._tail_cap
                    if excess > 0:
                        self._dropped += excess
                        del self._tail[:excess]

    def take(self) -> str:
        """The output kept since the last call, with a note of how much was dropped."""
        with self._lock:
            text = self._head.decode("utf-8", "replace")
            if self._dropped:
                text += f"\n[... {self._dropped} bytes of output dropped ...]\n"
            text += self._tail.decode("utf-8", "replace")
            self._reset()
        return text

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


class _Worker:
    """One worker process and its pipes, in a fresh scratch folder of the sandbox."""

    def __init__(self, sandbox: Sandbox, output_cap: int, cuda: bool = True) -> None:
        self.sandbox = sandbox
        self.scratch, self.submission = sandbox.new_scratch()
        to_worker_r, self.to_worker = os.pipe()
        self.from_worker, from_worker_w = os.pipe()
        # the grader never blocks on a write: a worker that stops reading meets the deadline
        fcntl.fcntl(self.to_worker, fcntl.F_SETFL,
                    fcntl.fcntl(self.to_worker, fcntl.F_GETFL) | os.O_NONBLOCK)
        cmd, env = sandbox.worker_command(to_worker_r, from_worker_w, self.scratch,
                                          self.submission)
        if not cuda:  # no assignment-6 task: the worker skips loading triton
            cmd = [*cmd[:-1], "--no-cuda", cmd[-1]]
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=(to_worker_r, from_worker_w),
            cwd=self.scratch,
            env=env,
            start_new_session=True,
        )
        sandbox.guard.own_children.add(self.proc.pid)
        os.close(to_worker_r)
        os.close(from_worker_w)
        self.capture = OutputCapture(self.proc.stdout, output_cap)

    def send(self, message: dict[str, Any], deadline: float) -> None:
        """Write a whole request before ``deadline`` (TimeoutError otherwise)."""
        data = memoryview(protocol.encode(message))
        while data:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            _, ready, _ = select.select([], [self.to_worker], [], remaining)
            if not ready:
                raise TimeoutError
            try:
                data = data[os.write(self.to_worker, data):]
            except BlockingIOError:
                continue

    def receive(self, deadline: float) -> Any:
        def read(fd: int, n: int) -> bytes:
            chunks = []
            while n:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError
                ready, _, _ = select.select([fd], [], [], remaining)
                if not ready:
                    raise TimeoutError
                chunk = os.read(fd, min(n, 1 << 20))
                if not chunk:
                    raise EOFError
                chunks.append(chunk)
                n -= len(chunk)
            return b"".join(chunks)

        return protocol.read_message(self.from_worker, read)

    def dump_stack(self) -> str:
        """Ask the worker (faulthandler) where it is, then return what it printed."""
        try:
            self.proc.send_signal(signal.SIGUSR1)
        except ProcessLookupError:
            return ""
        time.sleep(0.3)
        return self.capture.take()

    def kill(self) -> None:
        for kill in (os.kill, os.killpg):  # the worker, and its group if it kept it
            try:
                kill(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # it left its process group: kill it by pid
            self.proc.kill()
            self.proc.wait()
        self.sandbox.guard.own_children.discard(self.proc.pid)
        self.capture.join(1.0)
        self.close_fds()

    def stop(self) -> None:
        try:
            self.send({"cmd": "exit"}, time.monotonic() + 2)
            self.proc.wait(timeout=2)
        except (OSError, TimeoutError, subprocess.TimeoutExpired):
            pass
        self.kill()

    def close_fds(self) -> None:
        for fd in (self.to_worker, self.from_worker):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.proc.stdout:
            self.proc.stdout.close()
        self.sandbox.remove_scratch(self.scratch)

    def exit_description(self) -> str:
        code = self.proc.wait()
        if code < 0:
            name = signal.Signals(-code).name
            hint = " (likely the memory limit)" if name in ("SIGKILL", "SIGSEGV") else ""
            return f"was killed by {name}{hint}"
        return f"exited with code {code}"


class _SendTimeout(TimeoutError):
    """The worker did not take a request before the deadline (it stopped reading)."""


class SandboxClient:
    """Runs probes in a sandboxed worker process.

    Every call has a deadline (``call_timeout``), on sending the request and on reading
    the reply, and every test a time budget (``begin_test``). After a timeout or a crash
    the worker is killed, the rest of that test fails fast with the same reason, and the
    next test gets a fresh worker. A submission that cannot be imported (an error, a crash
    or a hang while importing) is remembered: ``fatal`` then gives that outcome for every
    remaining test without starting another worker.
    """

    def __init__(
        self,
        submission: Path,
        sandbox: Sandbox,
        call_timeout: float = 10.0,
        start_timeout: float = 30.0,
        output_cap: int = 2048,
        cuda: bool = True,
    ) -> None:
        """``cuda``: the worker loads and seals assignment 6's machinery before the
        submission (False where no assignment-6 task is graded: its probes then refuse)."""
        self.submission = Path(submission).resolve()
        self.sandbox = sandbox
        self.cuda = cuda
        self.call_timeout = call_timeout
        self.start_timeout = start_timeout
        self.output_cap = output_cap
        self._worker: _Worker | None = None
        self._import_error: ProbeOutcome | None = None
        self._poison: ProbeOutcome | None = None
        self._test_deadline = float("inf")
        self._output: list[str] = []

    def __repr__(self) -> str:  # shown in Hypothesis' falsifying examples: keep it stable
        return "submission"

    # ----- per-test bookkeeping ------------------------------------------------------
    def begin_test(self, budget: float) -> None:
        self._poison = None
        self._test_deadline = time.monotonic() + budget
        self._output = []
        if self._worker is not None:
            self._worker.capture.take()  # output between tests belongs to nobody

    def _take(self, worker: _Worker, text: str | None = None) -> str:
        """Output of ``worker`` (``text``, or what it printed since the last take), tidied."""
        return tidy(worker.capture.take() if text is None else text, worker.submission,
                    worker.scratch)

    def _error(self, worker: _Worker, error: Any) -> ProbeOutcome:
        error = dict(error) if isinstance(error, dict) else {}
        for key in ("message", "traceback"):
            if isinstance(error.get(key), str):
                error[key] = tidy(error[key], worker.submission, worker.scratch)
        return outcome_from_error(error)

    def end_test(self) -> str:
        self._test_deadline = float("inf")
        if self._worker is not None:
            self._output.append(self._take(self._worker))
        # whatever the worker started besides itself goes, and its files in shared places
        self.sandbox.after_test(live=[self._worker.proc.pid] if self._worker else [])
        return "".join(self._output).strip()

    def fatal(self) -> ProbeOutcome | None:
        """The remembered import failure, if any: every remaining test ends with it."""
        return self._import_error

    # ----- calls ----------------------------------------------------------------------
    def call(self, probe: str, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        """Run ``graders.probes.<probe>`` in the worker and return its observation."""
        if self._poison is not None:
            raise self._poison
        if self._import_error is not None:
            raise self._import_error
        worker = self._ensure_worker()
        limit = self.call_timeout if timeout is None else timeout
        deadline = min(time.monotonic() + limit, self._test_deadline)
        reply = self._exchange(worker, {"cmd": "call", "probe": probe, "args": list(args),
                                        "kwargs": kwargs}, deadline, probe, limit)
        if reply.get("ok"):
            return reply.get("value")
        raise self._error(worker, reply.get("error"))

    def _ensure_worker(self) -> _Worker:
        if self._worker is not None:
            return self._worker
        worker = _Worker(self.sandbox, self.output_cap, self.cuda)
        self._worker = worker
        start_deadline = time.monotonic() + self.start_timeout
        deadline = min(start_deadline, self._test_deadline)
        try:
            reply = self._exchange(worker, {"cmd": "hello"}, deadline, "import tinytrain",
                                   self.start_timeout)
        except ProbeTimeout as exc:
            if deadline >= start_deadline:  # the import itself hung, not a spent budget
                self._remember(exc)
            raise
        except ProbeOutcome as exc:  # a crash while importing: every worker would crash
            self._remember(exc)
            raise
        if not reply.get("ok"):
            error = self._error(worker, reply.get("error"))
            if isinstance(error, SubmissionImportError):
                self._remember(error)
            raise error
        return worker

    def _remember(self, outcome: ProbeOutcome) -> None:
        self._import_error = outcome
        self.close()

    def _exchange(self, worker: _Worker, request: dict[str, Any], deadline: float,
                  what: str, limit: float) -> dict[str, Any]:
        try:
            try:
                worker.send(request, deadline)
            except TimeoutError:
                raise _SendTimeout from None
            reply = worker.receive(deadline)
        except TimeoutError as exc:
            printed = worker.dump_stack()
            self._output.append(self._take(worker, printed))
            stack = hang_site(printed, worker.submission)
            self._discard_worker(kill=True)
            if deadline >= self._test_deadline:
                reason = "the test used up its time budget"
            elif isinstance(exc, _SendTimeout):
                reason = f"the worker took no request for {limit:g} s (it stopped reading)"
            else:
                reason = f"no answer within {limit:g} s"
            raise self._poisoned(ProbeTimeout(
                f"{what}: {reason} (an infinite loop or very slow code?); the worker was "
                "stopped", stack)) from None
        except (EOFError, BrokenPipeError, ConnectionResetError):
            description = self._discard_worker(kill=False)
            raise self._poisoned(WorkerCrashed(
                f"{what}: the worker process {description} (os._exit, a crash, or too much "
                "memory?); a fresh worker runs the next test")) from None
        except protocol.ProtocolError as exc:
            self._discard_worker(kill=True)
            error = HarnessError(f"{what}: bad message from the worker: {exc}")
            raise self._poisoned(error) from None
        if not isinstance(reply, dict):
            self._discard_worker(kill=True)
            raise self._poisoned(HarnessError(f"{what}: malformed reply from the worker"))
        return reply

    def _poisoned(self, outcome: ProbeOutcome) -> ProbeOutcome:
        self._poison = outcome
        return outcome

    def _discard_worker(self, kill: bool) -> str:
        worker, self._worker = self._worker, None
        if worker is None:
            return "stopped"
        if kill:
            worker.kill()
            description = "was stopped"
        else:
            description = worker.exit_description()
            worker.kill()
        self._output.append(self._take(worker))
        return description

    def close(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.stop()


class InProcessClient:
    """Runs probes in this process (``--no-sandbox``): no deadline, no isolation, but
    pdb works. Values still go through the wire format, so observations are the same.

    ``instrument`` (only ``scripts/conformance.py`` passes one; never a sandboxed
    grading, which has no such hook): called with the probe's name, it returns a context
    manager that each probe runs inside (coverage, a call recorder)."""

    def __init__(self, submission: Path, instrument: Any = None) -> None:
        self.submission = Path(submission).resolve()
        self.instrument = instrument
        self._tt: Any = None
        self._root = str(self.submission / "tinytrain")
        self._guarded: Any = None

    def __repr__(self) -> str:
        return "submission"

    def begin_test(self, budget: float) -> None:
        pass

    def end_test(self) -> str:
        return ""

    def fatal(self) -> ProbeOutcome | None:
        return None

    def _import(self) -> Any:
        if self._tt is None:
            from .. import probes
            from . import worker

            probes.load_all()
            self._guarded = worker.Guarded(worker.run_probe,
                                           worker.prepare_probes(probes, threads=False),
                                           threads=False, probes=probes)
            try:
                self._tt, self._root = worker.import_submission(str(self.submission))
            except Exception as exc:
                error = worker.describe_exception(exc, self._root)
                error["kind"] = "import"
                raise outcome_from_error(error) from exc
        return self._tt

    def call(self, probe: str, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        from .. import probes

        tt = self._import()
        request = _round_trip({"cmd": "call", "probe": probe, "args": list(args), "kwargs": kwargs})
        if self.instrument is None:
            reply = self._guarded(tt, self._root, probes, request)
        else:
            with self.instrument(probe):
                reply = self._guarded(tt, self._root, probes, request)
        reply = _round_trip(reply)
        if reply.get("ok"):
            return reply.get("value")
        raise outcome_from_error(reply.get("error") or {})

    def close(self) -> None:
        pass


def _round_trip(message: dict[str, Any]) -> Any:
    """Encode and decode ``message``, as the pipe would."""
    return protocol.read_message(0, _BytesReader(protocol.encode(message)))


class _BytesReader:
    """A ``read(fd, n)`` over an in-memory message, for the in-process round trip."""

    def __init__(self, data: bytes) -> None:
        self._data = memoryview(data)

    def __call__(self, fd: int, n: int) -> bytes:
        chunk, self._data = bytes(self._data[:n]), self._data[n:]
        if len(chunk) < n:
            raise EOFError
        return chunk
