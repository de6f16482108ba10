"""Chapter 15: many tokens against a KV cache (a prefix-cache hit, a speculative verify window, a draft tree) and
learned sink logits.

Step 1, the rule: n new tokens after `offset` cached ones are positions offset .. offset + n - 1, so their mask is
(n, offset + n), aligned bottom-right (`offset_mask`), and their position ids start at the offset. `tiny_step` runs
chapter 9's TinyLM on new tokens against a cache with any mask and position ids (or SDPA's own `is_causal`), so that
the right rule and its three usual mistakes (`MISTAKES`) can be compared; `tiny_llama` builds a tiny transformers
Llama for the same comparison. Step 2: `verify` and `speculate` (greedy speculative decoding). Step 3: draft trees
(`tree_mod`, `tree_mask`, `tree_positions`, `branch`). Step 4: a learned sink logit (`sink_attention`, dense) and
an online-softmax split-KV emulator (`split_kv`) with its broken variants (`SPLIT_BUGS`). Step 5: the invariant
(`cached_serial_full`) and two plain modules in helpers.diagnose's cache protocol, one wrong
(`CachedAttention(top_left=True)`). Then the explorer and the exercise checks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import cache
from typing import NamedTuple

import ipywidgets as widgets
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention.flex_attention import create_mask

from helpers import arguments
from helpers.chapters.ch09_batched_generation import TinyLM, trained_model
from helpers.exercises import Mistake, as_ints, blocked_mask, call, exercise
from helpers.explorer import RED, Explorer, Panel, View, explorer
from helpers.language import Bilingual, say
from helpers.library import tiny
from helpers.masks import causal_mask

KV = list[tuple[torch.Tensor, torch.Tensor]]   # TinyLM's cache here: per block (keys, values), each (N, H, S, E/H)
MaskMod = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]

# --- step 1: one rule for every multi-token forward ---


def offset_mask(n: int, offset: int) -> torch.Tensor:
    """The mask of n new queries after `offset` cached keys: bool (n, offset + n), True = blocked. Query i is
    position offset + i, so it may see every key up to and including offset + i (aligned bottom-right)."""
    n, offset = _count(n, "n", 1), _count(offset, "offset", 0)
    return causal_mask(n, offset=offset)   # key j after query i's position offset + i


def offset_positions(n: int, offset: int) -> torch.Tensor:
    """The position ids of n new tokens after `offset` cached ones: int64 (n,), offset, offset + 1, ..."""
    n, offset = _count(n, "n", 1), _count(offset, "offset", 0)
    return torch.arange(offset, offset + n)


def top_left_mask(n: int, offset: int) -> torch.Tensor:
    """What `torch.ones(n, offset + n).tril(0)` keeps, as True = blocked: query i sees keys 0 .. i only."""
    n, offset = _count(n, "n", 1), _count(offset, "offset", 0)
    return ~torch.ones(n, offset + n, dtype=torch.bool).tril(0)


# The three usual mistakes of a multi-token forward against a cache, and the right rule.
MISTAKES = ("tril(0) mask", "SDPA is_causal=True", "positions restarted at 0")
KINDS = ("offset mask and positions",) + MISTAKES


def tiny_step(model: TinyLM, ids: torch.Tensor, cache: KV | None = None, *, positions: torch.Tensor | None = None,
              blocked: torch.Tensor | str | None = None) -> tuple[torch.Tensor, KV]:
    """Chapter 9's TinyLM on new tokens ids (N, n) against `cache` (None, or per block (keys, values) of the
    `offset` earlier tokens) -> logits (N, n, vocab) and the cache with the new tokens appended.
    positions: (n,) int64, default offset_positions(n, offset). blocked: bool (n, offset + n), True = blocked,
    default offset_mask(n, offset); or "is_causal" to hand SDPA no mask and is_causal=True (n > 1).
    The block's arithmetic is TinyLM's (Block.forward), with the mask and positions chosen here."""
    N, n, offset = *_ids(model, ids), 0 if cache is None else cache[0][0].shape[2]
    positions = offset_positions(n, offset) if positions is None else _positions(positions, n, model.max_len)
    blocked = offset_mask(n, offset) if blocked is None else _blocked(blocked, n, offset)
    x, new = model.tok(ids) + model.pos(positions), []           # (N, n, E)
    for b, block in enumerate(model.blocks):
        q, k, v = (t.view(N, n, block.n_heads, -1).transpose(1, 2) for t in block.qkv(block.ln1(x)).chunk(3, -1))
        if cache is not None:                                     # (N, H, offset + n, E/H)
            k, v = torch.cat([cache[b][0], k], 2), torch.cat([cache[b][1], v], 2)
        if isinstance(blocked, str):                              # SDPA's own triangle: aligned top-left
            out = F.scaled_dot_product_attention(q, k, v, is_causal=n > 1)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=~blocked)   # SDPA: True = may attend
        x = x + block.proj(out.transpose(1, 2).reshape(N, n, -1))
        x = x + block.mlp(block.ln2(x))
        new.append((k, v))
    return model.head(model.ln_f(x)), new


def cached_forward(model: TinyLM, ids: torch.Tensor, offset: int, kind: str = KINDS[0]) -> torch.Tensor:
    """The logits (N, L - offset, vocab) of tokens offset .. L - 1 of ids (N, L), run as ONE multi-token forward
    after a cache of the first `offset` tokens (built right); kind: KINDS, the rule or one of its mistakes."""
    offset = _count(offset, "offset", 1)
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    _, past = tiny_step(model, ids[:, :offset])
    n = ids.shape[1] - offset
    if n < 1:
        raise ValueError(f"offset must leave at least one new token of ids' {ids.shape[1]}, got {offset}")
    options: dict[str, object] = {"tril(0) mask": {"blocked": top_left_mask(n, offset)},
                                  "SDPA is_causal=True": {"blocked": "is_causal"},
                                  "positions restarted at 0": {"positions": torch.arange(n)}}.get(kind, {})
    return tiny_step(model, ids[:, offset:], past, **options)[0]   # type: ignore[arg-type]


def serial(model: TinyLM, ids: torch.Tensor, offset: int) -> torch.Tensor:
    """The same logits as cached_forward, computed as L - offset serial decode steps of one token each."""
    offset = _count(offset, "offset", 1)
    _, past = tiny_step(model, ids[:, :offset])
    rows = []
    for t in range(offset, ids.shape[1]):
        logits, past = tiny_step(model, ids[:, t:t + 1], past)
        rows.append(logits)
    return torch.cat(rows, 1)


def tiny_llama(seed: int = 0, **sizes: int) -> nn.Module:
    """A tiny transformers LlamaForCausalLM (2 layers, 16 features, RoPE), random weights, eval mode, sdpa."""
    import transformers

    return tiny(transformers.LlamaConfig, transformers.LlamaForCausalLM, seed=seed,
                **{"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
                   "num_key_value_heads": 1, "head_dim": 8, **sizes})


def max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    """The largest |a - b| (a float, for a printed verdict or a rounded amount), computed in the inputs' own
    promoted dtype, so that a float64 comparison can see below float32's rounding."""
    dtype = torch.promote_types(a.dtype, b.dtype)
    return float((a.to(dtype) - b.to(dtype)).abs().max())


# --- step 2: speculative verification (greedy) ---

class Speculation(NamedTuple):
    tokens: list[int]     # every token emitted after the prompt
    accepted: list[int]   # per verify window: how many drafts were accepted
    windows: int          # verify forwards of the target (after one prefill of the prompt)


def greedy(model: TinyLM, ids: list[int], steps: int) -> list[int]:
    """Plain greedy decoding, one full pass per token (no cache): the reference speculation must reproduce."""
    seq = list(ids)
    for _ in range(steps):
        seq.append(int(model(torch.tensor([seq])).logits[0, -1].argmax()))
    return seq[len(ids):]


def verify(model: TinyLM, cache: KV, window: list[int], kind: str = KINDS[0]) -> tuple[torch.Tensor, KV]:
    """One verify forward of the target: the window (the last emitted token, then the drafts) as k + 1 new tokens
    against the cache -> each row's greedy next token, int64 (k + 1,), and the cache with the whole window
    appended (cut it back to the accepted tokens with `rollback`). kind: KINDS (the rule or a mistake)."""
    n, offset = len(window), cache[0][0].shape[2]
    options: dict[str, object] = {"tril(0) mask": {"blocked": top_left_mask(n, offset)},
                                  "SDPA is_causal=True": {"blocked": "is_causal"},
                                  "positions restarted at 0": {"positions": torch.arange(n)}}.get(kind, {})
    logits, new = tiny_step(model, torch.tensor([window]), cache, **options)   # type: ignore[arg-type]
    return logits[0].argmax(-1), new


def accept(drafts: Sequence[int], predicted: Sequence[int]) -> int:
    """Greedy acceptance: draft i is kept while it equals the target's prediction from the row before it
    (predicted[i] is row i's greedy next token, the window being [last token] + drafts)."""
    count = 0
    while count < len(drafts) and int(drafts[count]) == int(predicted[count]):
        count += 1
    return count


def rollback(cache: KV, length: int) -> KV:
    """The cache cut back to its first `length` tokens (the rejected drafts' keys and values dropped)."""
    return [(k[:, :, :length], v[:, :, :length]) for k, v in cache]


@torch.no_grad()
def speculate(target: TinyLM, drafter: TinyLM, prompt: list[int], steps: int, k: int = 3,
              kind: str = KINDS[0]) -> Speculation:
    """Greedy speculative decoding: the drafter proposes k tokens, the target verifies them in one window and
    keeps the accepted ones plus its own next token; repeat until `steps` tokens. kind: how the verify window's
    mask and positions are built (KINDS)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    steps, k = _count(steps, "steps", 1), _count(k, "k", 1)
    _, past = tiny_step(target, torch.tensor([prompt[:-1]]))     # the prefill: all but the last token
    seq, accepted = list(prompt), []
    while len(seq) - len(prompt) < steps:
        drafts = greedy(drafter, seq, k)
        offset = past[0][0].shape[2]                               # len(seq) - 1 tokens cached
        predicted, past = verify(target, past, [seq[-1]] + drafts, kind)
        a = accept(drafts, predicted)
        accepted.append(a)
        seq += drafts[:a] + [int(predicted[a])]                    # the accepted drafts, then the target's token
        past = rollback(past, offset + 1 + a)                      # keep the window's last token and a drafts
    tokens = seq[len(prompt):len(prompt) + steps]
    return Speculation(tokens, accepted, len(accepted))


@cache
def models() -> tuple[TinyLM, TinyLM]:
    """The target (chapter 9's TinyLM, trained 60 steps) and a drafter (the same model trained 12 steps)."""
    with torch.enable_grad():                                    # trained once per process, even from no_grad code
        return trained_model().model, trained_model(steps=12).model


# --- step 3: draft trees ---

TREES = {"linear": (-1, 0, 1, 2, 3, 4), "binary": (-1, 0, 0, 1, 1, 2), "given": (-1, 0, 1, 0, 3, 0)}


def depths(parents: Sequence[int]) -> tuple[int, ...]:
    """A tree of draft tokens as parent indices (-1: the root, a child of the last cached token; a parent comes
    before its children) -> each node's depth, 0 for a root."""
    parents = _parents(parents)
    out: list[int] = []
    for p in parents:
        out.append(0 if p < 0 else out[p] + 1)
    return tuple(out)


def tree_positions(parents: Sequence[int], offset: int) -> torch.Tensor:
    """Depth-based position ids: node i is position offset + depth(i), int64 (n,). Siblings share a position."""
    return _count(offset, "offset", 0) + torch.tensor(depths(parents))


def ancestors(parents: Sequence[int]) -> torch.Tensor:
    """bool (n, n): entry (i, j) True when node j is node i or one of its ancestors."""
    parents = _parents(parents)
    n = len(parents)
    table = torch.eye(n, dtype=torch.bool)
    for i, p in enumerate(parents):
        if p >= 0:
            table[i] |= table[p]                                   # a node sees what its parent sees, and itself
    return table


def tree_mod(parents: Sequence[int], offset: int) -> MaskMod:
    """The draft tree's mask as a mask_mod over (n, offset + n), True = may attend: every cached key, and the
    node's own ancestors (itself included) among the new tokens."""
    table, offset = ancestors(parents), _count(offset, "offset", 0)

    def mod(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor) -> torch.Tensor:
        node = (kv_idx - offset).clamp(min=0)
        return (kv_idx < offset) | table[q_idx, node]
    return mod


def tree_mask(parents: Sequence[int], offset: int) -> torch.Tensor:
    """tree_mod drawn by torch's create_mask (no compiling), as True = blocked: bool (n, offset + n)."""
    n = len(_parents(parents))
    return ~create_mask(tree_mod(parents, offset), None, None, n, offset + n, device="cpu")[0, 0]


def branch(parents: Sequence[int], node: int) -> list[int]:
    """The nodes from the root down to `node`, in order."""
    parents = _parents(parents)
    node = _count(node, "node", 0)
    if node >= len(parents):
        raise ValueError(f"node must be below the tree's {len(parents)} nodes, got {node}")
    path = [node]
    while parents[path[-1]] >= 0:
        path.append(parents[path[-1]])
    return path[::-1]


def leaves(parents: Sequence[int]) -> list[int]:
    """The nodes no other node has as a parent."""
    parents = _parents(parents)
    return [i for i in range(len(parents)) if i not in parents]


# --- step 4: learned sink logits ---

class SinkOut(NamedTuple):
    out: torch.Tensor       # (n, d)
    lse: torch.Tensor       # (n,): log-sum-exp of the row's scores and the sink
    weights: torch.Tensor   # (n, S + 1): the keys' weights, then the sink's


def sink_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, blocked: torch.Tensor | None,
                   sink: torch.Tensor | float | None) -> SinkOut:
    """One head with a learned sink logit: softmax over the row's scores AND one extra column holding `sink`,
    then the sink column is dropped before the values. q (n, d), k and v (S, d), blocked bool (n, S) True =
    blocked, sink a scalar (None: no sink column). The row's weights over the keys then sum to less than 1."""
    scores = (q @ k.T) / math.sqrt(q.shape[-1])                               # (n, S)
    if blocked is not None:
        scores = scores.masked_fill(blocked, float("-inf"))
    column = torch.full((q.shape[0], 1), float("-inf"), dtype=q.dtype) if sink is None else \
        torch.as_tensor(sink, dtype=q.dtype).reshape(1, 1).expand(q.shape[0], 1)
    logits = torch.cat([scores, column], -1)                                 # (n, S + 1)
    lse = torch.logsumexp(logits, -1)                                        # finite while the sink is there
    weights = torch.exp(logits - lse[:, None])
    return SinkOut(weights[:, :-1] @ v, lse, weights)


SPLIT_BUGS = ("sink in every split", "sink lost on an empty split", "sink added as a score")


def split_kv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, blocked: torch.Tensor | None,
             sink: torch.Tensor | float | None, splits: int = 2, bug: str | None = None) -> tuple[torch.Tensor,
                                                                                                 torch.Tensor]:
    """The same (out, lse) as sink_attention, the way a split-KV kernel computes it: the keys cut into `splits`
    ranges, each range reduced to (row max m, sum l of exp(score - m), acc = sum of exp(score - m) * value), the
    ranges combined by rescaling to one max, and the sink's exp added ONCE at the combine.
    bug: one of SPLIT_BUGS, the broken variants (None: right)."""
    if bug is not None and bug not in SPLIT_BUGS:
        raise ValueError(f"bug must be None or one of {SPLIT_BUGS}, got {bug!r}")
    n, S = q.shape[0], k.shape[0]
    scores = (q @ k.T) / math.sqrt(q.shape[-1])
    if bug == "sink added as a score" and sink is not None:
        scores = scores + sink                                   # a shift of every score: softmax ignores it
    if blocked is not None:
        scores = scores.masked_fill(blocked, float("-inf"))
    s = None if sink is None or bug == "sink added as a score" else torch.as_tensor(sink, dtype=q.dtype)
    parts = []
    splits = _count(splits, "splits", 1)
    for r, keys in enumerate(torch.arange(S).tensor_split(splits)):
        part = scores[:, keys]                                   # (n, keys)
        m = part.max(-1).values if keys.numel() else torch.full((n,), float("-inf"), dtype=q.dtype)
        safe = torch.where(m.isfinite(), m, 0.0)                 # an empty or fully blocked range: m = -inf
        e = torch.exp(part - safe[:, None])
        l, acc = e.sum(-1), e @ v[keys]
        last = r == splits - 1
        if s is not None and (bug == "sink in every split" or (bug == "sink lost on an empty split" and last)):
            if bug == "sink lost on an empty split":             # the kernel adds the sink in the last split,
                live = m.isfinite()                              # which it skips when none of its keys is visible
                l = l + torch.where(live, torch.exp(s - safe), 0.0)
            else:
                l = l + torch.exp(s - safe)
        parts.append((m, l, acc))
    if s is not None and bug is None:                            # the sink: one more range, with l = 1, acc = 0
        parts.append((s.expand(n), torch.ones(n, dtype=q.dtype), torch.zeros(n, v.shape[1], dtype=q.dtype)))
    return combine(parts)


def combine(parts: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Partial softmax results (m (n,), l (n,), acc (n, d)) -> (out (n, d), lse (n,)): rescale each to the
    common max M, out = sum(acc e^(m - M)) / sum(l e^(m - M)), lse = M + log sum(l e^(m - M))."""
    M = torch.stack([m for m, _, _ in parts]).max(0).values
    safe = torch.where(M.isfinite(), M, 0.0)
    scale = [torch.exp(m - safe) for m, _, _ in parts]           # 0 for a range with no visible key
    total = sum(l * c for (_, l, _), c in zip(parts, scale, strict=True))
    acc = sum(a * c[:, None] for (_, _, a), c in zip(parts, scale, strict=True))
    return acc / total[:, None], safe + torch.log(total)


def sink_example(n: int = 3, S: int = 6, d: int = 4, seed: int = 0,
                 dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, ...]:
    """Seeded q (n, d), k and v (S, d) and a mask (n, S), True = blocked, where row i sees keys 0 .. i + 1: the
    last half of the keys is empty for the first rows, as in a split-KV kernel's last split."""
    g = torch.Generator().manual_seed(arguments.integer(seed, "seed"))
    q, k, v = (torch.randn(m, d, generator=g, dtype=dtype) for m in (n, S, S))
    return q, k, v, torch.arange(S)[None, :] > torch.arange(n)[:, None] + 1


# --- step 5: the invariant, and a module in helpers.diagnose's cache protocol ---

def cached_serial_full(step: Callable[[torch.Tensor, object], tuple[torch.Tensor, object]], x: torch.Tensor,
                       offset: int) -> dict[str, float]:
    """The invariant for any model with a cache: step(x_new, cache) -> (out, cache), cache None at the start.
    One full pass, then the first `offset` tokens and ONE multi-token step, then `offset` and serial one-token
    steps; returns the largest |difference| of each against the full pass."""
    offset = _count(offset, "offset", 1)
    full, _ = step(x, None)
    _, past = step(x[:, :offset], None)
    cached, _ = step(x[:, offset:], past)
    _, past = step(x[:, :offset], None)
    rows = []
    for t in range(offset, x.shape[1]):
        out, past = step(x[:, t:t + 1], past)
        rows.append(out)
    return {"cached n-token step": max_diff(cached, full[:, offset:]),
            "serial steps": max_diff(torch.cat(rows, 1), full[:, offset:])}


class CachedAttention(nn.Module):
    """One causal self-attention layer (8 features, 2 heads) in the checks' convention, module(x,
    key_padding_mask, attn_mask), with helpers.diagnose's cache protocol, forward_with_cache(x, cache).
    top_left=True: its cached step hands SDPA is_causal=True for more than one new token (the triangle aligned
    top-left), which is right without a cache and for single-token decode steps, and wrong otherwise."""

    is_causal = True

    def __init__(self, top_left: bool = False, seed: int = 0) -> None:
        super().__init__()
        torch.manual_seed(arguments.integer(seed, "seed"))
        self.top_left, self.embed_dim = arguments.flag(top_left, "top_left"), 8
        self.qkv, self.out = nn.Linear(8, 24), nn.Linear(8, 8)
        self.eval()

    def _heads(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(t.view(x.shape[0], x.shape[1], 2, 4).transpose(1, 2) for t in self.qkv(x).chunk(3, -1))

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None,
                attn_mask: torch.Tensor | None = None) -> torch.Tensor:
        """x (N, L, 8) -> (N, L, 8), causal; key_padding_mask (N, L) True = pad; attn_mask is ignored."""
        N, L, _ = x.shape
        q, k, v = self._heads(x)
        may = ~offset_mask(L, 0)[None, None]                                     # (1, 1, L, L)
        if key_padding_mask is not None:
            may = may & ~key_padding_mask[:, None, None, :]
        return self.out(F.scaled_dot_product_attention(q, k, v, attn_mask=may).transpose(1, 2).reshape(N, L, 8))

    def forward_with_cache(self, x: torch.Tensor, cache: tuple[torch.Tensor, torch.Tensor] | None
                           ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """x (N, T, 8): the next T tokens; cache: (keys, values) of the earlier ones, or None."""
        N, T, _ = x.shape
        q, k, v = self._heads(x)
        if cache is not None:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        if self.top_left:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=T > 1)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=~offset_mask(T, k.shape[2] - T))
        return self.out(out.transpose(1, 2).reshape(N, T, 8)), (k, v)


# --- the explorer: the mask, position ids and weights of one cached forward ---

EXPLORER_MASKS = ("offset mask", "tril(0) mask", "positions restarted", "breadth-order positions")
SINKS = ("none", "0", "2")
E_TOY = 8


@cache
def _toy() -> tuple[torch.Tensor, ...]:
    """The explorer's one attention layer: token embeddings (8, E), learned positions (16, E), q/k/v (E, E), and
    the cache's 6 tokens and the new tokens' 6 ids, all seeded."""
    g = torch.Generator().manual_seed(15)
    tok, pos = torch.randn(8, E_TOY, generator=g), torch.randn(16, E_TOY, generator=g)
    wq, wk, wv = (torch.randn(E_TOY, E_TOY, generator=g) / math.sqrt(E_TOY) for _ in range(3))
    return tok, pos, wq, wk, wv, torch.randint(0, 8, (6,), generator=g), torch.randint(0, 8, (6,), generator=g)


def _toy_attend(cached: int, new: Sequence[int], positions: torch.Tensor, blocked: torch.Tensor,
                sink: float | None) -> SinkOut:
    """The toy layer: the first `cached` cache tokens at positions 0.., the `new` nodes at `positions`."""
    tok, pos, wq, wk, wv, cache_ids, new_ids = _toy()
    xc = tok[cache_ids[:cached]] + pos[:cached]
    xn = tok[new_ids[list(new)]] + pos[positions]
    keys = torch.cat([xc, xn])
    return sink_attention(xn @ wq, keys @ wk, keys @ wv, blocked, sink)


def cache_view(cached: int = 3, new: int = 4, tree: str = "linear", sink: str = "none",
               mask: str = "offset mask") -> View:
    """A cached forward of `new` draft nodes (the first nodes of TREES[tree]) after `cached` tokens: its mask with
    each row's position id, and its weights (the sink's column last); the summary compares every node with its
    branch run serially (each token a decode step)."""
    cached, new = _count(cached, "cached", 0), _count(new, "new", 1)
    if cached > 5 or new > 6:
        raise ValueError(say(f"cached must be at most 5 and new at most 6, got {cached} and {new}",
                             f"cached は 5 以下、new は 6 以下にすること（{cached} と {new} が渡された）"))
    if tree not in TREES or sink not in SINKS or mask not in EXPLORER_MASKS:
        raise ValueError(f"tree, sink and mask must be in {list(TREES)}, {SINKS}, {EXPLORER_MASKS}; "
                         f"got {tree!r}, {sink!r}, {mask!r}")
    parents = TREES[tree][:new]
    s = None if sink == "none" else float(sink)
    right_blocked, right_pos = tree_mask(parents, cached), tree_positions(parents, cached)
    blocked, positions = right_blocked, right_pos
    if mask == "tril(0) mask":                                 # a builder that always uses tril(0)
        blocked = top_left_mask(new, cached)
    elif mask == "positions restarted":
        positions = right_pos - cached
    elif mask == "breadth-order positions":
        positions = offset_positions(new, cached)
    got = _toy_attend(cached, range(new), positions, blocked, s)
    worst = 0.0
    for node in range(new):                                    # the branch alone, its last token as a decode step
        path = branch(parents, node)
        alone = _toy_attend(cached, path, offset_positions(len(path), cached),
                            offset_mask(len(path), cached), s)
        worst = max(worst, max_diff(got.out[node], alone.out[-1]))
    same = worst < 1e-5
    wrong = blocked != right_blocked
    cols = [f"c{j}" for j in range(cached)] + [f"t{j}" for j in range(new)]
    rows = [f"t{i} @{int(p)}" for i, p in enumerate(positions)]
    red = tuple(i for i in range(new) if positions[i] != right_pos[i])
    weights = got.weights if s is not None else got.weights[:, :-1]
    panels = (
        Panel((~blocked).float(), rows, cols, title=say(f"mask ({new} × {cached + new}), row = node @ position id",
                                                       f"マスク（{new} × {cached + new}）、行 = ノード @ 位置 ID"),
              masked=blocked, fmt=".0f", framed=wrong, frame_color=RED, mark="×", red_rows=red, alert=not same,
              xlabel=say("key", "キー"), ylabel=say("query", "クエリ")),
        Panel(weights, rows, cols + ([say("sink", "シンク")] if s is not None else []),
              title=say("weights" + (" (the sink's column last)" if s is not None else ""),
                        "重み" + ("（最後の列がシンク）" if s is not None else "")),
              masked=torch.cat([blocked, torch.zeros(new, 1, dtype=torch.bool)], 1)[:, :weights.shape[1]],
              vmin=0.0, vmax=1.0, xlabel=say("key", "キー"), ylabel=say("query", "クエリ")),
    )
    verdict = say("outputs equal the serial run: True (max |Δ| < 1e-5)" if same else
                  f"outputs differ from the serial run by up to {worst:.2f}",
                  "出力は逐次実行と一致する（True、max |Δ| < 1e-5）" if same else
                  f"出力は逐次実行と最大 {worst:.2f} 違う")
    sink_words = say("no sink" if s is None else f"sink logit {sink}",
                     "シンクなし" if s is None else f"シンクのロジット {sink}")
    summary = say(f"{cached} cached, {new} new ({tree} tree), {sink_words}, {mask}: {verdict}",
                  f"キャッシュ {cached}、新しいトークン {new}（{_TREE_JA[tree]}）、{sink_words}、"
                  f"{_MASK_JA[mask]}：{verdict}")
    caption = say("1: may attend    hatched: blocked    ×: differs from the right tree mask    red row: wrong "
                  "position id", "1：参照してよい    斜線：遮断    ×：正しい木のマスクと違う    赤い行：位置 ID が誤り")
    return View(panels, summary, caption)


_TREE_JA = {"linear": "一直線の木", "binary": "二分木", "given": "指定した木"}
_MASK_JA = {"offset mask": "オフセット付きマスク", "tril(0) mask": "tril(0) のマスク",
            "positions restarted": "0 から振り直した位置 ID", "breadth-order positions": "幅優先の順の位置 ID"}
_LABELS_JA = {"linear": "一直線", "binary": "二分木", "given": "指定した木", "none": "なし", **_MASK_JA}  # options


def _labelled(values: list[str]) -> list[tuple[str, str]]:
    """(label, value) for each option: the label in the current language (a number stays as it is)."""
    return [(say(v, _LABELS_JA.get(v, v)), v) for v in values]


def cache_explorer() -> Explorer:
    """Cache length, new tokens, tree shape, sink logit and the mask's construction -> the mask, position ids,
    weights, and whether the outputs equal the serial run."""
    style = {"description_width": "initial"}
    controls = {
        "cached": widgets.IntSlider(value=3, min=0, max=5, description=say("cached tokens", "キャッシュ済みのトークン"),
                                    style=style),
        "new": widgets.IntSlider(value=4, min=1, max=6, description=say("new tokens", "新しいトークン"), style=style),
        "tree": widgets.Dropdown(options=_labelled(list(TREES)), value="linear", description=say("tree", "木"),
                                 style=style),
        "sink": widgets.Dropdown(options=_labelled(list(SINKS)), value="none",
                                 description=say("sink logit", "シンクのロジット"), style=style),
        "mask": widgets.Dropdown(options=_labelled(list(EXPLORER_MASKS)), value="offset mask",
                                 description=say("built with", "マスクの作り方"), style=style),
    }
    return explorer(controls, cache_view, Bilingual(
        "Cache length, new tokens, tree shape, sink logit and the mask's construction -> the mask, position ids, "
        "weights, and whether the outputs equal the serial run.",
        "キャッシュの長さ、新しいトークン、木の形、シンクのロジット、マスクの作り方 → マスク、位置 ID、重み、"
        "出力が逐次の実行と等しいか"))


EXPLORERS = (cache_explorer,)


# --- argument checks (after the lessons) ---

def _count(value: object, name: str, minimum: int) -> int:
    return arguments.integer(value, name, minimum=minimum)


def _ids(model: object, ids: object) -> tuple[int, int]:
    if not isinstance(model, TinyLM):
        raise TypeError(f"model must be chapter 9's TinyLM, got {type(model).__name__}")
    arguments.tensor(ids, "ids")
    if ids.dim() != 2 or ids.dtype != torch.long or ids.shape[1] < 1:   # type: ignore[union-attr]
        raise ValueError(f"ids must be an int64 tensor (N, n), got {ids.dtype} {tuple(ids.shape)}")  # type: ignore
    return ids.shape[0], ids.shape[1]                                    # type: ignore[union-attr]


def _positions(positions: object, n: int, max_len: int) -> torch.Tensor:
    arguments.tensor(positions, "positions")
    if positions.shape != (n,) or positions.dtype != torch.long or positions.min() < 0 \
            or positions.max() >= max_len:                               # type: ignore[union-attr]
        raise ValueError(f"positions must be int64 ({n},) in [0, {max_len}), got {positions.dtype} "
                         f"{tuple(positions.shape)}")                     # type: ignore[union-attr]
    return positions                                                     # type: ignore[return-value]


def _blocked(blocked: object, n: int, offset: int) -> torch.Tensor | str:
    if blocked == "is_causal":
        return "is_causal"
    arguments.bool_mask(blocked, "blocked")
    if blocked.shape != (n, offset + n):                                 # type: ignore[union-attr]
        raise ValueError(f"blocked must be bool (n, offset + n) = {(n, offset + n)}, got "
                         f"{tuple(blocked.shape)}")                       # type: ignore[union-attr]
    return blocked                                                       # type: ignore[return-value]


def _parents(parents: object) -> tuple[int, ...]:
    if isinstance(parents, torch.Tensor):
        parents = parents.tolist()
    if not isinstance(parents, Sequence) or isinstance(parents, str) or not parents:
        raise TypeError(f"parents must be a non-empty sequence of ints, got {type(parents).__name__}")
    out = tuple(arguments.integer(p, "parents[i]", minimum=-1) for p in parents)
    for i, p in enumerate(out):
        if p >= i:
            raise ValueError(f"parents[{i}] must be -1 or the index of an earlier node, got {p}")
    return out


# --- the exercises' checks (each computes the expected answer from the problem's data) ---

@exercise
def check_1(answer: object, parents: tuple[int, ...], offset: int) -> None:
    """Exercise 1: the position ids of a draft tree's nodes after `offset` cached tokens."""
    got = as_ints(answer, Mistake("give a tuple of ints, one position id per node",
                                  "ノード 1 つにつき位置 ID を 1 つ、int のタプルで答えること"))
    expected = tuple(tree_positions(parents, offset).tolist())
    if len(got) != len(expected):
        raise Mistake(f"give one position id per node: {len(expected)} of them",
                      f"ノード 1 つにつき位置 ID を 1 つ、全部で {len(expected)} 個答えること")
    if got == expected:
        return
    if got == tuple(range(offset, offset + len(parents))):
        raise Mistake("that numbers the nodes in the order they are listed; a node's position is how far down the "
                      "tree it is, so siblings share one",
                      "それはノードを並んだ順に数えた番号である。位置は木をどれだけ下ったかで決まるので、"
                      "兄弟どうしは同じ位置になる")
    if got == tuple(e - offset for e in expected):
        raise Mistake("the cached tokens are missing: the tree's roots come right after them",
                      "キャッシュ済みのトークンが抜けている。木の根はその直後に来る")
    if got == tuple(e + 1 for e in expected) or got == tuple(e - 1 for e in expected):
        raise Mistake("off by one: positions count from 0, so the cached tokens are positions 0 .. offset - 1",
                      "1 つずれている。位置は 0 から数えるので、キャッシュ済みのトークンは位置 0 … offset − 1 である")
    raise Mistake("not quite: for each node, count its ancestors inside the tree",
                  "まだ違う。各ノードについて、木の中にある祖先の数を数えること")


@exercise
def check_2(answer: object, parents: tuple[int, ...], offset: int) -> None:
    """Exercise 2: the draft tree's mask, bool (n, offset + n), True = blocked."""
    expected = tree_mask(parents, offset)
    n = len(parents)
    answer, right = blocked_mask(answer, expected, lambda got: Mistake(
        f"one row per node and one column per key: the cached tokens, then the nodes; got shape {got}",
        "行はノードごとに 1 行、列はキーごとに 1 列（先にキャッシュ済みのトークン、続いてノード）にすること。"
        f"渡された形状は {got}"))
    if right:
        return
    if offset and answer[:, :offset].any():
        raise Mistake("a cached column is blocked: every node may see every cached token",
                      "キャッシュ済みの列が遮断されている。どのノードもキャッシュ済みのトークンをすべて参照してよい")
    if torch.equal(answer, offset_mask(n, offset)):
        raise Mistake("that is the causal mask of the nodes in list order: a node may not see a sibling's "
                      "branch, only its own ancestors",
                      "それはノードを並んだ順の 1 つの系列とみなした因果マスクである。"
                      "ノードが参照してよいのは自分の祖先だけで、兄弟の枝は参照してはならない")
    if answer[:, offset:].diagonal().any():
        raise Mistake("a node cannot see itself: each node's own key must stay visible",
                      "自分自身を見られないノードがある。各ノード自身のキーは見えるままにすること")
    if (~answer[:, offset:] & expected[:, offset:]).any():
        raise Mistake("a node sees a node outside its ancestors (a sibling's branch, or a node below it)",
                      "自分の祖先ではないノード（兄弟の枝、または自分より下のノード）を見ているノードがある")
    raise Mistake("not quite: for each node, walk up its parents; exactly those nodes (and itself) are visible",
                  "まだ違う。各ノードから親をたどること。参照してよいのは、たどったノード（と自分自身）だけである")


Parts = list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]


def _split_cases() -> list[tuple[str, Parts, float, tuple[torch.Tensor, torch.Tensor]]]:
    """Exercise 3's cases: (kind, partial results of two key ranges, a sink logit, the dense answer in float64).
    "empty range": row 0 sees no key of the second range; "dead row": row 0 sees no key at all (every range has
    m = -inf, l = 0, acc = 0); "large scores": float32 scores above 90 on every row, so exp(score) overflows
    unless the common max is subtracted first."""
    cases = []
    for kind, seed, sink in (("empty range", 0, 0.5), ("empty range", 1, -1.0), ("empty range", 2, 2.0),
                             ("dead row", 3, 0.5), ("large scores", 4, 95.0)):
        q, k, v, blocked = sink_example(seed=seed)
        if kind == "dead row":
            blocked[0] = True
        if kind == "large scores":
            blocked = torch.zeros_like(blocked)
            q = 1000 * q / q.norm(dim=-1, keepdim=True)               # every row's best score is far above 90
            q, k, v = q.float(), k.float(), v.float()
        scores = ((q @ k.T) / math.sqrt(q.shape[-1])).masked_fill(blocked, float("-inf"))   # (n, S)
        parts = []
        for keys in torch.arange(k.shape[0]).tensor_split(2):
            m = scores[:, keys].max(-1).values                          # (n,), -inf for a range with no visible key
            e = torch.exp(scores[:, keys] - torch.where(m.isfinite(), m, 0.0)[:, None])
            parts.append((m, e.sum(-1), e @ v[keys]))                  # l = 0 and acc = 0 for that range
        dense = sink_attention(q.double(), k.double(), v.double(), blocked, sink)
        cases.append((kind, parts, sink, (dense.out, dense.lse)))
    return cases


def _per_range_sink(parts: Parts, sink: float, every: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The double counts: the sink's exp added to each range's l (every range, or only those with a visible key)."""
    out = []
    for m, l, a in parts:
        live = m.isfinite()
        add = torch.exp(sink - torch.where(live, m, 0.0))
        out.append((m, l + (add if every else torch.where(live, add, 0.0)), a))
    if every:                                                          # an empty range adds exp(sink - M) too
        M = torch.stack([m for m, _, _ in parts]).max(0).values
        extra = sum(torch.where(m.isfinite(), 0.0, torch.exp(sink - M)) for m, _, _ in parts)
        return combine(out + [(M, extra, torch.zeros_like(parts[0][2]))])
    return combine(out)


@exercise
def check_3(answer: object) -> None:
    """Exercise 3: combine(parts, sink) -> (out, lse), the split-KV combine with a learned sink logit."""
    for kind, parts, sink, (out, lse) in _split_cases():
        got = call(answer, [tuple(t.clone() for t in p) for p in parts], sink,
                   when=say("on two key ranges and a sink,", "キーの範囲 2 つとシンクで呼んだとき、"))
        if not isinstance(got, tuple | list) or len(got) != 2 or not all(isinstance(t, torch.Tensor) for t in got):
            raise Mistake("return two tensors, (out, lse)", "2 つのテンソル (out, lse) を返すこと")
        g_out, g_lse = got[0].double(), got[1].double()
        if g_out.shape != out.shape or g_lse.shape != lse.shape:
            raise Mistake(f"out must have shape {tuple(out.shape)} and lse {tuple(lse.shape)}",
                          f"out の形状は {tuple(out.shape)}、lse は {tuple(lse.shape)} にすること")
        if not (g_out.isfinite().all() and g_lse.isfinite().all()):
            _non_finite(answer, kind, parts, sink)
        tol = 1e-6 if kind != "large scores" else 1e-4                 # float32 inputs: float32 rounding
        if torch.allclose(g_out, out, atol=tol) and torch.allclose(g_lse, lse, atol=tol, rtol=tol):
            continue
        without = combine(parts)
        if torch.allclose(g_out, without[0], atol=tol):
            raise Mistake("the sink is missing: it is one more softmax column, so its exp belongs in the "
                          "denominator",
                          "シンクが抜けている。シンクはソフトマックスに加わる 1 列なので、その exp も分母に入る")
        if any(torch.allclose(g_out, _per_range_sink(parts, sink, every)[0], atol=tol) for every in (False, True)):
            raise Mistake("the sink is counted once per range: add it once, after the ranges are combined",
                          "シンクを範囲ごとに数えている。範囲をまとめた後で 1 回だけ足すこと")
        if torch.allclose(g_out, out, atol=tol):
            raise Mistake("out is right, lse is not: lse is the common max plus the log of the whole denominator, "
                          "sink included",
                          "out は正しいが lse が違う。lse は共通の最大値に、"
                          "シンクを含む分母全体の log を足したものである")
        raise Mistake("not quite: rescale every range to one common max (the sink included) before adding",
                      "まだ違う。足す前に、すべての範囲を（シンクも含めた）共通の最大値に合わせて倍率をかけること")


def _non_finite(answer: object, kind: str, parts: Parts, sink: float) -> None:
    """Name the cause of a NaN or inf in exercise 3's answer, by the case it appeared in."""
    if kind == "large scores":
        raise Mistake("inf or NaN with float32 scores above 90: exp(score) overflows past about 88, so subtract the "
                      "common max before taking exp",
                      "float32 でスコアが 90 を超えると inf か NaN になる。exp(score) は 88 あたりで溢れるので、"
                      "exp を取る前に共通の最大値を引くこと")
    if kind == "dead row":
        raise Mistake("NaN or inf on a row that sees no key at all: every range has m = -inf there, so the common "
                      "max must include the sink, or it is -inf and exp(-inf - (-inf)) is NaN",
                      "どのキーも見えない行で NaN か inf になる。その行ではどの範囲も m = -inf なので、"
                      "共通の最大値にシンクを含めないと -inf になり、exp(-inf - (-inf)) が NaN になる")
    probe = [(m, torch.where(m.isfinite(), l, 1.0), a) for m, l, a in parts]   # an empty range: l = 1, not 0
    got = call(answer, probe, sink, when=say("on two key ranges and a sink,", "キーの範囲 2 つとシンクで呼んだとき、"))
    if isinstance(got, tuple | list) and len(got) == 2 and all(isinstance(t, torch.Tensor) for t in got) \
            and got[0].isfinite().all() and got[1].isfinite().all():
        raise Mistake("NaN on a row whose second range sees no key: acc / l of that range alone is 0 / 0; rescale "
                      "acc and l to the common max, sum them, and divide once at the end",
                      "2 つ目の範囲にキーが見えない行で NaN になる。その範囲だけで acc / l を計算すると 0 / 0 になる。"
                      "acc と l を共通の最大値に合わせて足し、最後に 1 回だけ割ること")
    raise Mistake("NaN or inf: a range with no visible key has m = -inf; its scale factor must be 0, "
                  "not exp(-inf - (-inf))",
                  "NaN か inf が出ている。見えるキーのない範囲は m = -inf である。その倍率は "
                  "exp(-inf - (-inf)) ではなく 0 にすること")


def combine_solution(parts: Parts, sink: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Exercise 3's solution: the sink as one more range (m = sink, l = 1, acc = 0), then combine."""
    m0, _, a0 = parts[0]
    return combine(list(parts) + [(torch.full_like(m0, sink), torch.ones_like(m0), torch.zeros_like(a0))])
