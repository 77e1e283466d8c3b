"""Tests of graders/optable/."""
