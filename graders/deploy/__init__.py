"""Shipping the grader to a platform: the Gradescope autograder zip and its entry point."""
