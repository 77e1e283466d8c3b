"""Tests of graders/deploy/."""
