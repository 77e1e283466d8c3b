"""Tests of graders/report/."""
