"""Tests of graders/runner/."""
