"""A GPT-style language model (after Karpathy's nanoGPT): causal self-attention (task
5.12), pre-norm transformer blocks and the model (task 5.13), and its AdamW setup
(task 5.14).

Module and parameter names follow nanoGPT (``transformer.h.0.attn.c_attn.weight`` ...),
so a state dict moves between this model and a PyTorch twin by name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..autograd import no_grad
from ..creation import arange
from ..nn import functional as F  # noqa: N812 - PyTorch's usual name
from ..nn import init
from ..nn.activation import GELU
from ..nn.container import ModuleDict, ModuleList
from ..nn.layers import Dropout, Embedding, LayerNorm, Linear
from ..nn.module import Module
from ..ops import where
from ..optim import AdamW
from ..random import default_generator
from ..tensor import Tensor


@dataclass
class GPTConfig:
    """The model's sizes and switches."""

    vocab_size: int = 32
    block_size: int = 8  # the longest context (number of positions)
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 32  # the width; a multiple of n_head
    dropout: float = 0.0
    bias: bool = True  # biases in the Linear and LayerNorm layers
    tie_weights: bool = True  # the output head shares the token embedding's weight
    gelu_approximate: str = "tanh"  # GPT-2's tanh approximation ("none": the exact erf)


class CausalSelfAttention(Module):
    """Multi-head self-attention in which position t attends to positions <= t only.

    ``c_attn`` projects x (B, T, C) to queries, keys and values (3C, in that order),
    split into ``n_head`` heads of size C / n_head; each head computes
    softmax(q @ k.T / sqrt(head_size), future positions masked to -inf) @ v; the heads
    are concatenated and projected back by ``c_proj``.
    """

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        if config.n_embd % config.n_head:
            raise ValueError(f"n_embd ({config.n_embd}) must be a multiple of n_head "
                             f"({config.n_head})")
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.c_attn = Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = Dropout(config.dropout)
        self.resid_dropout = Dropout(config.dropout)

    def forward(self, x: Tensor) -> Tensor:
        batch, steps, width = x.shape
        # HINT: (B, T, C) -> (B, n_head, T, head_size) for q, k and v; scores (B, nh, T, T);
        # HINT: mask the future (column > row) with tt.where(mask, float("-inf"), scores)
        # HINT: before the softmax, then apply attn_dropout; back to (B, T, C) afterwards
        raise NotImplementedError("task 5.12: Causal multi-head self-attention")


class MLP(Module):
    """The feed-forward part of a block: Linear(C, 4C), GELU, Linear(4C, C), dropout."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.c_fc = Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = GELU(approximate=config.gelu_approximate)
        self.c_proj = Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = Dropout(config.dropout)

    def forward(self, x: Tensor) -> Tensor:
        raise NotImplementedError("task 5.13: GPT model: embeddings, pre-norm blocks, tied or untied head")


class Block(Module):
    """A pre-norm transformer block: x + attn(ln_1(x)), then x + mlp(ln_2(x))."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x: Tensor) -> Tensor:
        # HINT: pre-norm: normalise the input of each sub-layer, not the residual stream
        raise NotImplementedError("task 5.13: GPT model: embeddings, pre-norm blocks, tied or untied head")


class GPT(Module):
    """A decoder-only transformer language model.

    ``forward(idx, targets=None)`` takes token indices (B, T) with T <= block_size and
    returns ``(logits, loss)``: logits (B, T, vocab_size) for the next token at every
    position, and the mean cross entropy against ``targets`` (B, T) (targets equal to
    -100 are ignored), or None without targets.

    Parameters start from GPT-2's initialisation: N(0, 0.02) for Linear and Embedding
    weights, N(0, 0.02 / sqrt(2 n_layer)) for the projections into the residual stream,
    zero biases. With ``tie_weights`` the head's weight is the token embedding's.
    """

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        self.transformer = ModuleDict({
            "wte": Embedding(config.vocab_size, config.n_embd),
            "wpe": Embedding(config.block_size, config.n_embd),
            "drop": Dropout(config.dropout),
            "h": ModuleList([Block(config) for _ in range(config.n_layer)]),
            "ln_f": LayerNorm(config.n_embd, bias=config.bias),
        })
        self.lm_head = Linear(config.n_embd, config.vocab_size, bias=False)
        if config.tie_weights:
            self.lm_head.weight = self.transformer.wte.weight
        self._init_weights()

    def _init_weights(self) -> None:
        """GPT-2's initialisation (LayerNorms keep ones and zeros)."""
        transformer = self.transformer
        for embedding in (transformer.wte, transformer.wpe):
            init.normal_(embedding.weight, std=0.02)
        residual_std = 0.02 / math.sqrt(2 * self.config.n_layer)
        linears = [(self.lm_head, 0.02)]
        for block in transformer.h:
            linears += [(block.attn.c_attn, 0.02), (block.attn.c_proj, residual_std),
                        (block.mlp.c_fc, 0.02), (block.mlp.c_proj, residual_std)]
        for linear, std in linears:
            if linear is self.lm_head and self.config.tie_weights:
                continue  # the token embedding's weight, already drawn
            init.normal_(linear.weight, std=std)
            if linear.bias is not None:
                init.zeros_(linear.bias)

    def forward(self, idx: Tensor, targets: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        steps = idx.shape[1]
        if steps > self.config.block_size:
            raise ValueError(f"Cannot forward sequence of length {steps}, block size is only "
                             f"{self.config.block_size}")
        # HINT: token embeddings (B, T, C) + position embeddings of tt.arange(T) (T, C),
        # HINT: dropout, the blocks, ln_f, lm_head; the loss flattens logits to (B*T, V)
        raise NotImplementedError("task 5.13: GPT model: embeddings, pre-norm blocks, tied or untied head")

    def configure_optimizers(self, weight_decay: float, learning_rate: float,
                             betas: tuple[float, float] = (0.9, 0.999)) -> AdamW:
        """AdamW over two parameter groups, as nanoGPT: every parameter with 2 or more
        dims (Linear and Embedding weights) decays by ``weight_decay``, the others
        (biases, LayerNorm weights) do not. Each parameter appears once (a tied weight
        too), in ``named_parameters()`` order within its group."""
        raise NotImplementedError("task 5.14: End to end: AdamW training matches PyTorch step for step")

    def generate(self, idx: Tensor, max_new_tokens: int, temperature: float = 1.0,
                 top_k: int | None = None, do_sample: bool = True) -> Tensor:
        """Extend ``idx`` (B, T) by ``max_new_tokens`` tokens, one at a time, each from the
        model's distribution for the next position (``do_sample=False``: the most likely
        token). Samples come from tinytrain's generator. Call ``model.eval()`` first."""
        tokens = np.array(idx.data, dtype=np.int64)
        with no_grad():
            for _ in range(max_new_tokens):
                context = Tensor(tokens[:, -self.config.block_size:])
                logits = self(context)[0].data[:, -1, :].astype(np.float64)
                if do_sample:
                    logits = logits / temperature
                    if top_k is not None:
                        kth = np.sort(logits, axis=-1)[:, -min(top_k, logits.shape[-1])]
                        logits = np.where(logits < kth[:, None], -np.inf, logits)
                    probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
                    probs /= probs.sum(axis=-1, keepdims=True)
                    draws = default_generator().random((len(probs), 1))
                    choice = (probs.cumsum(axis=-1) < draws).sum(axis=-1)
                    choice = np.minimum(choice, probs.shape[-1] - 1)
                else:
                    choice = logits.argmax(axis=-1)
                tokens = np.concatenate([tokens, choice[:, None]], axis=1)
        return Tensor(tokens)
