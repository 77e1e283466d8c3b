"""Tests of graders/authoring/."""
