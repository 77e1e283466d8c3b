"""Sequence parallelism (task 7.4): the sequence-dim operators, and the gradient sum of
the parameters used inside sequence-parallel regions."""

from .grads import allreduce_sequence_parallel_grads
from .mappings import (
    gather_from_sequence_parallel_region,
    reduce_scatter_to_sequence_parallel_region,
    scatter_to_sequence_parallel_region,
)

__all__ = ["allreduce_sequence_parallel_grads", "gather_from_sequence_parallel_region",
           "reduce_scatter_to_sequence_parallel_region", "scatter_to_sequence_parallel_region"]
