"""Outcomes of a probe call other than a value. Each carries the test status it means."""

from __future__ import annotations


class ProbeOutcome(BaseException):
    """Base class: the probe did not return an observation.

    A BaseException, so Hypothesis neither shrinks nor replays on it: a stub, a hang or a
    crash says nothing about which example is smaller. ``SubmissionRaised`` is the
    exception (an Exception too): there the smallest failing example is worth finding.
    """

    status = "error"

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail  # a traceback or captured context, shown below the message
        self.example = ""  # the example that was running (case, reproducer), set by the test


class NotImplementedInSubmission(ProbeOutcome):
    """The submission raised NotImplementedError (a stub not filled in yet)."""

    status = "not_implemented"


class SubmissionRaised(Exception, ProbeOutcome):
    """The submission raised an exception the test did not expect."""

    def __init__(self, exc_type: str, message: str, detail: str = "") -> None:
        ProbeOutcome.__init__(self, f"{exc_type}: {message}", detail)
        self.exc_type = exc_type
        self.exc_message = message


class SubmissionImportError(ProbeOutcome):
    """``import tinytrain`` failed (or the package is not where it should be)."""


class ProbeTimeout(ProbeOutcome):
    """The submission did not answer before the deadline; the worker was killed."""

    status = "timeout"


class WorkerCrashed(ProbeOutcome):
    """The worker process died (os._exit, a crash, the memory limit)."""


class HarnessError(ProbeOutcome):
    """The grader itself failed (a protocol error, a probe bug)."""
