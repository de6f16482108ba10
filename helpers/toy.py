"""The running example that chapters 1-7 share: 犬 猫 鳥 (+ 魚 馬) and <pad>, with small seeded, rounded weights.

Chapter 3's two-layer model on it is chapter 3's own (helpers/chapters/ch03_does_the_pad_row_matter.py)."""

from __future__ import annotations

from typing import NamedTuple

import torch

WORDS = ("犬", "猫", "鳥", "魚", "馬")  # dog, cat, bird, fish, horse
VOCAB = {"<unk>": 0, "<pad>": 1} | {word: i + 2 for i, word in enumerate(WORDS)}
PAD_ID = VOCAB["<pad>"]
D_MODEL = 4


class QKV(NamedTuple):
    ids: torch.Tensor  # (1, S) token ids
    x: torch.Tensor    # (1, S, 4) embeddings
    q: torch.Tensor    # (1, S, 4) x @ W_q
    k: torch.Tensor    # (1, S, 4) x @ W_k
    v: torch.Tensor    # (1, S, 4) x @ W_v


def tokens(n_pads: int = 2, length: int = 5) -> list[str]:
    """The running sentence: the first `length - n_pads` of 犬 猫 鳥 魚 馬, then `n_pads` '<pad>'."""
    if not isinstance(length, int) or not 1 <= length <= len(WORDS):
        raise ValueError(f"length must be an int from 1 to {len(WORDS)}, got {length!r}")
    if not isinstance(n_pads, int) or isinstance(n_pads, bool) or not 0 <= n_pads <= length:
        raise ValueError(f"n_pads must be an int from 0 to {length}, got {n_pads!r}")
    return list(WORDS[: length - n_pads]) + ["<pad>"] * n_pads


def params(seed: int = 2) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Embedding table (7, 4) and W_q, W_k, W_v (4, 4): seeded randn rounded to one decimal."""
    g = torch.Generator().manual_seed(seed)
    table = torch.randn(len(VOCAB), D_MODEL, generator=g).round(decimals=1)
    W_q, W_k, W_v = (torch.randn(D_MODEL, D_MODEL, generator=g).round(decimals=1) for _ in range(3))
    return table, W_q, W_k, W_v


def qkv(tokens: list[str]) -> QKV:
    """ids (1, S), embeddings x (1, S, 4) and q, k, v (1, S, 4) of `tokens`, built as in chapter 1."""
    table, W_q, W_k, W_v = params()
    ids = torch.tensor([[VOCAB[t] for t in tokens]])
    x = table[ids]
    return QKV(ids, x, x @ W_q, x @ W_k, x @ W_v)


def is_pad(tokens: list[str]) -> torch.Tensor:
    """Bool (S,): True where the token is '<pad>'."""
    return torch.tensor([t == "<pad>" for t in tokens])


def question_cells(tokens: list[str]) -> torch.Tensor:
    """Bool (S, S): the '?' cells of the book's mask, pad query rows x real key columns."""
    pad = is_pad(tokens)
    return pad[:, None] & ~pad[None, :]
