"""Tests of graders/kerneltable/."""
