"""Tests of graders/probes/."""
