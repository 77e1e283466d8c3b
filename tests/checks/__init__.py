"""Tests of graders/checks/."""
