"""Tests of graders/harness/."""
