"""A tiny decoder-only language model (GPT-style) whose masks are all visible, with a KV cache. Chapter 9."""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

from helpers.attention import attention_steps
from helpers.masks import Fill, from_hf_attention_mask, positions_from_mask

TOKENS, PAD_ID = tuple("0123456789") + (".", "<pad>"), 11   # token id = the digit for 0-9; "." ends a line


class Cache(NamedTuple):
    keys: tuple[torch.Tensor, ...]    # per block (N, H, S, E/H): every key seen so far
    values: tuple[torch.Tensor, ...]  # per block (N, H, S, E/H)


class LMOutput(NamedTuple):
    logits: torch.Tensor               # (N, L, vocab)
    past: Cache                        # keys and values including this call's tokens
    weights: tuple[torch.Tensor, ...]  # per block: attention weights (N, H, L, S)


class Block(nn.Module):
    """Pre-norm causal self-attention (via helpers.attention_steps) plus an MLP, both residual."""

    def __init__(self, d: int, n_heads: int):
        super().__init__()
        self.n_heads, self.ln1, self.ln2 = n_heads, nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor | None,
                past: tuple[torch.Tensor, torch.Tensor] | None, fill: Fill):
        N, L, E = x.shape
        q, k, v = (t.view(N, L, self.n_heads, -1).transpose(1, 2) for t in self.qkv(self.ln1(x)).chunk(3, -1))
        if past is not None:                       # the cache: earlier keys and values, computed once
            k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
        S = k.shape[2]
        # causal, aligned bottom-right: query i is position S - L + i and may not see a later key
        future = ~torch.ones(L, S, dtype=torch.bool).tril(diagonal=S - L)
        steps = attention_steps(q, k, v, key_padding_mask=key_padding_mask, attn_mask=future, fill=fill)
        x = x + self.proj(steps.output.transpose(1, 2).reshape(N, L, E))
        return x + self.mlp(self.ln2(x)), k, v, steps.weights


class TinyLM(nn.Module):
    """Token + learned absolute position embeddings, causal blocks, an LM head."""

    def __init__(self, vocab_size: int = len(TOKENS), d_model: int = 32, n_heads: int = 2,
                 n_layers: int = 2, max_len: int = 16):
        super().__init__()
        self.max_len = max_len
        self.tok, self.pos = nn.Embedding(vocab_size, d_model), nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads) for _ in range(n_layers))
        self.ln_f, self.head = nn.LayerNorm(d_model), nn.Linear(d_model, vocab_size)

    def hidden(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None,
               position_ids: torch.Tensor | None = None, past: Cache | None = None, fill: Fill = "min"):
        """Embeddings x (N, L, E), no positions yet -> hidden states (N, L, E), the new cache, the weights.

        attention_mask: (N, cached + new), 1 = keep, 0 = pad (Hugging Face's); position_ids: (N, L), by default
        counted from the left edge, after the cache."""
        (N, L, _), offset = x.shape, 0 if past is None else past.keys[0].shape[2]
        pos = torch.arange(offset, offset + L).expand(N, L) if position_ids is None else position_ids
        if pos.shape != (N, L) or pos.min() < 0 or pos.max() >= self.max_len:
            raise ValueError(f"position_ids must be (N, L) = {(N, L)} in [0, {self.max_len}), "
                             f"got {tuple(pos.shape)} in [{pos.min()}, {pos.max()}]")
        kpm = None if attention_mask is None else from_hf_attention_mask(attention_mask)   # True = pad
        if kpm is not None and kpm.shape != (N, offset + L):
            raise ValueError(f"attention_mask must be (N, cached + new) = {(N, offset + L)}, got {tuple(kpm.shape)}")
        x, keys, values, weights = x + self.pos(pos), [], [], []
        for i, block in enumerate(self.blocks):
            x, k, v, w = block(x, kpm, None if past is None else (past.keys[i], past.values[i]), fill)
            keys.append(k), values.append(v), weights.append(w)
        return self.ln_f(x), Cache(tuple(keys), tuple(values)), tuple(weights)

    def forward(self, ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                position_ids: torch.Tensor | None = None, past: Cache | None = None, fill: Fill = "min") -> LMOutput:
        """ids (N, L) -> logits (N, L, vocab) for the next token at every position."""
        h, cache, weights = self.hidden(self.tok(ids), attention_mask, position_ids, past, fill)
        return LMOutput(self.head(h), cache, weights)


class Generation(NamedTuple):
    tokens: torch.Tensor         # (N, steps): the new tokens
    logits: torch.Tensor         # (N, steps, vocab): the logits each one was picked from
    weights: list[torch.Tensor]  # per step: last block's weights of the newest query, mean over heads (N, S)


@torch.no_grad()
def generate(model: TinyLM, ids: torch.Tensor, attention_mask: torch.Tensor | None = None, steps: int = 6, *,
             positions: str = "mask", mask: str = "every step", cache: bool = True) -> Generation:
    """Greedy decoding: append the argmax of the LAST column's logits, `steps` times. positions: "mask"
    (cumsum of the mask - 1) or "naive" (from the left edge); mask: passed at "every step", on the "prompt only"
    (the first forward) or "off"; cache: feed only the newest token and reuse the cached keys and values."""
    if positions not in ("mask", "naive") or mask not in ("every step", "prompt only", "off"):
        raise ValueError(f"positions must be 'mask' or 'naive', mask 'every step', 'prompt only' or 'off'; "
                         f"got {positions!r}, {mask!r}")
    keep = torch.ones_like(ids) if attention_mask is None else attention_mask.long()
    seq, new, past, tokens, logits, weights = ids, ids, None, [], [], []
    for step in range(steps):
        pos = positions_from_mask(keep) if positions == "mask" else torch.arange(keep.shape[1]).expand_as(keep)
        shown = keep if mask == "every step" or (mask == "prompt only" and step == 0) else None
        out = model(new, shown, pos[:, -new.shape[1]:], past) if cache else model(seq, shown, pos)
        past = out.past
        logits.append(out.logits[:, -1]), tokens.append(out.logits[:, -1].argmax(-1))
        weights.append(out.weights[-1][:, :, -1].mean(1))   # the newest query's row, last block
        new = tokens[-1][:, None]
        seq, keep = torch.cat([seq, new], 1), torch.cat([keep, torch.ones_like(new)], 1)
    return Generation(torch.stack(tokens, 1), torch.stack(logits, 1), weights)
