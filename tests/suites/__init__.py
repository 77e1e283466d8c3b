"""Tests of graders/suites/."""
