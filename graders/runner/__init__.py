"""Running the grader suites with pytest and collecting one result per test."""

from .results import TestResult
from .run import SUITES_DIR, run_suites

__all__ = ["SUITES_DIR", "TestResult", "run_suites"]
