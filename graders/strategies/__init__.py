"""Hypothesis strategies that draw grader inputs. Trusted side only."""
