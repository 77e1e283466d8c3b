"""The outcome of one grader test."""

from __future__ import annotations

from dataclasses import dataclass

STATUSES = ("passed", "failed", "error", "timeout", "not_implemented")


@dataclass
class TestResult:
    name: str
    task: str
    status: str
    message: str = ""
    duration: float = 0.0
    output: str = ""
    description: str = ""
    nodeid: str = ""  # pytest's id (path in graders/suites :: name), for pytest's JSON report

    __test__ = False  # not a pytest test class
