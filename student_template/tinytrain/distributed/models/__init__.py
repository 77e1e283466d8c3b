"""A GPT trained with every kind of parallelism at once (task 7.6)."""

from .gpt import GPTStage, ParallelGPT, ParallelTrainer

__all__ = ["GPTStage", "ParallelGPT", "ParallelTrainer"]
