"""Scaled dot-product attention, written out one step at a time; and what PyTorch's own kernel applied
(`sdpa_blocked`, read from its output)."""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F

from helpers import arguments
from helpers.masks import Fill, fill_value


class AttentionSteps(NamedTuple):
    scores: torch.Tensor         # (..., L, S)  q @ k^T / sqrt(E)
    masked_scores: torch.Tensor  # (..., L, S)  masked cells replaced by fill
    weights: torch.Tensor        # (..., L, S)  softmax over keys (last dim)
    output: torch.Tensor         # (..., L, Ev) weights @ v


def combined_mask(
    scores_shape: torch.Size,
    key_padding_mask: torch.Tensor | None = None,
    attn_mask: torch.Tensor | None = None,
) -> torch.Tensor | None:
    """One bool mask broadcastable to scores (..., L, S); True = masked."""
    if not isinstance(scores_shape, (tuple, torch.Size)) or len(scores_shape) < 2:
        raise ValueError(f"scores_shape must be the scores' shape (..., L, S), at least 2-D, got {scores_shape!r}")
    *batch, L, S = scores_shape
    mask = None
    if key_padding_mask is not None:
        arguments.bool_mask(key_padding_mask, "key_padding_mask")
        if key_padding_mask.dim() == 1 and key_padding_mask.shape[0] == S:
            mask = key_padding_mask                              # (S,) -> every row
        elif key_padding_mask.dim() == 2 and batch and key_padding_mask.shape == (batch[0], S):
            # (N, S) -> (N, 1, ..., 1, S): the same keys hidden for every head and query row
            mask = key_padding_mask.view(batch[0], *[1] * (len(batch) - 1), 1, S)
        else:
            want = f"({batch[0]}, {S})" if batch else f"({S},)"
            raise ValueError(f"key_padding_mask must have shape {want} (N, S), got {tuple(key_padding_mask.shape)}")
    if attn_mask is not None:
        arguments.bool_mask(attn_mask, "attn_mask")
        # broadcastable: no more dims than the scores, each trailing dim 1 or equal (plain Python:
        # torch.broadcast_shapes would import sympy, about a second per notebook)
        dims = tuple(attn_mask.shape)
        fits = len(dims) <= len(scores_shape) and all(
            d in (1, n) for d, n in zip(reversed(dims), reversed(tuple(scores_shape)), strict=False))
        if not fits:
            raise ValueError(f"attn_mask must broadcast to the scores' shape {tuple(scores_shape)} (..., L, S), "
                             f"got {tuple(attn_mask.shape)}")
        mask = attn_mask if mask is None else mask | attn_mask
    return mask


def attention_steps(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    key_padding_mask: torch.Tensor | None = None,
    attn_mask: torch.Tensor | None = None,
    fill: Fill | None = None,
) -> AttentionSteps:
    """softmax(q k^T / sqrt(E), masked) @ v, keeping every intermediate.

    q: (..., L, E), k: (..., S, E), v: (..., S, Ev).
    key_padding_mask: bool (N, S), True = padded key, applied to every head and query row.
    attn_mask: bool, broadcastable to (..., L, S), True = not allowed (e.g. a future key).
    fill: what masked scores become: a number, "-inf", or "min" (finfo.min). By default -1e9 as in the book,
    or finfo.min in a dtype that cannot hold -1e9 (float16). No safety net: a fully masked row is uniform with a
    finite fill and NaN with "-inf".
    """
    fill = _checked_inputs(q, k, v, fill, {"key_padding_mask": key_padding_mask, "attn_mask": attn_mask})
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])   # (..., L, S)
    mask = combined_mask(scores.shape, key_padding_mask, attn_mask)
    masked_scores = scores if mask is None else scores.masked_fill(mask, fill_value(fill, scores.dtype))
    weights = torch.softmax(masked_scores, dim=-1)               # each row sums to 1
    output = weights @ v                                         # (..., L, Ev)
    return AttentionSteps(scores, masked_scores, weights, output)


def _checked_inputs(q: object, k: object, v: object, fill: Fill | None, masks: dict[str, object]) -> Fill:
    """attention_steps' arguments checked; the fill to use (the default resolved for q's dtype)."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        arguments.floating(t, name)
        if t.dim() < 2:
            raise ValueError(f"{name} must have shape (..., length, features), got {tuple(t.shape)}")
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(f"q, k and v must have the same dtype, got q {q.dtype}, k {k.dtype} and v {v.dtype}")
    if not q.device == k.device == v.device:
        raise ValueError(f"q, k and v must be on one device, got q {q.device}, k {k.device} and v {v.device}")
    if q.shape[-1] == 0:
        raise ValueError(f"q and k must have at least one feature (E >= 1: scores divide by sqrt(E)), "
                         f"got q {tuple(q.shape)}")
    if k.shape[-2] == 0:
        raise ValueError(f"k and v must hold at least one key (S >= 1: softmax over no keys is undefined), "
                         f"got k {tuple(k.shape)}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same feature size E, got q {tuple(q.shape)} and k {tuple(k.shape)}")
    if k.shape[:-1] != v.shape[:-1]:
        raise ValueError(f"k and v must agree on (..., S), got k {tuple(k.shape)} and v {tuple(v.shape)}")
    if q.shape[:-2] != k.shape[:-2]:
        raise ValueError(f"q and k must have the same batch dims, got q {tuple(q.shape)} and k {tuple(k.shape)}")
    for name, mask in masks.items():   # their shapes and dtypes: combined_mask
        if isinstance(mask, torch.Tensor):
            arguments.same_device(mask, name, q, "q")
    if fill is None:
        return -1e9 if torch.finfo(q.dtype).max >= 1e9 else "min"
    fill_value(fill, torch.float64)  # reject a bad fill early, even when nothing is masked
    return fill


# --- what F.scaled_dot_product_attention applied ---

def probe_qk(L: int, S: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Random queries (1, 1, L, S) and keys (1, 1, S, S): head size S, the size of the identity used as values
    (unequal head sizes would send SDPA to its math backend)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(1, 1, L, S, generator=g), torch.randn(1, 1, S, S, generator=g)


def sdpa_blocked(attn_mask: torch.Tensor | None, is_causal: bool, L: int = 4, S: int | None = None) -> torch.Tensor:
    """What F.scaled_dot_product_attention applied, read from its output: with value = the identity, the output
    rows are the attention weights; a weight of exactly 0 is a blocked key. bool (L, S), True = blocked."""
    L = arguments.integer(L, "L", minimum=1)
    S = L if S is None else arguments.integer(S, "S", minimum=1)
    arguments.flag(is_causal, "is_causal")
    if attn_mask is not None:
        arguments.tensor(attn_mask, "attn_mask")
        if attn_mask.dtype != torch.bool and not attn_mask.is_floating_point():
            raise TypeError(f"attn_mask must be a bool or float tensor, got {attn_mask.dtype}")
        try:
            torch.broadcast_shapes(attn_mask.shape, (1, 1, L, S))
        except RuntimeError:
            raise ValueError(f"attn_mask must broadcast to ({L}, {S}) (queries, keys), got shape "
                             f"{tuple(attn_mask.shape)}") from None
    q, k = probe_qk(L, S)
    weights = F.scaled_dot_product_attention(q, k, torch.eye(S)[None, None], attn_mask=attn_mask,
                                             is_causal=is_causal)[0, 0]
    return weights == 0
