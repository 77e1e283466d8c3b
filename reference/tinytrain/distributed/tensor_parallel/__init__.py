"""Tensor parallelism (task 7.3): the conjugate operators, column- and row-parallel
Linear, a vocabulary-parallel embedding and cross entropy, and the GPT's attention and
MLP with their heads and hidden features split over the ranks."""

from .cross_entropy import vocab_parallel_cross_entropy
from .layers import ColumnParallelLinear, RowParallelLinear, VocabParallelEmbedding
from .mappings import (
    copy_to_tensor_model_parallel_region,
    gather_from_tensor_model_parallel_region,
    reduce_from_tensor_model_parallel_region,
    scatter_to_tensor_model_parallel_region,
)
from .transformer import ParallelCausalSelfAttention, ParallelMLP, qkv_rows

__all__ = [
    "ColumnParallelLinear", "ParallelCausalSelfAttention", "ParallelMLP", "RowParallelLinear",
    "VocabParallelEmbedding", "copy_to_tensor_model_parallel_region",
    "gather_from_tensor_model_parallel_region", "qkv_rows",
    "reduce_from_tensor_model_parallel_region", "scatter_to_tensor_model_parallel_region",
    "vocab_parallel_cross_entropy",
]
