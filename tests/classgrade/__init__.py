"""Tests of graders/classgrade/."""
