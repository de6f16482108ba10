"""Chapter 11: encoder-decoder masks: the three attentions, nn.Transformer's six mask arguments, their misroutings.

What the chapter builds and runs:
- `three_masks`: the padding and causal masks of one batch of (source, target) pairs, and the three combined
  masks they make (encoder self-attention S x S, decoder self-attention T x T, cross-attention T x S);
- `encoder_decoder`: nn.Transformer's forward written out with helpers.attention_steps (post-norm layers),
  taking the same six mask arguments, so that every mask is visible;
- `ROUTINGS` / `routed`: the correct call and the usual misroutings, as keyword arguments for nn.Transformer;
- the explorer (`encoder_decoder_view`, `encoder_decoder_explorer`) and the exercise checks.
All masks are bool in the series' convention: True = may NOT attend.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import ipywidgets as widgets
import torch
import torch.nn.functional as F
from torch import nn

from helpers import arguments
from helpers.attention import attention_steps, combined_mask
from helpers.exercises import Mistake, as_bool_tensor, as_tensor, exercise
from helpers.explorer import RED, Explorer, Panel, View, explorer
from helpers.language import Bilingual, listed, mark, say
from helpers.masks import as_blocked, causal_mask, key_padding_mask

SOURCE_WORDS = ("犬", "猫", "鳥", "牛", "馬")        # the source sentence of item 0 (and its longest length, S = 5)
TARGET_WORDS = ("<s>", "dog", "cat", "bird")          # the decoder's input for item 0 (T = 4): <s>, then the words
PAD = "<pad>"
PADDING_SIDES = ("right", "left")
SIDES_JA = {"right": "右", "left": "左"}  # their labels in the Japanese edition
MASK_ARGUMENTS = ("src_mask", "tgt_mask", "memory_mask",
                  "src_key_padding_mask", "tgt_key_padding_mask", "memory_key_padding_mask")
HINTS = ("src_is_causal", "tgt_is_causal", "memory_is_causal")


# ---- The three masks of a batch --------------------------------------------------------------------------------

def padding_mask(lengths: list[int], size: int, side: str = "right") -> torch.Tensor:
    """Bool (N, size), True at the pads, for sequences of `lengths` padded on `side` ("right": pads last)."""
    if side not in PADDING_SIDES:
        raise ValueError(f"side must be one of {list(PADDING_SIDES)}, got {side!r}")
    return key_padding_mask(lengths, size, side=side)


class Masks(NamedTuple):
    """One batch's masks, True = may not attend. The first three are what nn.Transformer takes; the last three
    are what each attention ends up applying, per item."""

    src_key_padding_mask: torch.Tensor   # (N, S): the source pads
    tgt_key_padding_mask: torch.Tensor   # (N, T): the target pads
    tgt_mask: torch.Tensor               # (T, T): the causal mask of the decoder
    encoder: torch.Tensor                # (N, S, S): encoder self-attention, source pads hidden
    decoder: torch.Tensor                # (N, T, T): decoder self-attention, target pads and the future hidden
    cross: torch.Tensor                  # (N, T, S): cross-attention, source pads hidden, never causal


def three_masks(src_lengths: list[int], tgt_lengths: list[int], S: int | None = None, T: int | None = None,
                padding_side: str = "right") -> Masks:
    """The masks of a batch of N (source, target) pairs with these real lengths, padded to S and T on one side.

    Each attention hides the pads among its KEYS: the encoder's and cross-attention's keys are the source, the
    decoder's the target. Only the decoder self-attention is causal: a target word may not see later target
    words, but the source is known in full before decoding starts, so every target query may read every real
    source word.
    """
    if not isinstance(src_lengths, (list, tuple)) or not isinstance(tgt_lengths, (list, tuple)):
        raise TypeError(f"src_lengths and tgt_lengths must be lists of ints, got {type(src_lengths).__name__} and "
                        f"{type(tgt_lengths).__name__}")
    if len(src_lengths) != len(tgt_lengths):
        raise ValueError(f"src_lengths and tgt_lengths must have one length per item, got {len(src_lengths)} and "
                         f"{len(tgt_lengths)}")
    S = max(src_lengths) if S is None else arguments.integer(S, "S", minimum=1)
    T = max(tgt_lengths) if T is None else arguments.integer(T, "T", minimum=1)
    src = padding_mask(list(src_lengths), S, padding_side)
    tgt = padding_mask(list(tgt_lengths), T, padding_side)
    future = causal_mask(T)
    N = len(src_lengths)
    return Masks(src, tgt, future,
                 encoder=src[:, None, :].expand(N, S, S),
                 decoder=tgt[:, None, :] | future,
                 cross=src[:, None, :].expand(N, T, S))


# ---- nn.Transformer, written out -------------------------------------------------------------------------------

class Trace(NamedTuple):
    memory: torch.Tensor      # (N, S, E): the encoder's output
    output: torch.Tensor      # (N, T, E): the decoder's output
    weights: dict             # "encoder", "decoder", "cross" -> (N, H, L, S) weights of the LAST layer of each


def as_bool_mask(mask: torch.Tensor | None, name: str) -> torch.Tensor | None:
    """A mask argument as nn.Transformer takes it (bool, True = blocked, or float: 0, and -inf or <= -1e4 added)
    -> bool (helpers.masks.as_blocked)."""
    return None if mask is None else as_blocked(mask, name)


def _checked_shape(mask: torch.Tensor | None, want: tuple[int, int], name: str, rows: str) -> None:
    if mask is not None and tuple(mask.shape) != want:
        raise ValueError(f"{name} must have shape {want} ({rows}), got {tuple(mask.shape)}")


def attention(mha: nn.MultiheadAttention, query: torch.Tensor, key_value: torch.Tensor, *,
              key_padding_mask: torch.Tensor | None = None,
              attn_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """nn.MultiheadAttention's forward (batch first, one in_proj_weight) with helpers.attention_steps.

    Returns the output (N, L, E) and the weights (N, H, L, S). A row with no visible key gets weights 0, so its
    output is out_proj.bias: what nn.MultiheadAttention returns on its SDPA path (need_weights=False, not the fast
    path), the path nn.Transformer's decoder layers take (chapter 7; step 5 of chapter 11)."""
    N, L, E = query.shape
    H, S = mha.num_heads, key_value.shape[1]
    w_q, w_k, w_v = mha.in_proj_weight.chunk(3)
    b_q, b_k, b_v = mha.in_proj_bias.chunk(3)

    def heads(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, n: int) -> torch.Tensor:
        return F.linear(x, w, b).view(N, n, H, E // H).transpose(1, 2)        # (N, H, n, E/H)

    v = heads(key_value, w_v, b_v, S)
    steps = attention_steps(heads(query, w_q, b_q, L), heads(key_value, w_k, b_k, S), v,
                            key_padding_mask=key_padding_mask, attn_mask=attn_mask)
    weights, output = steps.weights, steps.output
    blocked = combined_mask(steps.scores.shape, key_padding_mask, attn_mask)
    if blocked is not None and blocked.all(-1).any():            # dead rows: weight 0 (SDPA's rule), not 1/S
        dead = blocked.expand(steps.scores.shape).all(-1, keepdim=True)
        weights = weights.masked_fill(dead, 0.0)
        output = weights @ v
    merged = output.transpose(1, 2).reshape(N, L, E)
    return mha.out_proj(merged), weights


def _feed_forward(layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return layer.linear2(layer.activation(layer.linear1(x)))


def encoder_decoder(model: nn.Transformer, src: torch.Tensor, tgt: torch.Tensor, *,
                    src_mask: torch.Tensor | None = None, tgt_mask: torch.Tensor | None = None,
                    memory_mask: torch.Tensor | None = None, src_key_padding_mask: torch.Tensor | None = None,
                    tgt_key_padding_mask: torch.Tensor | None = None,
                    memory_key_padding_mask: torch.Tensor | None = None) -> Trace:
    """nn.Transformer(src, tgt, ...) written out: the same weights, the same six masks, every step visible.

    Post-norm layers, as nn.Transformer's default (norm_first=False): x = norm(x + block(x)). Where each mask goes:
    src_mask (S, S) and src_key_padding_mask (N, S) -> encoder self-attention;
    tgt_mask (T, T) and tgt_key_padding_mask (N, T) -> decoder self-attention;
    memory_mask (T, S) and memory_key_padding_mask (N, S) -> cross-attention (queries: target, keys: the memory).
    No `*_is_causal` hints: this version applies the masks it is given, and nothing else. Dropout is not applied
    (compare with a model in eval mode or built with dropout=0).
    """
    if not isinstance(model, nn.Transformer):
        raise TypeError(f"model must be an nn.Transformer, got {type(model).__name__}")
    first = model.encoder.layers[0]
    if not first.self_attn.batch_first or first.norm_first:
        raise ValueError("model must be built with batch_first=True and norm_first=False (the defaults this "
                         "written-out version follows are post-norm, batch first)")
    for name, t in (("src", src), ("tgt", tgt)):
        arguments.floating(t, name)
        if t.dim() != 3 or t.shape[-1] != model.d_model:
            raise ValueError(f"{name} must have shape (N, length, d_model={model.d_model}), got {tuple(t.shape)}")
    if src.shape[0] != tgt.shape[0]:
        raise ValueError(f"src and tgt must have the same batch size N, got {src.shape[0]} and {tgt.shape[0]}")
    (N, S, _), T = src.shape, tgt.shape[1]
    masks = {name: as_bool_mask(value, name) for name, value in (
        ("src_mask", src_mask), ("tgt_mask", tgt_mask), ("memory_mask", memory_mask),
        ("src_key_padding_mask", src_key_padding_mask), ("tgt_key_padding_mask", tgt_key_padding_mask),
        ("memory_key_padding_mask", memory_key_padding_mask))}
    _checked_shape(masks["src_mask"], (S, S), "src_mask", "source query x source key")
    _checked_shape(masks["tgt_mask"], (T, T), "tgt_mask", "target query x target key")
    _checked_shape(masks["memory_mask"], (T, S), "memory_mask", "target query x source key")
    _checked_shape(masks["src_key_padding_mask"], (N, S), "src_key_padding_mask", "item x source key")
    _checked_shape(masks["tgt_key_padding_mask"], (N, T), "tgt_key_padding_mask", "item x target key")
    _checked_shape(masks["memory_key_padding_mask"], (N, S), "memory_key_padding_mask", "item x source key")

    memory, weights = encode(model, src, src_mask=masks["src_mask"],
                             src_key_padding_mask=masks["src_key_padding_mask"])
    output, decoder_weights = decode(model, memory, tgt, tgt_mask=masks["tgt_mask"], memory_mask=masks["memory_mask"],
                                     tgt_key_padding_mask=masks["tgt_key_padding_mask"],
                                     memory_key_padding_mask=masks["memory_key_padding_mask"])
    return Trace(memory, output, {**weights, **decoder_weights})


def encode(model: nn.Transformer, src: torch.Tensor, *, src_mask: torch.Tensor | None = None,
           src_key_padding_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, dict]:
    """The written-out encoder (bool masks, shapes checked by encoder_decoder): memory (N, S, E), {"encoder": w}."""
    weights = {}
    x = src
    for layer in model.encoder.layers:
        attended, weights["encoder"] = attention(layer.self_attn, x, x, key_padding_mask=src_key_padding_mask,
                                                 attn_mask=src_mask)
        x = layer.norm1(x + attended)
        x = layer.norm2(x + _feed_forward(layer, x))
    return (model.encoder.norm(x) if model.encoder.norm is not None else x), weights


def decode(model: nn.Transformer, memory: torch.Tensor, tgt: torch.Tensor, *, tgt_mask: torch.Tensor | None = None,
           memory_mask: torch.Tensor | None = None, tgt_key_padding_mask: torch.Tensor | None = None,
           memory_key_padding_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, dict]:
    """The written-out decoder on a given memory: output (N, T, E), {"decoder": weights, "cross": weights}."""
    weights = {}
    y = tgt
    for layer in model.decoder.layers:
        attended, weights["decoder"] = attention(layer.self_attn, y, y, key_padding_mask=tgt_key_padding_mask,
                                                 attn_mask=tgt_mask)
        y = layer.norm1(y + attended)
        read, weights["cross"] = attention(layer.multihead_attn, y, memory, key_padding_mask=memory_key_padding_mask,
                                           attn_mask=memory_mask)
        y = layer.norm2(y + read)
        y = layer.norm3(y + _feed_forward(layer, y))
    return (model.decoder.norm(y) if model.decoder.norm is not None else y), weights


# ---- The toy: a seeded one-layer nn.Transformer and word vectors ------------------------------------------------

E = 8        # d_model
HEADS = 2


@functools.cache   # built on first use, then shared by the notebook, the explorer and the checks
def toy_transformer(seed: int = 0) -> nn.Transformer:
    """A seeded nn.Transformer(d_model=8, 2 heads, 1 encoder and 1 decoder layer, feed-forward 16, no dropout),
    batch first, in eval mode."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = nn.Transformer(d_model=E, nhead=HEADS, num_encoder_layers=1, num_decoder_layers=1,
                               dim_feedforward=16, dropout=0.0, batch_first=True)
    return model.eval()


WORDS = (PAD, *SOURCE_WORDS, *TARGET_WORDS, "魚", "fish", "cow", "horse")


@functools.cache
def _vectors() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(11)
    return dict(zip(WORDS, torch.randn(len(WORDS), E, generator=g), strict=True))


def embed(words: list[list[str]]) -> torch.Tensor:
    """Fixed random 8-number vectors for a batch of word lists (no positions: the toy needs none)."""
    table = _vectors()
    unknown = sorted({w for row in words for w in row if w not in table})
    if unknown:
        raise ValueError(f"words must come from {list(WORDS)}, got {unknown}")
    return torch.stack([torch.stack([table[w] for w in row]) for row in words])


def padded_words(words: tuple[str, ...], length: int, size: int, side: str = "right") -> list[str]:
    """The first `length` of `words`, padded with <pad> to `size` on `side`."""
    if side not in PADDING_SIDES:
        raise ValueError(f"side must be one of {list(PADDING_SIDES)}, got {side!r}")
    real = list(words[:length])
    pads = [PAD] * (size - length)
    return real + pads if side == "right" else pads + real


# The explorer's batch: N = 4 items, S = 5, T = 4. Item 0 is the one shown (its lengths are the controls);
# items 1-3 are fixed. N == T on purpose: then the (N, S) padding mask also fits where a (T, S) memory_mask goes.
S_MAX, T_MAX = len(SOURCE_WORDS), len(TARGET_WORDS)
OTHER_SOURCES = (("魚", "犬", "猫", "鳥", "牛"), ("牛", "馬"), ("馬", "魚", "犬", "猫"))
OTHER_TARGETS = (("<s>", "fish", "dog", "cat"), ("<s>", "cow"), ("<s>", "horse", "fish"))


def toy_batch(src_length: int = 3, tgt_length: int = 4, padding_side: str = "right"
              ) -> tuple[torch.Tensor, torch.Tensor, Masks, list[list[str]], list[list[str]]]:
    """The explorer's batch of 4 pairs: src (4, 5, 8), tgt (4, 4, 8), their masks, and the words."""
    src_length = arguments.integer(src_length, "src_length", minimum=1)
    tgt_length = arguments.integer(tgt_length, "tgt_length", minimum=1)
    if src_length > S_MAX or tgt_length > T_MAX:
        raise ValueError(f"src_length must be 1..{S_MAX} and tgt_length 1..{T_MAX}, got {src_length} and "
                         f"{tgt_length}")
    sources = [SOURCE_WORDS, *OTHER_SOURCES]
    targets = [TARGET_WORDS, *OTHER_TARGETS]
    src_lengths = [src_length] + [len(s) for s in OTHER_SOURCES]
    tgt_lengths = [tgt_length] + [len(t) for t in OTHER_TARGETS]
    src_words = [padded_words(w, n, S_MAX, padding_side) for w, n in zip(sources, src_lengths, strict=True)]
    tgt_words = [padded_words(w, n, T_MAX, padding_side) for w, n in zip(targets, tgt_lengths, strict=True)]
    masks = three_masks(src_lengths, tgt_lengths, S_MAX, T_MAX, padding_side)
    return embed(src_words), embed(tgt_words), masks, src_words, tgt_words


# ---- Routings: the correct call and the usual mistakes -----------------------------------------------------------

def cross_triangle(T: int, S: int) -> torch.Tensor:
    """A causal mask on cross-attention: bool (T, S), True where the source key j comes after the target query i."""
    T, S = arguments.integer(T, "T", minimum=1), arguments.integer(S, "S", minimum=1)
    return torch.arange(S)[None, :] > torch.arange(T)[:, None]


ROUTINGS = (
    "correct",
    "memory_key_padding_mask forgotten",
    "padding mask as memory_mask",
    "padding mask as src_mask",
    "causal mask on cross-attention",
    "tgt_is_causal=True, no tgt_mask",
)
ROUTINGS_JA = {   # how the Japanese edition's explorer names each routing (its dropdown, its summary)
    "correct": "正しい渡し方",
    "memory_key_padding_mask forgotten": "memory_key_padding_mask を忘れる",
    "padding mask as memory_mask": "パディングマスクを memory_mask に渡す",
    "padding mask as src_mask": "パディングマスクを src_mask に渡す",
    "causal mask on cross-attention": "クロスアテンションに因果マスク",
    "tgt_is_causal=True, no tgt_mask": "tgt_is_causal=True で tgt_mask なし",
}


def routed(routing: str, masks: Masks) -> dict:
    """nn.Transformer's keyword arguments for `routing` (one of ROUTINGS), from a batch's masks."""
    if routing not in ROUTINGS:
        raise ValueError(f"routing must be one of {list(ROUTINGS)}, got {routing!r}")
    correct = {"src_key_padding_mask": masks.src_key_padding_mask, "tgt_mask": masks.tgt_mask,
               "tgt_key_padding_mask": masks.tgt_key_padding_mask,
               "memory_key_padding_mask": masks.src_key_padding_mask}
    if routing == "correct":
        return correct
    if routing == "memory_key_padding_mask forgotten":
        return {k: v for k, v in correct.items() if k != "memory_key_padding_mask"}
    if routing == "padding mask as memory_mask":
        return {**{k: v for k, v in correct.items() if k != "memory_key_padding_mask"},
                "memory_mask": masks.src_key_padding_mask}
    if routing == "padding mask as src_mask":
        return {**{k: v for k, v in correct.items() if k != "src_key_padding_mask"},
                "src_mask": masks.src_key_padding_mask}
    if routing == "causal mask on cross-attention":
        T, S = masks.cross.shape[1:]
        return {**correct, "memory_mask": cross_triangle(T, S)}
    return {**{k: v for k, v in correct.items() if k != "tgt_mask"}, "tgt_is_causal": True}


def run_transformer(model: nn.Transformer, src: torch.Tensor, tgt: torch.Tensor, kwargs: dict) -> torch.Tensor:
    """model(src, tgt, **kwargs) in eval mode under no_grad; ValueError with torch's message if torch refuses."""
    try:
        with torch.no_grad():
            return model(src, tgt, **kwargs)
    except (RuntimeError, AssertionError) as error:
        name, first_line = type(error).__name__, str(error).splitlines()[0]   # torch's own words stay English
        raise ValueError(say(f"nn.Transformer raises {name}: {first_line}",
                             f"nn.Transformer が {name} を送出する：{first_line}")) from None


def written_out(model: nn.Transformer, src: torch.Tensor, tgt: torch.Tensor, kwargs: dict) -> Trace:
    """encoder_decoder with nn.Transformer's keyword arguments; hints (`*_is_causal`) are dropped, as nn.Transformer's
    fast path drops them in eval mode under no_grad (measured in the chapter)."""
    with torch.no_grad():
        return encoder_decoder(model, src, tgt, **{k: v for k, v in kwargs.items() if k not in HINTS})


# ---- The explorer ----------------------------------------------------------------------------------------------

def _rows(items: list[int]) -> str:
    return ", ".join(map(str, items))


class Outcome(NamedTuple):
    """What the explorer finds for one combination, as numbers (its summary says it in words, in either language).

    Per table ("encoder", "decoder", "cross"; item 0, weights averaged over the heads): the largest weight on a
    cell the correct masks block (0 if none), the rows that give no weight to some allowed key, and the rows with
    no visible key at all. Then the items whose real target outputs move by more than 1e-4 against the correct
    call, item 0's target positions that move, and the largest move."""

    panels: tuple[Panel, ...]
    leaks: dict             # table -> largest weight on a blocked cell (0.0: none)
    hidden_rows: dict       # table -> rows (with a visible key) that give no weight to some allowed key
    dead_rows: dict         # table -> rows with no visible key
    moved_items: list[int]
    moved_positions: list[int]
    largest_move: float


def encoder_decoder_outcome(src_length: int = 3, tgt_length: int = 4, padding_side: str = "right",
                            routing: str = "correct") -> Outcome:
    """The numbers behind encoder_decoder_view's tables and summary (same arguments)."""
    if padding_side not in PADDING_SIDES:
        raise ValueError(f"padding_side must be one of {list(PADDING_SIDES)}, got {padding_side!r}")
    if routing not in ROUTINGS:
        raise ValueError(f"routing must be one of {list(ROUTINGS)}, got {routing!r}")
    return _outcome(src_length, tgt_length, padding_side, routing)


TABLES = ("encoder", "decoder", "cross")
SOURCE_KEY, TARGET_KEY = Bilingual("source key", "ソースのキー"), Bilingual("target key", "ターゲットのキー")
SOURCE_QUERY = Bilingual("source query", "ソースのクエリ")
TARGET_QUERY = Bilingual("target query", "ターゲットのクエリ")


def _table_name(table: str) -> str:
    if table == "encoder":
        return say("encoder self-attention", "エンコーダの自己アテンション")
    if table == "decoder":
        return say("decoder self-attention", "デコーダの自己アテンション")
    return say("cross-attention", "クロスアテンション")


def _notes(outcome: Outcome, table: str) -> list[Bilingual]:
    """What is wrong in one table, each note in both languages (the panels are cached: their titles keep both, and
    the summary says the current language)."""
    notes = []
    if outcome.leaks[table]:
        top = f"{outcome.leaks[table]:.2f}"
        notes.append(Bilingual(f"weight on blocked cells (up to {top})", f"遮断されたセルに重み（最大 {top}）"))
    if outcome.hidden_rows[table]:
        rows = _rows(outcome.hidden_rows[table])
        notes.append(Bilingual(f"allowed keys hidden in rows {rows}", f"行 {rows} で許されたキーに重みなし"))
    if outcome.dead_rows[table]:
        rows = _rows(outcome.dead_rows[table])
        notes.append(Bilingual(f"no visible key in rows {rows}", f"行 {rows} に見えるキーなし"))
    return notes


def _what_goes_wrong(routing: str) -> str:
    """What a misrouting does, in one phrase."""
    if routing == "memory_key_padding_mask forgotten":
        return say("cross-attention reads the source pads", "クロスアテンションがソースのパッドを読む")
    if routing == "padding mask as memory_mask":
        return say("the (N, S) padding mask read as a (T, S) memory_mask: target query i hides the pads of item i",
                   "(N, S) のパディングマスクが (T, S) の memory_mask として読まれ、ターゲットのクエリ i が"
                   "サンプル i のパッドを隠す")
    if routing == "padding mask as src_mask":
        return say("the (N, S) padding mask read as an (S, S) src_mask",
                   "(N, S) のパディングマスクが (S, S) の src_mask として読まれる")
    if routing == "causal mask on cross-attention":
        return say("target query i may read only source words 0..i",
                   "ターゲットのクエリ i はソースの語 0..i しか読めない")
    return say("a hint, not a mask: the decoder self-attention is not causal",
               "マスクではなくヒントなので、デコーダの自己アテンションは因果的にならない")


def encoder_decoder_view(src_length: int = 3, tgt_length: int = 4, padding_side: str = "right",
                         routing: str = "correct") -> View:
    """Item 0's three attention tables under `routing`, and what moves in the real outputs of nn.Transformer.

    Hatched: what the correct masks block. Red frame: weight on such a cell. Weights are the mean over the 2
    heads, from the written-out model; the outputs compared are nn.Transformer's (eval, no_grad) at the real
    target positions of all 4 items, against the correct call. The summary is in the current language
    (helpers.language); the numbers behind it: encoder_decoder_outcome.
    """
    outcome = encoder_decoder_outcome(src_length, tgt_length, padding_side, routing)
    problems = [_table_name(t) + mark("colon") + listed(note.said() for note in notes)
                for t in TABLES if (notes := _notes(outcome, t))]
    if outcome.moved_items:
        items, move = _rows(outcome.moved_items), outcome.largest_move
        if 0 in outcome.moved_items:
            positions = _rows(outcome.moved_positions)
            moved = say(f"real target outputs move in items [{items}] (item 0 at positions [{positions}]), "
                        f"up to {move:.2f}",
                        f"ターゲットの実トークンの出力が、サンプル [{items}] で最大 {move:.2f} 動く"
                        f"（サンプル 0 では位置 [{positions}]）")
        else:
            moved = say(f"real target outputs move in items [{items}], up to {move:.2f}",
                        f"ターゲットの実トークンの出力が、サンプル [{items}] で最大 {move:.2f} 動く")
    else:
        moved = say("no real target output moves (all within 1e-4 of the correct call)",
                    "ターゲットの実トークンの出力はどれも動かない（正しい呼び出しとの差がすべて 1e-4 以内）")
    if routing == "correct":
        verdict = say("correct", "誤りはない")
    else:
        verdict = listed([_what_goes_wrong(routing), *problems], by="sentence")
    src_pads, tgt_pads = S_MAX - src_length, T_MAX - tgt_length
    side = say(padding_side, {"right": "右", "left": "左"}[padding_side])
    summary = say(f"source {src_length} real + {src_pads} pads, target {tgt_length} real + {tgt_pads} pads, "
                  f"{padding_side} padding, {routing}: {verdict}; {moved}",
                  f"ソースは実トークン {src_length} + パッド {src_pads}、ターゲットは実トークン {tgt_length} + "
                  f"パッド {tgt_pads}、{side}パディング、{ROUTINGS_JA[routing]}：{verdict}。{moved}")
    return View(outcome.panels, summary,
                caption=Bilingual("hatched: blocked by the correct masks    red frame, !: weight on a blocked cell    "
                                  "weights: mean over 2 heads, item 0",
                                  "斜線：正しいマスクが遮断するセル    赤枠と !：遮断されたセルに重み    "
                                  "重み：2 ヘッドの平均、サンプル 0"))


@functools.cache
def _reference(src_length: int, tgt_length: int, padding_side: str) -> torch.Tensor:
    """nn.Transformer's output for the explorer's batch under the correct call (eval, no_grad)."""
    src, tgt, masks, _, _ = toy_batch(src_length, tgt_length, padding_side)
    return run_transformer(toy_transformer(), src, tgt, routed("correct", masks))


@functools.cache   # 5 x 4 x 2 x 6 combinations; each computed once
def _outcome(src_length: int, tgt_length: int, padding_side: str, routing: str) -> Outcome:
    model = toy_transformer()
    src, tgt, masks, src_words, tgt_words = toy_batch(src_length, tgt_length, padding_side)
    kwargs = routed(routing, masks)
    reference = _reference(src_length, tgt_length, padding_side)
    seen = []
    hook = model.encoder.register_forward_hook(lambda _module, _args, out: seen.append(out))
    try:
        output = run_transformer(model, src, tgt, kwargs)       # ValueError if torch refuses: shown as a message
    finally:
        hook.remove()
    masks_in = {k: as_bool_mask(v, k) for k, v in kwargs.items() if k not in HINTS}
    with torch.no_grad():   # the encoder's weights written out; the decoder's on nn.Transformer's own memory
        _, weights = encode(model, src, src_mask=masks_in.get("src_mask"),
                            src_key_padding_mask=masks_in.get("src_key_padding_mask"))
        _, decoder_weights = decode(model, seen[0], tgt, tgt_mask=masks_in.get("tgt_mask"),
                                    memory_mask=masks_in.get("memory_mask"),
                                    tgt_key_padding_mask=masks_in.get("tgt_key_padding_mask"),
                                    memory_key_padding_mask=masks_in.get("memory_key_padding_mask"))
    trace = Trace(seen[0], output, {**weights, **decoder_weights})

    real_tgt = ~masks.tgt_key_padding_mask                      # (N, T)
    change = (output - reference).abs().amax(-1).masked_fill(~real_tgt, 0)   # (N, T)
    moved_items = [n for n in range(change.shape[0]) if change[n].max() > 1e-4]
    leaks_of, hidden_of, dead_of, found = {}, {}, {}, {}
    tables = (("encoder", Bilingual("encoder self-attention", "エンコーダの自己アテンション"), masks.encoder[0],
               src_words[0], src_words[0]),
              ("decoder", Bilingual("decoder self-attention", "デコーダの自己アテンション"), masks.decoder[0],
               tgt_words[0], tgt_words[0]),
              ("cross", Bilingual("cross-attention", "クロスアテンション"), masks.cross[0], tgt_words[0], src_words[0]))
    for key, _, blocked, _, _ in tables:
        found[key] = trace.weights[key][0].mean(0)               # (L, S), mean over heads
        used = found[key] > 1e-6
        leaks = used & blocked
        hidden = ~used & ~blocked                                # allowed, but got no weight
        dead = ~used.any(-1)                                     # rows with no visible key at all
        leaks_of[key] = float(found[key][leaks].max()) if leaks.any() else 0.0
        hidden_of[key] = sorted(set(hidden.nonzero()[:, 0].tolist()) - set(dead.nonzero()[:, 0].tolist()))
        dead_of[key] = dead.nonzero()[:, 0].tolist()
    outcome = Outcome((), leaks_of, hidden_of, dead_of, moved_items,
                      (change[0] > 1e-4).nonzero().flatten().tolist(), float(change.max()))
    panels = []
    for key, title, blocked, rows, cols in tables:
        notes = _notes(outcome, key)
        shape = f" ({len(rows)} × {len(cols)})"
        panels.append(Panel(found[key], rows, cols, masked=blocked, framed=(found[key] > 1e-6) & blocked,
                            frame_color=RED, alert=bool(notes), mark="!",
                            title=Bilingual(title.en + shape + "\n" + ("; ".join(n.en for n in notes) or "OK"),
                                            title.ja + shape + "\n" + ("、".join(n.ja for n in notes) or "OK")),
                            xlabel=SOURCE_KEY if key != "decoder" else TARGET_KEY,
                            ylabel=TARGET_QUERY if key != "encoder" else SOURCE_QUERY))
    return outcome._replace(panels=tuple(panels))


def encoder_decoder_explorer() -> Explorer:
    """Source and target lengths, padding side and the mask arguments passed -> the three tables of item 0."""
    controls = {
        "src_length": widgets.IntSlider(value=3, min=1, max=S_MAX, description=say("source length", "ソースの長さ")),
        "tgt_length": widgets.IntSlider(value=4, min=1, max=T_MAX,
                                        description=say("target length", "ターゲットの長さ")),
        "padding_side": widgets.ToggleButtons(options=[(say(s, SIDES_JA[s]), s) for s in PADDING_SIDES],
                                              value="right", description=say("padding", "パディング")),
        "routing": widgets.Dropdown(options=[(say(r, ROUTINGS_JA[r]), r) for r in ROUTINGS], value="correct",
                                    description=say("masks passed", "渡したマスク"),
                                    layout=widgets.Layout(width="28em"), style={"description_width": "6.5em"}),
    }
    return explorer(controls, encoder_decoder_view, Bilingual(
        'Source and target lengths, padding side and the mask arguments passed -> the three tables of item 0.',
        'ソースとターゲットの長さ、パディングの側、渡したマスクの引数 → サンプル 0 の 3 つの表'))


EXPLORERS = (encoder_decoder_explorer,)


# ---- Exercise checks -------------------------------------------------------------------------------------------

@exercise
def check_1(answer: object, src_lengths: list[int], tgt_lengths: list[int]) -> None:
    """Exercise 1: the cross-attention mask of a right-padded batch, bool (N, T, S), True = blocked."""
    masks = three_masks(src_lengths, tgt_lengths)
    expected = masks.cross
    N, T, S = expected.shape
    answer = as_bool_tensor(answer, Mistake("the mask should be a bool tensor (True = blocked)",
                                            "マスクは bool テンソル（True = 遮断）にすること"))
    if tuple(answer.shape) == (N, S, T):
        raise Mistake("the shape is transposed: one row per target query, one column per source key",
                      "行と列が逆になっている（形状が転置されている）。"
                      "ターゲットのクエリごとに 1 行、ソースのキーごとに 1 列である")
    if tuple(answer.shape) == (N, 1, S):
        raise Mistake("that broadcasts, but the exercise asks for one row per target query: expand it over the "
                      "target rows",
                      "ブロードキャストはできるが、問われているのはターゲットのクエリごとに 1 行ある形である。"
                      "ターゲットの行の方向に expand すること")
    if tuple(answer.shape) != (N, T, S):
        raise Mistake(f"the shape should be (N, T, S): item, target query, source key; got {tuple(answer.shape)}",
                      "形状は (N, T, S)、つまりサンプル、ターゲットのクエリ、ソースのキーの順になるはずである。"
                      f"答えは {tuple(answer.shape)} になっている")
    if torch.equal(answer, ~expected):
        raise Mistake("the polarity is flipped: True must mark what may NOT be attended to",
                      "極性が逆である。True で示すのは、参照してはならないところである")
    if torch.equal(answer, expected | cross_triangle(T, S)):
        raise Mistake("cross-attention is never causal: the whole source is known before decoding starts",
                      "クロスアテンションは決して因果的ではない。ソースはデコードが始まる前にすべて揃っている")
    if torch.equal(answer, expected | masks.tgt_key_padding_mask[:, :, None]):
        raise Mistake("hide keys, not queries: a target pad row with every key hidden has nothing left to read",
                      "隠すのはクエリではなくキーである。ターゲットのパッド行ですべてのキーを隠すと、"
                      "読むものが何も残らない")
    if torch.equal(answer, masks.tgt_key_padding_mask[:, :, None].expand(N, T, S)):
        raise Mistake("the keys of cross-attention are the source words: it is the source's padding that counts",
                      "クロスアテンションのキーはソースの語である。意味を持つのはソースのパディングである")
    if torch.equal(answer, key_padding_mask(list(tgt_lengths), S)[:, None, :].expand(N, T, S)):
        raise Mistake("those are the target's lengths: the keys of cross-attention are the source words",
                      "それはターゲットの長さである。クロスアテンションのキーはソースの語である")
    if torch.equal(answer, key_padding_mask(list(src_lengths), S, side="left")[:, None, :].expand(N, T, S)):
        raise Mistake("the batch is right-padded: the pads come after the real source words",
                      "このバッチは右パディングである。パッドはソースの実トークンの後ろに来る")
    positions, lengths = torch.arange(S), torch.tensor(list(src_lengths))[:, None]
    for shift in (-1, 1):
        if torch.equal(answer, (positions >= (lengths + shift).clamp(0, S))[:, None, :].expand(N, T, S)):
            raise Mistake("off by one: positions 0 .. length - 1 are the real words, the pads start at the length",
                          "1 つずれている。位置 0 .. length - 1 が実トークンで、パッドは位置 length から始まる")
    if not torch.equal(answer, expected):
        raise Mistake("not yet: in each item, block exactly the source pads, in every target row",
                      "各サンプルで、ターゲットのどの行でも、ソースのパッドを過不足なく遮断すること")


_ATTENTIONS = {   # attention -> (its padding mask argument, its attention mask argument, query and key lengths)
    "encoder": ("src_key_padding_mask", "src_mask", "S", "S"),
    "decoder": ("tgt_key_padding_mask", "tgt_mask", "T", "T"),
    "cross": ("memory_key_padding_mask", "memory_mask", "T", "S"),
}


def _as_blocked(mask: torch.Tensor | None, name: str) -> torch.Tensor | None:
    """A learner's mask argument as bool, True = blocked (helpers.masks.as_blocked), or the hint: it hides nothing."""
    try:
        return as_bool_mask(mask, name)
    except (TypeError, ValueError):
        raise Mistake(f"{name}: a float mask is added to the scores, so only -inf (or a huge negative number) blocks; "
                      "any other value hides nothing",
                      f"{name} の float マスクはスコアに加算されるので、遮断するのは -inf（または非常に大きな負の数）"
                      "だけである。それ以外の値は何も隠さない") from None


def _blocked_cells(kwargs: dict, attention_name: str, N: int, H: int, sizes: dict) -> torch.Tensor:
    """The (N, H, L, K) cells that these keyword arguments block in one of the three attentions."""
    pad_name, mask_name, L, K = _ATTENTIONS[attention_name]
    L, K = sizes[L], sizes[K]
    blocked = torch.zeros(N, H, L, K, dtype=torch.bool)
    pads = _as_blocked(kwargs.get(pad_name), pad_name)
    if pads is not None:
        blocked = blocked | pads[:, None, None, :]
    mask = _as_blocked(kwargs.get(mask_name), mask_name)
    if mask is not None:
        blocked = blocked | (mask if mask.dim() == 2 else mask.reshape(N, H, L, K))
    return blocked


def _diagnose_2(answer: dict, masks: Masks, N: int, H: int, sizes: dict) -> Mistake:
    """The hint for a call whose outputs are wrong: the first attention whose blocked cells are not the right ones."""
    memory_mask = answer.get("memory_mask")
    if memory_mask is not None and torch.equal(memory_mask, masks.src_key_padding_mask):
        return Mistake("memory_mask is the cross-attention's (T, S) attention mask: row i is read as target query i's "
                       "mask, not item i's; padding has its own argument",
                       "memory_mask はクロスアテンションの (T, S) のアテンションマスクである。行 i は、サンプル i では"
                       "なくターゲットのクエリ i のマスクとして読まれる。パディングには専用の引数がある")
    correct = routed("correct", masks)
    titles = {"encoder": ("the encoder", "エンコーダ"),
              "decoder": ("the decoder's self-attention", "デコーダの自己アテンション"),
              "cross": ("cross-attention", "クロスアテンション")}
    for name in ("encoder", "cross", "decoder"):
        got = _blocked_cells(answer, name, N, H, sizes)
        want = _blocked_cells(correct, name, N, H, sizes)
        leaks, over = want & ~got, got & ~want
        title, title_ja = titles[name]
        if leaks.any() and over.any():
            return Mistake(f"{title} hides some keys it may read and shows some it must not: check each of its "
                           "masks' polarity (True = blocked)",
                           f"{title_ja}が、参照してよいキーの一部を隠し、参照してはならないキーの一部を見せている。"
                           "そのマスクそれぞれの極性（True = 遮断）を確かめること")
        if over.any():
            if name == "cross":
                return Mistake("cross-attention hides real source words: it hides only the source pads, and is never "
                               "causal",
                               "クロスアテンションがソースの実トークンを隠している。隠すのはソースのパッドだけで、"
                               "因果的になることはない")
            return Mistake(f"{title} hides keys it may read: check its masks' polarity (True = blocked)",
                           f"{title_ja}が、参照してよいキーを隠している。そのマスクの極性（True = 遮断）を確かめること")
        if leaks.any():
            if name == "decoder" and (leaks & masks.tgt_mask).any():
                return Mistake("the decoder still sees the future", "デコーダにまだ未来が見えている")
            if name == "decoder":
                return Mistake("the decoder's self-attention still reads the target pads: the real tokens are safe "
                               "only because right padding puts the pads in their future",
                               "デコーダの自己アテンションがまだターゲットのパッドを読んでいる。実トークンが無事なのは、"
                               "右パディングでパッドがその未来に来るからにすぎない")
            return Mistake(f"{title} still reads the source pads", f"{title_ja}がまだソースのパッドを読んでいる")
    return Mistake("the real outputs differ from the right call: check each mask's polarity (True = blocked) and "
                   "which padding mask goes where",
                   "実トークンの出力が正しい呼び出しと異なる。各マスクの極性（True = 遮断）と、どのパディングマスクを"
                   "どこに渡すかを確かめること")


@exercise
def check_2(answer: object, model: nn.Transformer, src: torch.Tensor, tgt: torch.Tensor, masks: Masks) -> None:
    """Exercise 2: nn.Transformer's keyword arguments (a dict) for this batch: padding everywhere, causal decoder.

    Right when nn.Transformer gives the right call's outputs at every target position, in training mode and in
    eval mode under no_grad (the two code paths); attention masks that hide the same cells as the padding masks
    are right too."""
    if not isinstance(answer, dict):
        raise Mistake(f"give a dict of keyword arguments, e.g. {{'tgt_mask': ...}}, got {type(answer).__name__}",
                      f"キーワード引数の dict（たとえば {{'tgt_mask': ...}}）で答えること。"
                      f"渡されたのは {type(answer).__name__} である")
    answer = {name: value if name not in MASK_ARGUMENTS or value is None else
              as_tensor(value, Mistake(f"{name} should be a mask tensor (bool, True = blocked; or float, added to "
                                       "the scores) or None",
                                       f"{name} はマスクのテンソル（bool で True = 遮断、または float でスコアに加算）"
                                       "か None にすること"))
              for name, value in answer.items()}
    unknown = sorted(set(answer) - set(MASK_ARGUMENTS) - set(HINTS))
    if unknown:
        raise Mistake(f"nn.Transformer has no mask argument named {unknown[0]!r}; its six are {list(MASK_ARGUMENTS)}",
                      f"nn.Transformer に {unknown[0]!r} という名前のマスク引数はない。"
                      f"マスク引数は {list(MASK_ARGUMENTS)} の 6 つである")
    if answer.get("tgt_is_causal") and answer.get("tgt_mask") is None:
        raise Mistake("tgt_is_causal is a hint about tgt_mask, not a mask: the decoder still needs tgt_mask",
                      "tgt_is_causal はマスクではなく、tgt_mask についてのヒントである。デコーダには tgt_mask も"
                      "必要である")
    if answer.get("src_is_causal") or answer.get("memory_is_causal"):
        raise Mistake("the encoder and cross-attention are not causal: leave src_is_causal and memory_is_causal off",
                      "エンコーダとクロスアテンションは因果的ではない。src_is_causal と memory_is_causal は"
                      "指定しないこと")
    src_mask = answer.get("src_mask")
    if isinstance(src_mask, torch.Tensor) and tuple(src_mask.shape) == tuple(masks.src_key_padding_mask.shape):
        raise Mistake("src_mask is the encoder's (S, S) attention mask, one row per query position; padding has its "
                      "own argument",
                      "src_mask はエンコーダの (S, S) のアテンションマスクで、クエリの位置ごとに 1 行ある。"
                      "パディングには専用の引数がある")
    right = True
    for mode, mode_ja in (("training mode", "学習モード"), ("eval mode", "評価モード")):   # both code paths:
        model.train(mode == "training mode")                     # the fast path accepts some masks training refuses
        try:
            with torch.no_grad() if mode == "eval mode" else torch.enable_grad():
                got = model(src, tgt, **answer)
                want = model(src, tgt, **routed("correct", masks))
        except (RuntimeError, AssertionError, TypeError) as error:
            first_line = str(error).splitlines()[0]                  # torch's own words stay English
            raise Mistake(f"nn.Transformer refuses these arguments in {mode}: {first_line}",
                          f"nn.Transformer が{mode_ja}でこの引数を受け付けない（{first_line}）") from None
        finally:
            model.eval()
        right = right and bool((got - want).abs().max() <= 1e-5)    # every target position, pads included
    if not right:
        (N, S, _), T = src.shape, tgt.shape[1]
        raise _diagnose_2(answer, masks, N, model.nhead, {"S": S, "T": T})


@exercise
def check_3(answer: object, target_ids: torch.Tensor, pad_id: int, start_id: int) -> None:
    """Exercise 3: (labels, decoder_input_ids) for padded target ids: -100 at the pads, then the right shift."""
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        raise Mistake("give two tensors: (labels, decoder_input_ids)",
                      "2 つのテンソルの組 (labels, decoder_input_ids) で答えること")
    answer = [as_tensor(t, Mistake(f"{name} should be a torch.long tensor of token ids",
                                   f"{name} はトークン ID の torch.long テンソルにすること"))
              for name, t in zip(("labels", "decoder_input_ids"), answer, strict=True)]
    labels, decoder_input_ids = answer
    for name, t in (("labels", labels), ("decoder_input_ids", decoder_input_ids)):
        if t.dtype != torch.long:
            raise Mistake(f"{name} should be a torch.long tensor of token ids",
                          f"{name} はトークン ID の torch.long テンソルにすること")
        if tuple(t.shape) != tuple(target_ids.shape):
            raise Mistake(f"{name} should have the targets' shape (N, T) = {tuple(target_ids.shape)}",
                          f"{name} の形状は、ターゲットと同じ (N, T) = {tuple(target_ids.shape)} にすること")
    pads = target_ids == pad_id
    want_labels = target_ids.masked_fill(pads, -100)
    want_inputs = torch.cat([torch.full_like(target_ids[:, :1], start_id), target_ids[:, :-1]], 1)
    if torch.equal(labels, want_inputs) and torch.equal(decoder_input_ids, want_labels):
        raise Mistake("the order is swapped: first the labels, then the decoder's input",
                      "順序が逆である。先にラベル、次にデコーダの入力である")
    if torch.equal(labels, target_ids):
        raise Mistake("labels still hold the pad id at the pads: the loss would train the model to predict pads",
                      "labels のパッド位置にパッド ID が残っている。これでは損失が、パッドを予測するように"
                      "モデルを学習させてしまう")
    if torch.equal(labels[:, :-1], want_labels[:, 1:]):
        raise Mistake("labels stay in place: the model shifts only the decoder's input, not the labels",
                      "labels は位置をずらさない。モデルがシフトするのはデコーダの入力だけで、ラベルではない")
    if not torch.equal(labels, want_labels):
        raise Mistake("labels: keep each real target id where it is and mark only the pads with -100",
                      "labels では、ターゲットの実トークンの ID をそれぞれ元の位置に残し、パッドだけを -100 にすること")
    if torch.equal(decoder_input_ids, target_ids):
        raise Mistake("decoder_input_ids are not shifted: the decoder would read the very token it must predict",
                      "decoder_input_ids がシフトされていない。これではデコーダが、予測すべきトークンそのものを"
                      "読んでしまう")
    if (decoder_input_ids == -100).any():
        raise Mistake("decoder_input_ids hold -100: -100 is a mark for the loss, not a token id the decoder can read",
                      "decoder_input_ids に -100 が入っている。-100 は損失のための目印であり、デコーダが読める"
                      "トークン ID ではない")
    at_pads = torch.cat([torch.zeros_like(pads[:, :1]), pads[:, :-1]], 1)   # where the shifted labels hold -100
    if torch.equal(decoder_input_ids[~at_pads], want_inputs[~at_pads]) and not torch.equal(decoder_input_ids,
                                                                                         want_inputs):
        raise Mistake("where the shifted labels hold -100, the decoder input must be the pad id",
                      "シフトしたラベルが -100 になる位置では、デコーダの入力はパッド ID でなければならない")
    if torch.equal(decoder_input_ids[:, :-1], target_ids[:, 1:]):
        raise Mistake("that is a shift to the left: the decoder must read the PREVIOUS token at each position",
                      "それは左へのシフトである。デコーダは各位置で、1 つ前のトークンを読まなければならない")
    if torch.equal(decoder_input_ids[:, 1:], want_inputs[:, 1:]) and not torch.equal(decoder_input_ids[:, :1],
                                                                                    want_inputs[:, :1]):
        raise Mistake("the first decoder input must be the decoder start token",
                      "デコーダの最初の入力は、デコーダの開始トークンでなければならない")
    if not torch.equal(decoder_input_ids, want_inputs):
        raise Mistake("decoder_input_ids: the start token, then the targets shifted one place to the right",
                      "decoder_input_ids は、開始トークンのあとに、ターゲットを 1 つ右にずらしたものが続く形にすること")
