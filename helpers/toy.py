"""The running example of chapters 1-3: 犬 猫 鳥 (+ 魚 馬) and <pad>, with small seeded, rounded weights,
and the two-layer model chapter 3 builds on it (attention_layer, layer2_params, POLICIES)."""

from __future__ import annotations

from typing import NamedTuple

import torch

from helpers.attention import attention_steps

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


# --- chapter 3: two layers, and what a layer does with the pad query rows ---

POLICIES = {  # how a layer treats the pad query rows (the pad key columns are always masked) -> its label
    "leave": "leave them (the book)",
    "uniform": "mask them too: 1/5",
    "zero": "zero them after softmax",
    "-inf": "mask them with -inf: NaN",
}


def layer2_params(seed: int = 3) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """W_q, W_k, W_v (4, 4) of chapter 3's second layer: seeded randn rounded to one decimal."""
    g = torch.Generator().manual_seed(seed)
    W_q, W_k, W_v = (torch.randn(D_MODEL, D_MODEL, generator=g).round(decimals=1) for _ in range(3))
    return W_q, W_k, W_v


def attention_layer(h: torch.Tensor, W: tuple[torch.Tensor, ...], pad: torch.Tensor,
                    policy: str = "leave") -> tuple[torch.Tensor, torch.Tensor]:
    """h + weights @ v for h (N, S, d) and pad (N, S), True = pad; returns (output, weights)."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {list(POLICIES)}, got {policy!r}")
    q, k, v = h @ W[0], h @ W[1], h @ W[2]
    rows = pad.unsqueeze(-1)                                     # (N, S, 1): the pad query rows
    if policy == "leave":
        weights = attention_steps(q, k, v, key_padding_mask=pad).weights
    elif policy == "zero":
        weights = attention_steps(q, k, v, key_padding_mask=pad).weights * ~rows
    else:
        fill = -1e9 if policy == "uniform" else "-inf"
        weights = attention_steps(q, k, v, key_padding_mask=pad, attn_mask=rows, fill=fill).weights
    return h + weights @ v, weights
