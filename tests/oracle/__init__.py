"""Tests of graders/oracle/."""
