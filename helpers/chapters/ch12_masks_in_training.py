"""Chapter 12: masks in training: gradients through a mask, dead rows in backward, the loss mask, pooling, explorer.

The running example of steps 2-3 is chapter 7's: one attention layer (nn.MultiheadAttention's projections),
a batch of two items, item 0 left-padded under a causal mask, so its two pad query rows see no key (dead rows).
`Attention(mha, fix)` is that layer with one way of handling dead rows; it takes the series' calling convention
attn(x, key_padding_mask, attn_mask), so helpers.checks can test it. `gradients()` backpropagates a loss that
reads only chosen outputs. Step 4 trains a small cousin of chapter 9's TinyLM to count up to 9 and stop.
The explorer (at the end): one batch with adjustable lengths, padding side, fill, loss and pooling; it shows the
weight of every token's output in the loss, the real tokens' gradient change against the unpadded run, and
which gradients are finite. Every update backpropagates a 2 x 5 batch (about a millisecond), cached.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Sequence
from typing import NamedTuple

import ipywidgets as widgets
import torch
import torch.nn.functional as F
from torch import nn

from helpers import arguments
from helpers.chapters.ch09_batched_generation import TinyLM
from helpers.exercises import Mistake, as_tensor, call, exercise
from helpers.explorer import RED, Explorer, Panel, View, explorer
from helpers.language import Bilingual, labeller, say
from helpers.masks import causal_mask, key_padding_mask, left_pad
from helpers.training import Adam, deterministic

IGNORE = -100   # cross_entropy's default ignore_index

# --- step 1: what flows backward through a mask ---

STEP1_FILLS = ("bool mask, masked_fill(-inf)", "masked_fill(-1e9)", "masked_fill(finfo.min)",
               "additive mask (0 / finfo.min)", "additive mask (0 / -inf)")


def masked_scores(scores: torch.Tensor, blocked: torch.Tensor, how: str) -> torch.Tensor:
    """scores with the blocked cells hidden in one of the ways of STEP1_FILLS (by replacement or by addition)."""
    arguments.floating(scores, "scores")
    arguments.bool_mask(blocked, "blocked")
    low = torch.finfo(scores.dtype).min
    if how == STEP1_FILLS[0]:
        return scores.masked_fill(blocked, float("-inf"))
    if how == STEP1_FILLS[1]:
        return scores.masked_fill(blocked, -1e9)
    if how == STEP1_FILLS[2]:
        return scores.masked_fill(blocked, low)
    if how == STEP1_FILLS[3]:
        return scores + torch.zeros_like(scores).masked_fill(blocked, low)
    if how == STEP1_FILLS[4]:
        return scores + torch.zeros_like(scores).masked_fill(blocked, float("-inf"))
    raise ValueError(f"how must be one of {STEP1_FILLS}, got {how!r}")


# --- steps 2-3: one attention layer, with each way of handling a dead row ---

FIXES = ("-inf", "-1e9", "finfo.min", "safe softmax", "see itself", "zero after softmax",
         "zero after softmax, additive -inf", "drop dead rows", "sdpa")


def safe_softmax(scores: torch.Tensor, blocked: torch.Tensor) -> torch.Tensor:
    """Softmax over the visible keys; a row with no visible key gives 0 everywhere, with a finite gradient."""
    arguments.floating(scores, "scores")
    arguments.bool_mask(blocked, "blocked")
    hidden = scores.masked_fill(blocked, float("-inf"))
    top = hidden.amax(-1, keepdim=True).detach()
    top = torch.where(top.isfinite(), top, torch.zeros_like(top))   # a dead row: subtract 0, not -inf
    e = (hidden - top).exp()                                         # exactly 0 at every blocked cell
    total = e.sum(-1, keepdim=True)
    return e / torch.where(total == 0, torch.ones_like(total), total)


def project(mha: nn.MultiheadAttention, x: torch.Tensor) -> list[torch.Tensor]:
    """MHA's input projection, split into heads: q, k, v of shape (N, H, L, E/H) (chapter 7's project)."""
    N, L, E = x.shape
    q, k, v = F.linear(x, mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1)
    return [t.view(N, L, mha.num_heads, E // mha.num_heads).transpose(1, 2) for t in (q, k, v)]


def merge(mha: nn.MultiheadAttention, heads: torch.Tensor) -> torch.Tensor:
    """(N, H, L, E/H) -> (N, L, E), then MHA's output projection."""
    N, _, L, _ = heads.shape
    return mha.out_proj(heads.transpose(1, 2).reshape(N, L, -1))


class Attention(nn.Module):
    """One attention layer with `mha`'s weights; `fix` says how a query row with no visible key is handled.

    forward(x, key_padding_mask, attn_mask) -> (N, L, E), helpers.checks' calling convention
    (key_padding_mask True = pad, attn_mask True = not allowed, or None).
    """

    def __init__(self, mha: nn.MultiheadAttention, fix: str = "finfo.min"):
        super().__init__()
        if not isinstance(mha, nn.MultiheadAttention) or not mha.batch_first:
            raise TypeError("mha must be an nn.MultiheadAttention with batch_first=True")
        if fix not in FIXES:
            raise ValueError(f"fix must be one of {FIXES}, got {fix!r}")
        self.mha, self.fix = mha, fix

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor,
                attn_mask: torch.Tensor | None = None) -> torch.Tensor:
        arguments.bool_mask(key_padding_mask, "key_padding_mask")
        blocked = key_padding_mask[:, None, None, :]                       # (N, 1, 1, S)
        if attn_mask is not None:
            blocked = blocked | arguments.bool_mask(attn_mask, "attn_mask")
        L = x.shape[1]
        blocked = blocked.expand(x.shape[0], 1, L, L)
        dead = blocked.all(-1, keepdim=True)                               # (N, 1, L, 1)
        q, k, v = project(self.mha, x)
        if self.fix == "sdpa":
            return merge(self.mha, F.scaled_dot_product_attention(q, k, v, attn_mask=~blocked))
        if self.fix == "drop dead rows":
            return merge(self.mha, self._without_dead_rows(q, k, v, blocked, dead))
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if self.fix == "see itself":
            blocked = blocked & ~torch.eye(L, dtype=torch.bool)           # the diagonal is always visible
        if self.fix == "safe softmax":
            weights = safe_softmax(scores, blocked)
        elif self.fix == "zero after softmax, additive -inf":
            weights = (scores + torch.zeros_like(scores).masked_fill(blocked, float("-inf"))).softmax(-1)
            weights = weights.masked_fill(dead, 0.0)
        else:
            fill = {"-inf": float("-inf"), "-1e9": -1e9}.get(self.fix, torch.finfo(scores.dtype).min)
            weights = scores.masked_fill(blocked, fill).softmax(-1)
            if self.fix == "zero after softmax":
                weights = weights.masked_fill(dead, 0.0)
        return merge(self.mha, weights @ v)

    @staticmethod
    def _without_dead_rows(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, blocked: torch.Tensor,
                           dead: torch.Tensor) -> torch.Tensor:
        """Attention for the rows that see a key only (each item's live rows, selected); dead rows get 0."""
        rows = []
        for n in range(q.shape[0]):
            live = ~dead[n, 0, :, 0]
            out = torch.zeros_like(q[n])
            if live.any():
                index = live.nonzero()[:, 0]
                got = F.scaled_dot_product_attention(q[n:n + 1, :, index], k[n:n + 1], v[n:n + 1],
                                                     attn_mask=~blocked[n:n + 1, :, index])[0]
                out = out.index_copy(1, index, got)
            rows.append(out)
        return torch.stack(rows)


class Grads(NamedTuple):
    loss: torch.Tensor                  # the loss (0-d)
    params: dict[str, torch.Tensor]     # every parameter's gradient, by name
    x: torch.Tensor                     # the input's gradient (N, L, E)


def gradients(module: nn.Module, run: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor,
              read: torch.Tensor, directions: torch.Tensor) -> Grads:
    """Backpropagate loss = sum over the outputs selected by `read` (bool (N, L)) of <output, direction>.

    run(x) -> (N, L, E) is one forward pass through `module`; selecting (indexing) the read outputs means the
    others get gradient exactly 0, as under a correct loss mask."""
    arguments.bool_mask(read, "read")
    module.zero_grad(set_to_none=True)
    x = x.clone().requires_grad_(True)
    out = run(x)
    loss = (out[read] * directions[read]).sum()
    loss.backward()
    params = {name: (torch.zeros_like(p) if p.grad is None else p.grad.clone())
              for name, p in module.named_parameters()}
    module.zero_grad(set_to_none=True)
    return Grads(loss.detach(), params, x.grad.detach())


def additive(blocked: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """A float mask to ADD to the scores: 0 where visible, -inf where `blocked` (True = hidden)."""
    arguments.bool_mask(blocked, "blocked")
    return torch.zeros(blocked.shape, dtype=dtype).masked_fill(blocked, float("-inf"))


def mha_run(mha: nn.MultiheadAttention, need_weights: bool, masks: tuple[torch.Tensor, torch.Tensor],
            mode: str = "train") -> Callable[[torch.Tensor], torch.Tensor]:
    """run(x) for gradients(): `mha`, put in `mode` ("train" or "eval"), with x (N, L, E) as query, key and value
    and masks = (key_padding_mask, attn_mask); x is transposed to (L, N, E) and back if mha is not batch_first."""
    if not isinstance(mha, nn.MultiheadAttention):
        raise TypeError(f"mha must be an nn.MultiheadAttention, got {type(mha).__name__}")
    if mode not in ("train", "eval"):
        raise ValueError(f"mode must be 'train' or 'eval', got {mode!r}")
    kpm, attn_mask = masks

    def run(x: torch.Tensor) -> torch.Tensor:
        t = x if mha.batch_first else x.transpose(0, 1)
        out = mha.train(mode == "train")(t, t, t, key_padding_mask=kpm, attn_mask=attn_mask,
                                         need_weights=need_weights)[0]
        return out if mha.batch_first else out.transpose(0, 1)
    return run


def flex_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, key_padding_mask: torch.Tensor) -> str:
    """Try flex_attention (eager, causal + padding mask_mod) forward and backward on the CPU; what happened."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    N, _, L, _ = q.shape

    def mod(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor) -> torch.Tensor:
        return ~key_padding_mask[b, kv_idx] & (q_idx >= kv_idx)
    block_mask = create_block_mask(mod, B=N, H=None, Q_LEN=L, KV_LEN=L, device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # "flex_attention called without torch.compile()": chapter 10 shows it
        try:
            out = flex_attention(q, k, v, block_mask=block_mask)
        except NotImplementedError as error:
            return f"NotImplementedError: {str(error).splitlines()[0]}"
    return "ran" if out.isfinite().all() else "ran, NaN"


# --- step 4: the loss mask; a model that must learn to stop ---

STOP_TOKENS = tuple("0123456789") + ("<eos>",)
EOS_ID = 10   # and, in the trap, the pad id too


def stop_lines() -> list[list[int]]:
    """Ten lines: count from each digit s up to 9, then <eos> ("6 7 8 9 <eos>"): 2 to 11 tokens."""
    return [list(range(s, 10)) + [EOS_ID] for s in range(10)]


def labels_by_position(ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Labels = ids, with -100 wherever attention_mask is 0 (a pad): by position, whatever the pad's id."""
    arguments.tensor(ids, "ids")
    arguments.keep_mask(attention_mask, "attention_mask")
    if ids.shape != attention_mask.shape:
        raise ValueError(f"ids and attention_mask must have the same shape, got {tuple(ids.shape)} and "
                         f"{tuple(attention_mask.shape)}")
    return ids.masked_fill(attention_mask == 0, IGNORE)


def stopper(seed: int = 0) -> TinyLM:
    """Chapter 9's TinyLM, smaller: 1 block, 16 dimensions, 2 heads, 11 tokens (digits and <eos>), seeded."""
    torch.manual_seed(arguments.integer(seed, "seed"))
    return TinyLM(vocab_size=len(STOP_TOKENS), d_model=16, n_heads=2, n_layers=1, max_len=16)


def train_stopper(ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor, steps: int = 60,
                  lr: float = 1e-2, seed: int = 0) -> tuple[TinyLM, list[float]]:
    """Train stopper(seed) on next-token cross-entropy: the logits at t predict labels[t + 1] (-100 = no loss).
    Full batch, AdamW (helpers.training.Adam), one thread, deterministic: the same model every run."""
    steps = arguments.integer(steps, "steps", minimum=1)
    lr = arguments.number(lr, "lr", minimum=0)
    if not (ids.shape == attention_mask.shape == labels.shape) or ids.dim() != 2:
        raise ValueError(f"ids, attention_mask and labels must all be (N, L), got {tuple(ids.shape)}, "
                         f"{tuple(attention_mask.shape)}, {tuple(labels.shape)}")
    model, losses = stopper(seed), []
    optimizer = Adam(model.parameters(), weight_decay=0.01)
    with deterministic():
        for _ in range(steps):
            logits = model(ids[:, :-1], attention_mask[:, :-1]).logits
            loss = F.cross_entropy(logits.flatten(0, 1), labels[:, 1:].flatten(), ignore_index=IGNORE)
            loss.backward()
            optimizer.step(lr)
            losses.append(loss.item())
    return model.eval(), losses


@torch.no_grad()
def continue_line(model: TinyLM, start: int, max_new: int = 12) -> list[int]:
    """Greedy continuation of the one-token line [start], until <eos> or max_new new tokens."""
    start = arguments.integer(start, "start", minimum=0)
    ids = [start]
    for _ in range(arguments.integer(max_new, "max_new", minimum=1)):
        nxt = int(model(torch.tensor([ids[-model.max_len:]])).logits[0, -1].argmax())
        ids.append(nxt)
        if nxt == EOS_ID:
            break
    return ids


def spell(ids: list[int]) -> str:
    """[6, 7, 10] -> '6 7 <eos>'."""
    return " ".join(STOP_TOKENS[i] for i in ids)


def token_weights(lengths: list[int], mean: str) -> torch.Tensor:
    """(N, max length) weight of each real token in a mean loss: "token" = 1/total tokens, "sequence" = 1/(N L_i)."""
    if not isinstance(lengths, (list, tuple)) or not lengths or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in lengths):
        raise ValueError(f"lengths must be a non-empty list of ints >= 1, got {lengths!r}")
    if mean not in ("token", "sequence"):
        raise ValueError(f"mean must be 'token' or 'sequence', got {mean!r}")
    real = torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]
    if mean == "token":
        return real.double() / sum(lengths)
    return real.double() / (len(lengths) * torch.tensor(lengths, dtype=torch.float64)[:, None])


# --- step 5: pooling ---

POOLINGS = ("mean with pads", "mean of real tokens", "last slot", "last real token", "first slot",
            "first real token")


def pool(h: torch.Tensor, key_padding_mask: torch.Tensor, how: str) -> torch.Tensor:
    """(N, L, E) outputs -> (N, E), one vector per item; key_padding_mask True = pad."""
    arguments.bool_mask(key_padding_mask, "key_padding_mask")
    real = ~key_padding_mask
    rows = torch.arange(h.shape[0])
    if how == "mean with pads":
        return h.mean(1)
    if how == "mean of real tokens":   # masked_fill, not h * mask: a NaN at a pad would give 0 * NaN = NaN
        return h.masked_fill(key_padding_mask[..., None], 0.0).sum(1) / real.sum(1, keepdim=True)
    if how == "last slot":
        return h[:, -1]
    if how == "last real token":      # the last True of `real`, on either padding side
        return h[rows, h.shape[1] - 1 - real.flip(-1).int().argmax(-1)]
    if how == "first slot":
        return h[:, 0]
    if how == "first real token":
        return h[rows, real.int().argmax(-1)]
    raise ValueError(f"how must be one of {POOLINGS}, got {how!r}")


class Pooled(nn.Module):
    """An attention layer (with a finfo.min fill) followed by one pooling: attn(x, kpm, attn_mask) -> (N, E)."""

    def __init__(self, mha: nn.MultiheadAttention, how: str):
        super().__init__()
        if how not in POOLINGS:
            raise ValueError(f"how must be one of {POOLINGS}, got {how!r}")
        self.layer, self.how = Attention(mha, "finfo.min"), how

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor,
                attn_mask: torch.Tensor | None = None) -> torch.Tensor:
        return pool(self.layer(x, key_padding_mask, attn_mask), key_padding_mask, self.how)


# --- the explorer: one batch, its loss weights and its gradients ---

S = 5                                        # slots per item
SIDES = ("right", "left")
FILLS = {"-inf": "-inf", "-1e9": "-1e9", "finfo.min": "finfo.min", "safe softmax": "safe softmax"}
LOSSES = ("token mean", "sequence mean", "pads in the loss")
VIEW_POOLINGS = ("none: a loss per token",) + POOLINGS
# the options' names in the Japanese summary line (the words chapter 12's Japanese text uses for them)
SIDES_JA = {"right": "右", "left": "左"}
FILLS_JA = {"-inf": "埋め値 -inf", "-1e9": "埋め値 -1e9", "finfo.min": "埋め値 finfo.min",
            "safe softmax": "安全なソフトマックス"}
LOSSES_JA = {"token mean": "トークン平均", "sequence mean": "系列平均", "pads in the loss": "損失にパッドを含める"}
POOLINGS_JA = {"mean with pads": "パッドを含む平均", "mean of real tokens": "実トークンの平均",
               "last slot": "最後のスロット", "last real token": "最後の実トークン",
               "first slot": "最初のスロット", "first real token": "最初の実トークン"}
# the options' labels in the Japanese edition's controls (a fill that is code stays as it is)
LABELS_JA = {**SIDES_JA, **LOSSES_JA, **POOLINGS_JA, "safe softmax": "安全なソフトマックス",
             "none: a loss per token": "なし（トークンごとの損失）"}


def _labelled(values: Sequence[str]) -> list[tuple[str, str]]:
    """(label, value) for each option: the label in the current language."""
    return [(say(v, LABELS_JA.get(v, v)), v) for v in values]


@functools.cache
def _lab() -> tuple[nn.MultiheadAttention, torch.Tensor, torch.Tensor]:
    """The explorer's layer (seeded), its 2 x 5 token vectors and a fixed random direction per output."""
    torch.manual_seed(12)
    mha = nn.MultiheadAttention(8, 2, batch_first=True, dropout=0.0)
    g = torch.Generator().manual_seed(12)
    return mha, torch.randn(2, S, 8, generator=g), torch.randn(2, S, 8, generator=g)


def objective_weights(lengths: tuple[int, ...], side: str, loss: str, pooling: str) -> torch.Tensor:
    """(N, S) weight of each slot's output in the objective: a mean loss per token, or (pooling) the pooling's
    weights, averaged over the items."""
    N = len(lengths)
    real = ~key_padding_mask(lengths, S, side=side)               # (N, S), True = real token
    if pooling != VIEW_POOLINGS[0]:
        one_hot = torch.eye(S)[None].expand(N, S, S)          # pooling one-hot slots gives each slot's weight
        return pool(one_hot, ~real, pooling) / N
    if loss == "pads in the loss":
        return torch.full((N, S), 1 / (N * S))
    if loss == "token mean":
        return real.float() / real.sum()
    return real.float() / (N * real.sum(1, keepdim=True))


def _place(v: torch.Tensor, lengths: tuple[int, ...], side: str) -> torch.Tensor:
    """Real tokens x[i, :L_i] at the right or left end of each row (pads hold zeros)."""
    right = v.masked_fill(key_padding_mask(lengths, S)[..., None], 0.0)   # (N, S, E): pads zeroed, last
    return right if side == "right" else left_pad(right, lengths)


class Lab(NamedTuple):
    weights: torch.Tensor          # (N, S) each slot's weight in the objective
    real: torch.Tensor             # (N, S) bool, True = real token
    change: torch.Tensor           # (N, S) max |grad of x, padded - alone| per real token (NaN if non-finite)
    nonfinite: tuple[str, ...]     # parameters whose gradient is NaN or inf
    loss_finite: bool
    dead: int                      # query rows with no visible key


def _backward(lengths: tuple[int, ...], side: str, fill: str, weights: torch.Tensor,
              real: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor], torch.Tensor]:
    mha, x, d = _lab()
    layer = Attention(mha, fill)
    N = len(lengths)
    xs, ds = _place(x[:N], lengths, side), _place(d[:N], lengths, side)
    pads = torch.where(real, 0.0, 1.0)[..., None] * d[:N]          # pads' outputs still get a direction
    mha.zero_grad(set_to_none=True)
    xs = xs.clone().requires_grad_(True)
    out = layer(xs, ~real, causal_mask(S))
    read = weights != 0                                            # select what the loss reads: never 0 * NaN
    loss = (out[read] * ((ds + pads) * weights[..., None])[read]).sum()
    loss.backward()
    params = {n: p.grad.clone() for n, p in mha.named_parameters()}
    mha.zero_grad(set_to_none=True)
    return loss.detach(), params, xs.grad.detach()


@functools.cache
def lab(lengths: tuple[int, ...], side: str, fill: str, loss: str, pooling: str) -> Lab:
    """The explorer's numbers for one setting (cached): the padded batch vs each item alone, unpadded, under the
    intended objective (token or sequence mean over real tokens, or the intended pooling of the real tokens)."""
    real = ~key_padding_mask(lengths, S, side=side)               # (N, S), True = real token
    weights = objective_weights(lengths, side, loss, pooling)
    total, params, gx = _backward(lengths, side, fill, weights, real)
    intended_loss = "token mean" if loss == "pads in the loss" else loss
    intended_pool = {"mean with pads": "mean of real tokens", "last slot": "last real token",
                     "first slot": "first real token"}.get(pooling, pooling)
    alone = objective_weights(lengths, "right", intended_loss, intended_pool)   # the same weights, unpadded
    _, _, gx_alone = _alone_backward(lengths, alone)
    change = torch.full((len(lengths), S), float("nan"))
    for i, n in enumerate(lengths):
        here = gx[i][real[i]]
        change[i, real[i]] = (here - gx_alone[i][:n]).abs().amax(-1)
    blocked = (~real)[:, None, :] | causal_mask(S)
    nonfinite = tuple(n for n, g in params.items() if not g.isfinite().all())
    return Lab(weights, real, change, nonfinite, bool(total.isfinite()), int(blocked.all(-1).sum()))


def _alone_backward(lengths: tuple[int, ...], weights: torch.Tensor) -> tuple[None, None, list[torch.Tensor]]:
    """Each item alone, unpadded: its real tokens' input gradients under the intended weights."""
    mha, x, d = _lab()
    layer = Attention(mha, "-inf")
    grads = []
    for i, n in enumerate(lengths):
        xi = x[i:i + 1, :n].clone().requires_grad_(True)
        out = layer(xi, torch.zeros(1, n, dtype=torch.bool), causal_mask(n))
        (out * d[i:i + 1, :n] * weights[i:i + 1, :n, None]).sum().backward()
        grads.append(xi.grad[0].detach())
    mha.zero_grad(set_to_none=True)
    return None, None, grads


def training_view(length_0: int = 3, length_1: int = 5, padding: str = "left", fill: str = "-inf",
                  loss: str = "token mean", pooling: str = VIEW_POOLINGS[0]) -> View:
    """Chapter 12: each slot's weight in the loss, and the real tokens' gradient change vs the unpadded run."""
    for name, value in (("length_0", length_0), ("length_1", length_1)):
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= S:
            raise ValueError(f"{name} must be an int from 1 to {S}, got {value!r}")
    if padding not in SIDES or fill not in FILLS or loss not in LOSSES or pooling not in VIEW_POOLINGS:
        raise ValueError(f"padding, fill, loss, pooling must be in {SIDES}, {tuple(FILLS)}, {LOSSES}, "
                         f"{VIEW_POOLINGS}; got {padding!r}, {fill!r}, {loss!r}, {pooling!r}")
    lengths = (length_0, length_1)
    got = lab(lengths, padding, fill, loss, pooling)
    pads = ~got.real
    slots = [str(j) for j in range(S)]
    items = [say(f"item {i} (length {n})", f"サンプル {i}（長さ {n}）") for i, n in enumerate(lengths)]
    on_pads = pads & (got.weights != 0)
    slot = Bilingual("slot", "スロット")
    weights = Panel(got.weights, items, slots, title=Bilingual("weight of each slot's output in the loss",
                                                               "損失の中での各スロットの出力の重み"),
                    masked=pads & ~on_pads, framed=on_pads, frame_color=RED, mark="!", fmt=".3f",
                    alert=bool(on_pads.any()), xlabel=slot, ylabel="")
    moved = got.real & ~(got.change <= 1e-5)
    shown = got.change.masked_fill(pads | (got.change <= 1e-5), 0.0)   # rounding below 1e-5 shows as 0
    change = Panel(shown, items, slots,
                   title=Bilingual("real tokens: |gradient change| vs unpadded",
                                   "実トークン：パディングなしとの |勾配の変化|"), masked=pads, framed=moved,
                   frame_color=RED, mark="×", alert=bool(moved.any()), fmt=".2g", xlabel=slot, ylabel="")
    if not got.loss_finite:
        verdict = say("the loss itself is NaN", "損失そのものが NaN")
    elif got.nonfinite:
        verdict = say(f"NaN gradients in {', '.join(got.nonfinite)}", f"{'、'.join(got.nonfinite)} の勾配が NaN")
    else:
        verdict = say("every gradient finite", "勾配はすべて有限")
    worst = got.change[got.real]
    if worst.isnan().any():
        same = say("real-token gradients NaN", "実トークンの勾配は NaN")
    elif float(worst.max()) <= 1e-5:
        same = say("real-token gradients unchanged vs unpadded (within 1e-5)",
                   "実トークンの勾配はパディングなしと同じ（1e-5 以内）")
    else:
        same = say(f"real-token gradients moved by up to {float(worst.max()):.2g}",
                   f"実トークンの勾配がパディングなしから最大 {float(worst.max()):.2g} ずれた")
    if pooling == VIEW_POOLINGS[0]:
        head = say("per-token loss, " + loss, f"トークンごとの損失（{LOSSES_JA[loss]}）")
    else:
        head = say(f"pooled: {pooling}", f"プーリングは「{POOLINGS_JA[pooling]}」")
    summary = say(f"lengths {list(lengths)}, {padding} padding + causal, fill {fill}, {head}: {got.dead} dead "
                  f"row(s); {verdict}; {same}",
                  f"長さ {list(lengths)}、{SIDES_JA[padding]}パディング、因果マスク、{FILLS_JA[fill]}、{head}。"
                  f"死んだ行は {got.dead} 個。{verdict}。{same}")
    caption = Bilingual("hatched: a pad (left: weight 0; right: no unpadded run to compare, shown as 0); ! a pad "
                        "that the loss reads; × a real token whose gradient moved",
                        "斜線：パッド（左は重み 0。右は比べるパディングなしの実行がないので 0 と表示）。"
                        "!：損失が読むパッド。×：勾配が動いた実トークン")
    return View((weights, change), summary, caption)


def training_explorer() -> Explorer:
    """Lengths, padding side, fill, loss and pooling -> loss weights per slot and the gradient change."""
    controls = {
        "length_0": widgets.IntSlider(value=3, min=1, max=S, description=say("length 0", "長さ 0")),
        "length_1": widgets.IntSlider(value=5, min=1, max=S, description=say("length 1", "長さ 1")),
        "padding": widgets.ToggleButtons(options=_labelled(SIDES), value="left",
                                         description=say("padding", "パディング")),
        "fill": widgets.Dropdown(options=_labelled(tuple(FILLS)), value="-inf", description=say("fill", "埋め値")),
        "loss": widgets.Dropdown(options=_labelled(LOSSES), value="token mean", description=say("loss", "損失")),
        "pooling": widgets.Dropdown(options=_labelled(VIEW_POOLINGS), value=VIEW_POOLINGS[0],
                                    description=say("pooling", "プーリング")),
    }
    return explorer(controls, training_view, Bilingual(
        'Lengths, padding side, fill, loss and pooling -> loss weights per slot and the gradient change.',
        '長さ、パディングの側、埋め値、損失、プーリング → スロットごとの損失の重みと勾配の変化'))


EXPLORERS = (training_explorer,)
# What the static explorer (helpers/static_explorer.py) keeps of the controls: 4200 settings, more than it
# precomputes; the two lengths take 1, 3 and 5 (both ends and the middle): 1512 settings.
SUBGRIDS = {training_explorer: {"length_0": (1, 3, 5), "length_1": (1, 3, 5)}}


# --- the exercise checks ---

@exercise
def check_1(answer: object, ids: torch.Tensor, attention_mask: torch.Tensor) -> None:
    """Exercise 1: labels for a batch padded with the <eos> id, -100 wherever attention_mask is 0."""
    answer = as_tensor(answer, Mistake("the labels should be a tensor of token ids",
                                       "ラベルはトークン ID のテンソルにすること"))
    expected = labels_by_position(ids, attention_mask)
    if answer.shape != expected.shape:
        raise Mistake(f"the labels should have the shape of ids, {tuple(ids.shape)}",
                      f"ラベルの形状は ids と同じ {tuple(ids.shape)} にすること")
    if answer.dtype != torch.int64:
        raise Mistake(f"labels are token ids: cross_entropy wants an int64 tensor, got {answer.dtype}",
                      f"ラベルはトークン ID なので、cross_entropy には int64 のテンソルを渡す。渡されたのは "
                      f"{answer.dtype} である")
    pads = attention_mask == 0
    at_pads = answer[pads].unique()
    if len(at_pads) == 1 and int(at_pads) != IGNORE and not torch.equal(answer[pads], ids[pads]):
        raise Mistake(f"the ignored positions must hold -100 (cross_entropy's ignore_index), not {int(at_pads)}",
                      f"無視する位置に入れるのは {int(at_pads)} ではなく、-100（cross_entropy の ignore_index）"
                      "である")
    if (answer[~pads] == IGNORE).all():
        raise Mistake("the -100s sit on the real tokens: attention_mask 1 marks a real token, 0 a pad",
                      "-100 が実トークンの位置に入っている。attention_mask の 1 は実トークン、0 はパッドを表す")
    words = ~pads & (ids != EOS_ID)                    # the real tokens other than <eos>
    if (answer[words] != ids[words]).any():
        shifted = ~pads[:, 1:] & ~pads[:, :-1]
        if shifted.any() and torch.equal(answer[:, :-1][shifted], ids[:, 1:][shifted]):
            raise Mistake("do not shift the labels: a causal LM (and train_stopper) shifts them itself; "
                          "label t is the token at t",
                          "ラベルをずらさないこと。因果 LM（と train_stopper）は自分でずらす。位置 t のラベルは"
                          "位置 t のトークンである")
        raise Mistake("every real token (attention_mask 1) must keep its own id as its label",
                      "実トークン（attention_mask が 1）はどれも、自分自身の ID をラベルとして持つこと")
    if (answer[~pads] != ids[~pads]).any():
        raise Mistake("a real <eos> lost its label: it has the pad's id, but the attention mask says it is real. "
                      "Build the labels from the mask, not from the token id",
                      "実トークンの <eos> がラベルを失っている。ID はパッドと同じだが、アテンションマスクは"
                      "実トークンだと示している。ラベルはトークン ID からではなく、マスクから作ること")
    if (answer[pads] != IGNORE).any():
        raise Mistake("the pads (attention_mask 0) still have labels: the loss would learn from them",
                      "パッド（attention_mask が 0）にまだラベルが残っている。これでは損失がパッドから学んでしまう")


@exercise
def check_2(answer: object) -> None:
    """Exercise 2: a function last_token(h, attention_mask) -> (N, E), the last real token, either padding side."""
    if not callable(answer):
        raise Mistake("answer_2 should be a function last_token(h, attention_mask)",
                      "answer_2 は関数 last_token(h, attention_mask) にすること")
    g = torch.Generator().manual_seed(2)
    h = torch.randn(3, 5, 4, generator=g)
    lengths = torch.tensor([2, 5, 3])
    right = (torch.arange(5)[None, :] < lengths[:, None]).long()
    for side, mask in (("right", right), ("left", (~key_padding_mask(lengths, 5, side="left")).long())):
        side_ja = SIDES_JA[side]
        expected = pool(h, mask == 0, "last real token")
        try:
            got = answer(h.clone(), mask.clone())
        except IndexError as error:
            raise Mistake(f"with {side} padding your function raised IndexError: {error}. Positions run from 0 "
                          "to L - 1: is an index one too far?",
                          f"{side_ja}パディングのとき、書いた関数で IndexError が発生した（{error}）。位置は 0 から "
                          "L - 1 までである。インデックスが 1 つ先へ行きすぎていないか？") from None
        except Exception as error:   # the learner's code: any error is a hint, not a crash
            raise Mistake(f"with {side} padding your function raised {type(error).__name__}: {error}",
                          f"{side_ja}パディングのとき、書いた関数で {type(error).__name__} が発生した"
                          f"（{error}）") from None
        if not isinstance(got, torch.Tensor) or tuple(got.shape) != (3, 4):
            shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
            raise Mistake(f"return one vector per item, shape (N, E) = (3, 4); got {shape}",
                          f"サンプルごとにベクトルを 1 つ、形状 (N, E) = (3, 4) で返すこと。返ってきたのは {shape} "
                          "である")
        if torch.equal(got, h[:, -1]) and not torch.equal(got, expected):
            raise Mistake(f"with {side} padding the last slot is a pad for the shorter items",
                          f"{side_ja}パディングでは、短いサンプルの最後のスロットはパッドである")
        if torch.equal(got, h[:, 0]) and not torch.equal(got, expected):
            raise Mistake(f"that is the first slot; with {side} padding it is not the last real token",
                          f"それは最初のスロットである。{side_ja}パディングでは、それは最後の実トークンではない")
        if torch.equal(got, h[torch.arange(3), mask.flip(-1).argmax(-1)]) and not torch.equal(got, expected):
            raise Mistake(f"with {side} padding some item got another vector: a position found on the flipped "
                          "mask counts from the end; turn it back into a position from the start",
                          f"{side_ja}パディングのとき、一部のサンプルで返ったベクトルが違う。反転したマスクで見つけた"
                          "位置は末尾から数えたものなので、先頭から数えた位置に直すこと")
        if not torch.equal(got, expected):
            hint = " (the number of real tokens - 1 is that position only under right padding)" \
                if side == "left" else ""
            hint_ja = "（実トークンの数 - 1 がその位置になるのは、右パディングのときだけである）" \
                if side == "left" else ""
            raise Mistake(f"with {side} padding some item got another vector: return each item's output at "
                          f"the last position whose mask is 1{hint}",
                          f"{side_ja}パディングのとき、一部のサンプルで返ったベクトルが違う。各サンプルの、マスクが 1 "
                          f"である最後の位置の出力を返すこと{hint_ja}")


@exercise
def check_3(answer: object) -> None:
    """Exercise 3: safe_softmax(scores, blocked): softmax over visible keys, 0 in a dead row, finite gradients."""
    if not callable(answer):
        raise Mistake("answer_3 should be a function safe_softmax(scores, blocked)",
                      "answer_3 は関数 safe_softmax(scores, blocked) にすること")
    g = torch.Generator().manual_seed(3)
    scores = torch.randn(2, 4, 4, generator=g)
    blocked = (torch.tensor([[True, True, False, False], [False] * 4])[:, None, :] | causal_mask(4))  # 2 dead rows
    dead = blocked.all(-1)
    s = scores.clone().requires_grad_(True)
    weights = call(answer, s, blocked.clone())
    if not isinstance(weights, torch.Tensor) or weights.shape != scores.shape:
        raise Mistake("return the weights, a tensor of the shape of scores",
                      "重みを、scores と同じ形状のテンソルとして返すこと")
    if weights.dtype != scores.dtype:
        raise Mistake(f"return the weights in the dtype of scores ({scores.dtype}), as softmax does; "
                      f"got {weights.dtype}",
                      f"`softmax` と同じく、重みは scores の dtype（{scores.dtype}）で返すこと。返ってきたのは "
                      f"{weights.dtype} である")
    if weights[dead].isnan().any():
        raise Mistake("a row with no visible key gave NaN: softmax of a row of -inf is 0/0, any 0/0 is NaN, "
                      "and multiplying NaN by 0 leaves NaN",
                      "見えるキーのない行が NaN になった。-inf だけの行のソフトマックスは 0/0 であり、0/0 は"
                      "必ず NaN になり、NaN に 0 を掛けても NaN のままである")
    w = weights.detach()
    if (w[dead] != 0).any():
        uniform = torch.allclose(w[dead], torch.full_like(w[dead], 1 / w.shape[-1]))
        raise Mistake("a row with no visible key must be all zeros" +
                      (" (a finite fill spreads it evenly over the blocked keys)" if uniform else ""),
                      "見えるキーのない行はすべて 0 にすること" +
                      ("（有限の埋め値では、重みが隠したキーに均等に広がる）" if uniform else ""))
    live = ~dead
    if not torch.allclose(w[live].sum(-1), torch.ones(int(live.sum()))):
        raise Mistake("each row with a visible key must sum to 1 over the keys: softmax over the last dimension",
                      "見えるキーのある行は、キーについての和が 1 になること。ソフトマックスは最後の次元でとる")
    if (w[live[..., None] & blocked] > 1e-6).any():
        raise Mistake("a hidden key got weight in a row that has visible keys: blocked True means hidden",
                      "見えるキーのある行で、隠したキーに重みが付いている。blocked の True は「隠す」を意味する")
    expected = scores.masked_fill(blocked, float("-inf")).softmax(-1)
    if not torch.allclose(w[live], expected[live], atol=1e-6):
        raise Mistake("rows with a visible key must be the ordinary softmax over their visible keys, 0 elsewhere",
                      "見えるキーのある行は、その見えるキーについての普通のソフトマックスにし、それ以外は 0 にすること")
    if not weights.requires_grad:
        raise Mistake("the weights lost their gradient (detach or no_grad?): training needs it",
                      "重みが勾配を失っている（detach か no_grad を使っていないか？）。学習には勾配が必要である")
    d = torch.randn(scores.shape, generator=g)
    (weights * d).sum().backward()
    if s.grad is None or not s.grad.isfinite().all():
        raise Mistake("the forward is right, but the gradient is NaN: the dead rows' NaN flows back into the "
                      "scores. An added mask passes every gradient on, NaN included, and 0 × NaN is still NaN",
                      "順伝播は正しいが、勾配が NaN になる。死んだ行の NaN が、逆伝播でスコアまで流れ込んでいる。"
                      "加算したマスクは NaN も含めてすべての勾配をそのまま通し、0 × NaN も NaN のままである")

# The texts chapter 12's notebook draws on its figures (titles, axis labels, legends), English as its code writes
# them, and their Japanese: `title=ch12.label("...")` draws either (helpers.language.labeller).
FIGURES_JA = {
    "finite": "有限",
    "manual masked_fill(-inf) + softmax": "手書きの masked_fill(-inf) + softmax",
    "manual masked_fill(finfo.min) + softmax": "手書きの masked_fill(finfo.min) + softmax",
    "MHA, training, need_weights=True": "MHA、学習モード、need_weights=True",
    "MHA, training, need_weights=False": "MHA、学習モード、need_weights=False",
    "F.scaled_dot_product_attention, bool mask": "F.scaled_dot_product_attention、bool マスク",

    "x (real tokens)": "x（実トークン）",
    "gradients with two dead rows, loss on the real tokens only (torch 2.13.0, CPU)":
        "死んだ行が 2 つあるときの勾配（損失は実トークンだけ、torch 2.13.0、CPU）",
}
label = labeller(FIGURES_JA)
