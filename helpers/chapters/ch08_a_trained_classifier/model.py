"""The model: the book's classifier structure, small (embedding, positions, two encoder blocks, head)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from helpers.chapters.ch08_a_trained_classifier.data import PAD_ID, VOCAB


def positional_encoding(max_len: int, d_model: int) -> torch.Tensor:
    """(max_len, d_model) sinusoids: sin at even features, cos at odd ones (Vaswani et al.)."""
    position = torch.arange(max_len, dtype=torch.float32)[:, None]
    frequency = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(position * frequency)
    pe[:, 1::2] = torch.cos(position * frequency)
    return pe


PAD_ROWS = ("leave", "uniform", "zero")  # what to do with the pad query rows (the pad key columns are masked)


class Attention(nn.Module):
    """Single-head attention as in the book: masked_fill(mask == 0, -1e9), softmax, weights @ v, out."""

    def __init__(self, d_model: int):
        super().__init__()
        self.q_linear, self.k_linear, self.v_linear = (nn.Linear(d_model, d_model) for _ in range(3))
        self.out = nn.Linear(d_model, d_model)
        self.d_k = d_model

    def forward(self, x: torch.Tensor, mask: torch.Tensor, pad_rows: str = "leave") -> tuple[torch.Tensor, ...]:
        """x (N, S, d), mask (N, S) bool, True = real token (the book's convention); returns (output, weights)."""
        q, k, v = self.q_linear(x), self.k_linear(x), self.v_linear(x)
        scores = q @ k.transpose(1, 2) / math.sqrt(self.d_k)          # (N, S, S)
        mask = mask.unsqueeze(1)                                      # (N, 1, S): every query row, the same keys
        if pad_rows == "uniform":
            mask = mask & mask.transpose(1, 2)                        # pad rows fully masked: 1/S each
        weights = F.softmax(scores.masked_fill(mask == 0, -1e9), dim=-1)
        if pad_rows == "zero":
            weights = weights * mask.transpose(1, 2)                  # pad rows set to 0 after softmax
        return self.out(weights @ v), weights


class Block(nn.Module):
    """The book's TransformerBlock (pre-norm): x + attn(norm(x)), then + ff(norm(.)). No dropout."""

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.norm_1, self.norm_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = Attention(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))

    def forward(self, x: torch.Tensor, mask: torch.Tensor, pad_rows: str = "leave") -> tuple[torch.Tensor, ...]:
        output, weights = self.attn(self.norm_1(x), mask, pad_rows)
        x = x + output
        return x + self.ff(self.norm_2(x)), weights


class Classifier(nn.Module):
    """Embedding * sqrt(d) + positions, 2 blocks, a linear head on position 0 (<cls>). Returns logits and weights."""

    def __init__(self, d_model: int = 32, d_ff: int = 64, max_len: int = 64, masked: bool = True):
        super().__init__()
        self.masked = masked          # False: the model never passes the mask (every key visible, pads too)
        self.d_model = d_model
        self.embed = nn.Embedding(len(VOCAB), d_model)
        nn.init.normal_(self.embed.weight, std=d_model ** -0.5)   # x sqrt(d) below: about 1, like the positions
        self.register_buffer("pe", positional_encoding(max_len, d_model), persistent=False)
        self.blocks = nn.ModuleList([Block(d_model, d_ff), Block(d_model, d_ff)])
        self.head = nn.Linear(d_model, 2)

    def embed_tokens(self, ids: torch.Tensor) -> torch.Tensor:
        """(N, S) ids -> (N, S, d): embedding * sqrt(d) + positional encoding, as in the book."""
        if ids.shape[1] > self.pe.shape[0]:
            raise ValueError(f"ids has {ids.shape[1]} positions; this model encodes at most {self.pe.shape[0]}")
        return self.embed(ids) * math.sqrt(self.d_model) + self.pe[: ids.shape[1]]

    def forward(self, ids: torch.Tensor, *, x: torch.Tensor | None = None, mask: torch.Tensor | None = None,
                pad_rows: str = "leave") -> tuple[torch.Tensor, list[torch.Tensor]]:
        """ids (N, S) -> logits (N, 2) and each block's weights (N, S, S).

        x: embeddings to use instead of embed_tokens(ids) (e.g. with junk at the pads).
        mask: override the key mask, bool (N, S), True = real (default: ids != <pad> if self.masked, else all True).
        """
        if pad_rows not in PAD_ROWS:
            raise ValueError(f"pad_rows must be one of {PAD_ROWS}, got {pad_rows!r}")
        if mask is None:
            mask = ids != PAD_ID if self.masked else torch.ones_like(ids, dtype=torch.bool)
        h = self.embed_tokens(ids) if x is None else x
        weights = []
        for block in self.blocks:
            h, w = block(h, mask, pad_rows)
            weights.append(w)
        return self.head(h[:, 0]), weights

