"""The PyTorch twin of tinytrain's GPT (``tinytrain.models.gpt``), for the attention, GPT
and end-to-end graders (tasks 5.12-5.14).

Module and parameter names are the same on both sides (nanoGPT's), so weights move across
by name. Built with plain torch ops (no fused kernels) so that its float64 arithmetic is
the textbook computation the submission is compared with.
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812 - the usual name
from torch import nn

from ..probes import _gpt


def config(**overrides: Any) -> dict[str, Any]:
    """A GPTConfig as a plain dict (it crosses to the worker): small defaults."""
    base = dict(vocab_size=16, block_size=8, n_layer=2, n_head=2, n_embd=32, dropout=0.0,
                bias=True, tie_weights=True, gelu_approximate="tanh")
    base.update(overrides)
    return base


def describe(cfg: dict[str, Any], shape: tuple[int, ...] | None = None) -> str:
    """The tinytrain model a grader test builds, for its messages."""
    text = "tt.models.GPT(GPTConfig(" + ", ".join(f"{k}={v!r}" for k, v in cfg.items()) + \
        ")) with PyTorch's weights (float64)"
    return text if shape is None else f"{text}, idx of shape {shape}"


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        self.n_head, self.n_embd = cfg["n_head"], cfg["n_embd"]
        self.c_attn = nn.Linear(cfg["n_embd"], 3 * cfg["n_embd"], bias=cfg["bias"])
        self.c_proj = nn.Linear(cfg["n_embd"], cfg["n_embd"], bias=cfg["bias"])
        self.attn_dropout = nn.Dropout(cfg["dropout"])
        self.resid_dropout = nn.Dropout(cfg["dropout"])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, steps, width = x.shape
        head = width // self.n_head
        q, k, v = self.c_attn(x).split(width, dim=2)
        q, k, v = (t.view(batch, steps, self.n_head, head).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(head))
        future = torch.triu(torch.ones(steps, steps, dtype=torch.bool), diagonal=1)
        att = self.attn_dropout(F.softmax(scores.masked_fill(future, float("-inf")), dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(batch, steps, width)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        self.c_fc = nn.Linear(cfg["n_embd"], 4 * cfg["n_embd"], bias=cfg["bias"])
        self.gelu = nn.GELU(approximate=cfg["gelu_approximate"])
        self.c_proj = nn.Linear(4 * cfg["n_embd"], cfg["n_embd"], bias=cfg["bias"])
        self.dropout = nn.Dropout(cfg["dropout"])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg["n_embd"], bias=cfg["bias"])
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg["n_embd"], bias=cfg["bias"])
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        self.cfg = cfg
        self.transformer = nn.ModuleDict({
            "wte": nn.Embedding(cfg["vocab_size"], cfg["n_embd"]),
            "wpe": nn.Embedding(cfg["block_size"], cfg["n_embd"]),
            "drop": nn.Dropout(cfg["dropout"]),
            "h": nn.ModuleList([Block(cfg) for _ in range(cfg["n_layer"])]),
            "ln_f": nn.LayerNorm(cfg["n_embd"], bias=cfg["bias"]),
        })
        self.lm_head = nn.Linear(cfg["n_embd"], cfg["vocab_size"], bias=False)
        if cfg["tie_weights"]:
            self.lm_head.weight = self.transformer.wte.weight

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None) -> Any:
        steps = idx.shape[1]
        x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(steps))
        x = self.transformer.drop(x)
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    def configure_optimizers(self, weight_decay: float, learning_rate: float,
                             betas: tuple[float, float] = (0.9, 0.999)) -> torch.optim.AdamW:
        params = [p for _, p in self.named_parameters() if p.requires_grad]
        groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
                  {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=learning_rate, betas=tuple(betas), foreach=False)


def random_weights(model: nn.Module, seed: int, dtype: torch.dtype = torch.float64,
                   ) -> dict[str, np.ndarray]:
    """Give every parameter random values (LayerNorm weights around 1, everything else
    around 0, at scales where no layer saturates) and return them by name, tied ones once.
    The model is cast to ``dtype``."""
    model.to(dtype)
    rng = np.random.default_rng(seed)
    values = {}
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".ln_" in name or name.startswith("transformer.ln_f"):
                base = 1.0 if name.endswith("weight") else 0.0
                value = base + rng.uniform(-0.3, 0.3, tuple(p.shape))
            else:
                scale = 0.5 if name.endswith("bias") else 1.0 / math.sqrt(p.shape[-1])
                if name.startswith("transformer.w"):
                    scale = 0.5
                value = rng.uniform(-scale, scale, tuple(p.shape)) * math.sqrt(3)
            p.copy_(torch.from_numpy(value))
            values[name] = p.detach().numpy().copy()
    return values


def attention(cfg: dict[str, Any], seed: int, dtype: torch.dtype = torch.float64,
              ) -> tuple[CausalSelfAttention, dict[str, np.ndarray]]:
    """An attention layer with random weights, and those weights by name."""
    module = CausalSelfAttention(cfg)
    return module, random_weights(module, seed, dtype)


def gpt(cfg: dict[str, Any], seed: int) -> tuple[GPT, dict[str, np.ndarray]]:
    """A float64 GPT with random weights, and those weights by name."""
    model = GPT(cfg)
    return model, random_weights(model, seed)


def _np(t: torch.Tensor | None) -> np.ndarray | None:
    return None if t is None else t.detach().numpy().copy()


LIB = SimpleNamespace(
    tensor=lambda values, requires_grad=False: torch.tensor(
        np.asarray(values)).requires_grad_(requires_grad),
    array=_np,
    grad=lambda p: _np(p.grad),
)


def _names(module: nn.Module) -> list[str]:
    """The weights' dotted names (a tied weight once), as the grader sends them."""
    return [name for name, _ in module.named_parameters()]


def attention_run(module: CausalSelfAttention, x: np.ndarray, grad_output: np.ndarray,
                  ) -> dict[str, Any]:
    """What the probe ``gpt.attention`` observes, with torch."""
    return _gpt.attention(LIB, module, _names(module), x, grad_output)


def gpt_forward(model: GPT, idx: np.ndarray, targets: np.ndarray) -> dict[str, Any]:
    """What the probe ``gpt.gpt_forward`` observes, with torch."""
    return _gpt.gpt_forward(LIB, model, _names(model), idx, targets)


def param_groups(model: GPT, options: dict[str, Any]) -> list[dict[str, Any]]:
    """What the probe ``gpt.param_groups`` observes, with torch."""
    return _gpt.param_groups(model, _names(model), options)


def train(model: GPT, batches: list[list[np.ndarray]], options: dict[str, Any],
          ) -> dict[str, Any]:
    """What the probe ``gpt.train`` observes, with torch: one AdamW step per batch."""
    return _gpt.train(LIB, model, _names(model), batches, options)
