"""Instructor tools: generating the student template from the reference."""
