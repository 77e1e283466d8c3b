"""Models built from ``tt.nn`` layers."""

from .gpt import GPT, MLP, Block, CausalSelfAttention, GPTConfig

__all__ = ["GPT", "MLP", "Block", "CausalSelfAttention", "GPTConfig"]
