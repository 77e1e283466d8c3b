"""Scores and the files and tables made from them."""

from .score import Score, TaskScore, build_score, error_score

__all__ = ["Score", "TaskScore", "build_score", "error_score"]
