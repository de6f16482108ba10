"""Chapter 13: beyond the triangle: sliding windows and their conventions, prefix-LM, sinks, chunked prefill.

Two polarities, as in chapter 10:
- a mask is a bool tensor in helpers.masks' convention, True = the query may NOT attend the key (blocked);
- a mask_mod follows torch.nn.attention.flex_attention: mask_mod(b, h, q_idx, kv_idx) -> bool tensor,
  True = the query MAY attend the key (SDPA's convention). `~mask` turns one into the other.

Window conventions (the source of the classic off-by-one):
- "keys": the width w counts the keys a query sees, itself included: query i sees keys i-w+1 .. i (transformers'
  `sliding_window`, Mistral's config, helpers.checks.expected_mask("sliding_window", window=w),
  chapter 10's sliding_window_mod);
- "left": the width counts the keys to the LEFT of the query, itself excluded: query i sees keys i-w .. i, w + 1
  of them (flash-attn's `window_size=(left, right)`, from its documentation: it is not installable here).

Chunked prefill: `prefill` feeds a prompt to chapter 9's TinyLM in chunks with a KV cache; each chunk's mask is
`chunk_mask(chunk, cached)`, shape (chunk, cached + chunk), aligned bottom-right. The explorer (`mask_explorer`)
builds a mask from a window width, a prefix, sinks, a chunk size and a number of layers.
"""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as widgets
import torch
from torch.nn.attention.flex_attention import create_mask
from transformers import masking_utils

from helpers import arguments
from helpers.attention import attention_steps
from helpers.chapters.ch07_dead_rows_and_fast_paths import padded
from helpers.chapters.ch09_batched_generation import TinyLM
from helpers.chapters.ch10_packing_and_the_cost_of_padding import sliding_window_mod
from helpers.checks import receptive_field
from helpers.exercises import Mistake, as_ints, blocked_mask, call, exercise
from helpers.explorer import RED, Explorer, Panel, View, explorer
from helpers.language import Bilingual, labeller, say

MaskMod = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
CONVENTIONS = ("keys", "left")


def _behind(queries: int, keys: int, cached: int = 0) -> torch.Tensor:
    """(queries, keys) int64: how many steps key j is behind query i, the queries at positions cached .. cached +
    queries - 1 and the keys at 0 .. keys - 1 (negative = a future key)."""
    return (torch.arange(queries)[:, None] + cached) - torch.arange(keys)[None, :]


def _length(length: int, name: str = "length") -> int:
    return arguments.integer(length, name, minimum=1)


# --- sliding windows ---

def window_mask(length: int, width: int, convention: str = "keys") -> torch.Tensor:
    """Causal sliding window, bool (length, length), True = blocked.

    convention="keys": width counts the keys a query sees, itself included (width >= 1; transformers, Mistral).
    convention="left": width counts the keys before the query, itself excluded (width >= 0; flash-attn's
    window_size[0]), so the query sees width + 1 keys. A width at least the length gives the causal triangle.
    """
    length = _length(length)
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS} ('keys': itself included, 'left': the keys "
                         f"before it), got {convention!r}")
    width = arguments.integer(width, "width", minimum=1 if convention == "keys" else 0)
    keys = width if convention == "keys" else width + 1
    behind = _behind(length, length)
    return (behind < 0) | (behind >= keys)


def keys_seen(query: int, width: int, convention: str = "keys") -> int:
    """How many keys query `query` (0-based) sees under a causal window of `width` in `convention`."""
    query = arguments.integer(query, "query", minimum=0)
    return int((~window_mask(query + 1, width, convention))[query].sum())


def keys_per_query(blocked: torch.Tensor) -> torch.Tensor:
    """(L,) int64: how many keys each query row of a bool mask (True = blocked) may attend."""
    arguments.bool_mask(blocked, "blocked")
    if blocked.dim() != 2:
        raise ValueError(f"blocked must be a 2-D mask (queries, keys), got shape {tuple(blocked.shape)}")
    return (~blocked).sum(-1)


def flash_attn_mask(q_len: int, k_len: int, window_size: tuple[int, int] = (-1, -1),
                    causal: bool = False) -> torch.Tensor:
    """flash-attn's mask, written from its documentation (flash_attn_func's docstring), bool (q_len, k_len),
    True = blocked. Query i may attend keys i + k_len - q_len - left .. i + k_len - q_len + right, inclusive
    (-1 = no limit on that side); causal=True also blocks keys after i + k_len - q_len (aligned bottom-right)."""
    q_len, k_len = _length(q_len, "q_len"), _length(k_len, "k_len")
    arguments.flag(causal, "causal")
    if not isinstance(window_size, tuple) or len(window_size) != 2:
        raise TypeError(f"window_size must be a tuple (left, right) of two ints, got {window_size!r}")
    left, right = (arguments.integer(n, "window_size's entries", minimum=-1) for n in window_size)
    behind = _behind(q_len, k_len, cached=k_len - q_len)
    blocked = torch.zeros(q_len, k_len, dtype=torch.bool)
    if left >= 0:
        blocked |= behind > left
    if right >= 0:
        blocked |= behind < -right
    if causal:
        blocked |= behind < 0
    return blocked


# step 1's table: each spelling of "a window of w", and its name in the Japanese edition (the code stays as it is)
SPELLINGS_JA = {
    "this series: i - j < w (helpers.checks, ch13)": "このシリーズの i - j < w (helpers.checks, ch13)",
    "transformers sliding_window=w (Mistral, Qwen2)": "transformers の sliding_window=w (Mistral, Qwen2)",
    "flash-attn window_size=(w - 1, 0), causal=True": "flash-attn の window_size=(w - 1, 0), causal=True",
    "flash-attn window_size=(w, 0), causal=True": "flash-attn の window_size=(w, 0), causal=True",
    "mask_mod q_idx - kv_idx < w (chapter 10)": "mask_mod の q_idx - kv_idx < w（第 10 章）",
    "transformers bidirectional sliding window w": "transformers の双方向スライディングウィンドウ w",
}


def spelling_line(width: int, spelling: str, keys: int, query: int = 4) -> str:
    """One row of step 1's table, in the current language: how many keys `query` sees under `spelling` (a key
    of SPELLINGS_JA) of a window of `width`. The names line up in both editions (a Japanese character counts 2)."""
    if spelling not in SPELLINGS_JA:
        raise ValueError(f"spelling must be one of {list(SPELLINGS_JA)}, got {spelling!r}")
    return say(f"w = {width}: {spelling:<48} query {query} sees {keys} keys",
               f"w = {width}：{padded(SPELLINGS_JA[spelling], 50)} クエリ {query} が見るキーは {keys} 個")


def transformers_window_mask(length: int, sliding_window: int) -> torch.Tensor:
    """transformers' own sliding-window mask (masking_utils.sdpa_mask with sliding_window_causal_mask_function),
    converted to True = blocked, bool (length, length)."""
    length = _length(length)
    sliding_window = arguments.integer(sliding_window, "sliding_window", minimum=1)
    may = masking_utils.sdpa_mask(batch_size=1, q_length=length, kv_length=length, allow_is_causal_skip=False,
                                  mask_function=masking_utils.sliding_window_causal_mask_function(sliding_window))
    return ~may[0, 0]


def mod_mask(mask_mod: MaskMod, q_len: int, k_len: int | None = None) -> torch.Tensor:
    """A mask_mod drawn by torch's create_mask (no compiling), converted to True = blocked, bool (q_len, k_len)."""
    if not callable(mask_mod):
        raise TypeError(f"mask_mod must be a function (b, h, q_idx, kv_idx) -> bool tensor, got "
                        f"{type(mask_mod).__name__}")
    q_len = _length(q_len, "q_len")
    k_len = q_len if k_len is None else _length(k_len, "k_len")
    return ~create_mask(mask_mod, None, None, q_len, k_len, device="cpu")[0, 0]


# --- prefix-LM and bidirectional spans ---

def prefix_mask(length: int, prefix: int) -> torch.Tensor:
    """Prefix-LM, bool (length, length), True = blocked: the first `prefix` tokens see each other both ways,
    the rest is causal (prefix 0 = causal; prefix = length = bidirectional)."""
    length = _length(length)
    prefix = arguments.integer(prefix, "prefix", minimum=0)
    if prefix > length:
        raise ValueError(f"prefix must be at most length={length}, got {prefix}")
    inside = torch.arange(length) < prefix
    return (_behind(length, length) < 0) & ~(inside[:, None] & inside[None, :])


def prefix_mod(prefix: int) -> MaskMod:
    """prefix_mask as a mask_mod (True = may attend)."""
    prefix = arguments.integer(prefix, "prefix", minimum=0)

    def mod(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor) -> torch.Tensor:
        return (kv_idx <= q_idx) | ((q_idx < prefix) & (kv_idx < prefix))
    return mod


def _groups(groups: object) -> torch.Tensor:
    if not isinstance(groups, torch.Tensor) or groups.dim() != 1 or groups.dtype.is_floating_point \
            or groups.dtype.is_complex or groups.dtype == torch.bool or groups.numel() == 0:
        got = f"{groups.dtype} {tuple(groups.shape)}" if isinstance(groups, torch.Tensor) else type(groups).__name__
        raise TypeError(f"groups must be a non-empty 1-D integer tensor (-1 = text, 0, 1, ... = a span), got {got}")
    if groups.min() < -1:
        raise ValueError(f"groups must hold -1 (text) or span ids >= 0, got {groups.unique().tolist()}")
    return groups


def span_mask(groups: torch.Tensor) -> torch.Tensor:
    """Causal, plus both ways inside each span: bool (L, L), True = blocked. groups (L,): -1 for a text token,
    g >= 0 for the tokens of span g (an image, a prompt). A span never sees a later span (that is the future)."""
    groups = _groups(groups)
    same = (groups[:, None] == groups[None, :]) & (groups[:, None] >= 0)
    return (_behind(len(groups), len(groups)) < 0) & ~same


def span_mod(groups: torch.Tensor) -> MaskMod:
    """span_mask as a mask_mod (True = may attend)."""
    groups = _groups(groups)

    def mod(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor) -> torch.Tensor:
        return (kv_idx <= q_idx) | ((groups[q_idx] == groups[kv_idx]) & (groups[q_idx] >= 0))
    return mod


# --- attention sinks ---

def sink_window_mask(length: int, sinks: int, width: int) -> torch.Tensor:
    """StreamingLLM: the first `sinks` tokens plus a causal window of `width` keys (itself included), bool
    (length, length), True = blocked. Still causal: a query never sees a sink after it."""
    length = _length(length)
    sinks = arguments.integer(sinks, "sinks", minimum=0)
    sink = (torch.arange(length) < sinks)[None, :]
    return window_mask(length, width) & ~(sink & (_behind(length, length) >= 0))


def sink_window_mod(sinks: int, width: int) -> MaskMod:
    """sink_window_mask as a mask_mod (True = may attend)."""
    sinks = arguments.integer(sinks, "sinks", minimum=0)
    width = arguments.integer(width, "width", minimum=1)

    def mod(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor) -> torch.Tensor:
        return (kv_idx <= q_idx) & ((q_idx - kv_idx < width) | (kv_idx < sinks))
    return mod


# --- chunks against a KV cache ---

def chunk_mask(chunk: int, cached: int, window: int | None = None) -> torch.Tensor:
    """The mask of a chunk of `chunk` new queries against `cached` keys already in the cache plus its own:
    bool (chunk, cached + chunk), True = blocked, aligned bottom-right (the chunk's query i is position
    cached + i). window: a causal window of that many keys (itself included); None = plain causal."""
    chunk = _length(chunk, "chunk")
    cached = arguments.integer(cached, "cached", minimum=0)
    behind = _behind(chunk, cached + chunk, cached)
    blocked = behind < 0
    if window is not None:
        blocked |= behind >= arguments.integer(window, "window", minimum=1)
    return blocked


def chunk_mod(cached: int, window: int | None = None) -> MaskMod:
    """chunk_mask as a mask_mod for Q_LEN = chunk, KV_LEN = cached + chunk (True = may attend)."""
    cached = arguments.integer(cached, "cached", minimum=0)
    width = None if window is None else arguments.integer(window, "window", minimum=1)

    def mod(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor) -> torch.Tensor:
        allowed = kv_idx <= q_idx + cached
        return allowed if width is None else allowed & (q_idx + cached - kv_idx < width)
    return mod


PREFILL_MASKS = ("bottom-right", "top-left", "cache forgotten")


def _prefill_mask(kind: str, chunk: int, cached: int, window: int | None) -> torch.Tensor:
    if kind == "bottom-right":
        return chunk_mask(chunk, cached, window)
    if kind == "top-left":                                  # as SDPA's is_causal aligns a (chunk, S) mask
        blocked = ~torch.ones(chunk, cached + chunk, dtype=torch.bool).tril()
        if window is not None:
            blocked |= _behind(chunk, cached + chunk) >= window
        return blocked
    blocked = chunk_mask(chunk, cached, window)             # "cache forgotten": the cached columns blocked
    blocked[:, :cached] = True
    return blocked


@torch.no_grad()
def prefill(model: TinyLM, ids: torch.Tensor, chunk: int | None = None, *, window: int | None = None,
            mask: str = "bottom-right", keep: int | None = None) -> torch.Tensor:
    """Logits (N, L, vocab) for ids (N, L), fed to chapter 9's TinyLM `chunk` tokens at a time with a KV cache
    (chunk=None: one pass). Positions are absolute: the chunk starting at token s gets positions s, s + 1, ...

    window: every block attends through a causal window of `window` keys (itself included); None = causal.
    mask: how each chunk's mask is built: "bottom-right" (right: chunk_mask), or one of two bugs, "top-left"
    (query i of the chunk treated as position i) or "cache forgotten" (the cached columns blocked).
    keep: after each chunk, keep only the last `keep` keys and values of every block (a rolling cache).
    The block's arithmetic is TinyLM's (Block.forward), with the mask made here instead of inside the block.
    """
    if not isinstance(model, TinyLM):
        raise TypeError(f"model must be chapter 9's TinyLM, got {type(model).__name__}")
    arguments.tensor(ids, "ids")
    if ids.dim() != 2 or ids.dtype != torch.long:
        raise ValueError(f"ids must be an int64 tensor (N, L), got {ids.dtype} {tuple(ids.shape)}")
    N, L = ids.shape
    if L > model.max_len:
        raise ValueError(f"ids must hold at most the model's max_len={model.max_len} tokens, got {L}")
    chunk = L if chunk is None else _length(chunk, "chunk")
    if window is not None:
        window = arguments.integer(window, "window", minimum=1)
    if keep is not None:
        keep = arguments.integer(keep, "keep", minimum=1)
    if mask not in PREFILL_MASKS:
        raise ValueError(f"mask must be one of {PREFILL_MASKS}, got {mask!r}")
    cache: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * len(model.blocks)
    logits = []
    for start in range(0, L, chunk):
        new = ids[:, start:start + chunk]
        x = model.tok(new) + model.pos(torch.arange(start, start + new.shape[1]))
        for b, block in enumerate(model.blocks):
            n = x.shape[1]
            q, k, v = (t.view(N, n, block.n_heads, -1).transpose(1, 2) for t in block.qkv(block.ln1(x)).chunk(3, -1))
            if cache[b] is not None:
                k, v = torch.cat([cache[b][0], k], 2), torch.cat([cache[b][1], v], 2)
            blocked = _prefill_mask(mask, n, k.shape[2] - n, window)
            out = attention_steps(q, k, v, attn_mask=blocked, fill="min").output
            x = x + block.proj(out.transpose(1, 2).reshape(N, n, -1))
            x = x + block.mlp(block.ln2(x))
            cache[b] = (k, v) if keep is None else (k[:, :, -keep:], v[:, :, -keep:])
        logits.append(model.head(model.ln_f(x)))
    return torch.cat(logits, 1)


# --- the explorer: one mask from a window, a prefix, sinks; its n-layer field; one chunk ---

LENGTH = 10
LAYERS = 4


def full_mask(length: int, width: int | None = None, prefix: int = 0, sinks: int = 0) -> torch.Tensor:
    """Causal, cut to a window of `width` keys (None: no window), plus the first `sinks` tokens (causally) and a
    prefix of `prefix` tokens that see each other both ways: bool (length, length), True = blocked."""
    length = _length(length)
    reach = length if width is None else arguments.integer(width, "width", minimum=1)
    sinks = arguments.integer(sinks, "sinks", minimum=0)
    behind = _behind(length, length)
    sink = (torch.arange(length) < sinks)[None, :]
    allowed = (behind >= 0) & ((behind < reach) | sink)
    inside = torch.arange(length) < arguments.integer(prefix, "prefix", minimum=0)
    return ~(allowed | (inside[:, None] & inside[None, :]))      # the prefix sees all of itself, both ways


def full_mod(width: int | None = None, prefix: int = 0, sinks: int = 0) -> MaskMod:
    """full_mask as a mask_mod (True = may attend)."""
    reach = LENGTH * 10**6 if width is None else arguments.integer(width, "width", minimum=1)
    prefix = arguments.integer(prefix, "prefix", minimum=0)
    sinks = arguments.integer(sinks, "sinks", minimum=0)

    def mod(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor) -> torch.Tensor:
        past = kv_idx <= q_idx
        return (past & ((q_idx - kv_idx < reach) | (kv_idx < sinks))) | ((q_idx < prefix) & (kv_idx < prefix))
    return mod


def spellings_agree(length: int, width: int) -> dict[str, bool]:
    """Does each library's spelling of a window of `width` keys (itself included) give window_mask(length, width)?
    transformers' sliding_window=width, flash-attn's window_size=(width - 1, 0) with causal=True (from its docs),
    and chapter 10's sliding_window_mod(width) through torch's create_mask."""
    hand = window_mask(length, width)
    return {f"transformers sliding_window={width}": torch.equal(transformers_window_mask(length, width), hand),
            f"flash-attn window_size=({width - 1}, 0)": torch.equal(
                flash_attn_mask(length, length, (width - 1, 0), causal=True), hand),
            f"mask_mod sliding_window_mod({width})": torch.equal(mod_mask(sliding_window_mod(width), length), hand)}


def mask_view(width: int = 3, prefix: int = 0, sinks: int = 0, chunk: int = 4, layers: int = 2) -> View:
    """Chapter 13: the one-layer mask, its `layers`-layer receptive field, keys per query, and the last chunk's
    (chunk, cached + chunk) rows, for 10 tokens."""
    L = LENGTH
    for name, value, low, high in (("width", width, 1, L), ("prefix", prefix, 0, L), ("sinks", sinks, 0, L),
                                   ("chunk", chunk, 1, L), ("layers", layers, 1, LAYERS)):
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise ValueError(f"{name} must be an int from {low} to {high}, got {value!r}")
    blocked = full_mask(L, width, prefix, sinks)
    field = receptive_field(blocked, layers)
    labels = [str(i) for i in range(L)]
    one, many = keys_per_query(blocked), keys_per_query(field)
    mod_agrees = torch.equal(mod_mask(full_mod(width, prefix, sinks), L), blocked)
    agree = spellings_agree(L, width)
    last = L - (L % chunk or chunk)                         # the first position of the last chunk
    rows = blocked[last:]
    wrong = blocked[:L - last] != rows                      # top-left: the chunk's rows read as positions 0, 1, ...
    panels = (
        Panel((~blocked).float(), labels, labels, masked=blocked, fmt=".0f",
              title=Bilingual(f"1 layer: window {width}, prefix {prefix}, sinks {sinks}",
                              f"1 層：ウィンドウ {width}、プレフィックス {prefix}、シンク {sinks}")),
        Panel((~field).float(), labels, labels, masked=field, fmt=".0f",
              title=Bilingual(f"{layers} layer(s): what each query can reach", f"{layers} 層：各クエリが届く範囲"),
              xlabel=Bilingual("input position", "入力の位置")),
        Panel(torch.stack([one, many], 1).float(), labels,
              [say("1 layer", "1 層"), say(f"{layers} layer(s)", f"{layers} 層")],
              title=Bilingual("keys per query", "クエリごとのキーの数"), fmt=".0f", xlabel=""),
        Panel((~rows).float(), labels[last:], labels, masked=rows, fmt=".0f", framed=wrong, frame_color=RED, mark="×",
              title=Bilingual(f"last chunk: {L - last} queries x {L} keys ({last} cached)",
                              f"最後のチャンク：クエリ {L - last} 個 × キー {L} 個（{last} 個はキャッシュ済み）")),
    )
    reach = int(many[-1])
    formula = prefix == 0 and sinks == 0 and reach == layers * (width - 1) + 1
    note = f" = {layers}·({width}−1)+1" if formula else ""
    note_ja = f"（= {layers}·({width}−1)+1）" if formula else ""
    summary = say(f"window {width} (keys, itself included), prefix {prefix}, sinks {sinks}: query {L - 1} sees "
                  f"{int(one[-1])} key(s) in 1 layer and reaches {reach} position(s) in {layers} layer(s){note}; "
                  f"window spellings agree ({', '.join(agree)}): {all(agree.values())}; "
                  f"whole mask as one mask_mod: {mod_agrees}; last chunk: {L - last} x {L}, "
                  f"{int(wrong.sum())} cell(s) a top-left alignment would get wrong",
                  f"ウィンドウ {width}（キーの数、自分自身を含む）、プレフィックス {prefix}、シンク {sinks}："
                  f"クエリ {L - 1} は 1 層で {int(one[-1])} 個のキーを見て、{layers} 層で {reach} 個の位置に届く"
                  f"{note_ja}。ウィンドウの書き方（{'、'.join(agree)}）は"
                  f"{'一致する' if all(agree.values()) else '一致しない'}。マスク全体を 1 つの mask_mod で"
                  f"書くと{'同じマスクになる' if mod_agrees else '違うマスクになる'}。最後のチャンクは "
                  f"{L - last} × {L} で、左上揃えにすると {int(wrong.sum())} 個のセルを誤る")
    caption = Bilingual("1: may attend    hatched: blocked    ×: a top-left-aligned chunk mask gets this cell wrong",
                        "1：参照してよい    斜線：遮断    ×：左上に揃えたチャンクのマスクはこのセルを誤る")
    return View(panels, summary, caption)


def mask_explorer() -> Explorer:
    """Window width, prefix length, sinks, chunk size and layers -> the mask, its receptive field, keys per
    query, the last chunk, and whether the window's spellings agree."""
    controls = {
        "width": widgets.IntSlider(value=3, min=1, max=LENGTH, description=say("window", "ウィンドウ")),
        "prefix": widgets.IntSlider(value=0, min=0, max=LENGTH, description=say("prefix", "プレフィックス")),
        "sinks": widgets.IntSlider(value=0, min=0, max=3, description=say("sinks", "シンク")),
        "chunk": widgets.IntSlider(value=4, min=1, max=LENGTH, description=say("chunk", "チャンク")),
        "layers": widgets.IntSlider(value=2, min=1, max=LAYERS, description=say("layers", "層の数")),
    }
    return explorer(controls, mask_view, Bilingual(
        "Window width, prefix length, sinks, chunk size and layers -> the mask, its receptive field, keys per "
        "query, the last chunk, and whether the window's spellings agree.",
        "ウィンドウの幅、プレフィックスの長さ、シンク、チャンクの大きさ、層の数 → マスク、受容野、クエリごとの"
        "キーの数、最後のチャンク、ウィンドウの書き方が一致するか"))


EXPLORERS = (mask_explorer,)
# What the static explorer (helpers/static_explorer.py) keeps of the controls: 17600 settings, more than it
# precomputes; the window's small values and its end, prefix 0/2/4/10, every sink count, chunks 2/3/4/5/10 (a
# last chunk of 2, 1, 2, 5 and 10 queries), every layer count: 1920 settings.
SUBGRIDS = {mask_explorer: {"width": (1, 2, 3, 4, 6, 10), "prefix": (0, 2, 4, 10), "chunk": (2, 3, 4, 5, 10)}}


# --- the exercises' checks (each computes the expected answer from the problem's data) ---

@exercise
def check_1(answer: object, left: int, queries: tuple[int, ...]) -> None:
    """Exercise 1: keys seen by each query under flash-attn's window_size=(left, 0), causal=True."""
    counts = as_ints(answer, Mistake("give a tuple of ints, one per query",
                                     "クエリ 1 つにつき 1 つ、int のタプルで答えること"))
    if len(counts) != len(queries):
        raise Mistake(f"give one count per query: {len(queries)} of them",
                      f"クエリ 1 つにつき個数を 1 つ、全部で {len(queries)} 個答えること")
    expected = tuple(keys_seen(q, left, "left") for q in queries)
    if counts == expected:
        return
    if counts == tuple(keys_seen(q, left, "keys") for q in queries):
        raise Mistake("that reads window_size[0] as the number of keys with the query itself; flash-attn counts "
                      "the keys before the query",
                      "window_size[0] を、クエリ自身を含めたキーの数として読んでいる。flash-attn が数えるのは、"
                      "クエリより前にあるキーである")
    if counts == tuple(e - 1 for e in expected):
        raise Mistake("the query itself is missing: a query always sees its own key, besides the ones before it",
                      "クエリ自身が抜けている。クエリは、前にあるキーに加えて、自分自身のキーを必ず見る")
    if counts == tuple(min(q + 1, 2 * left + 1) for q in queries) or 2 * left + 1 in counts:
        raise Mistake("causal=True: nothing to the right of the query is seen, whatever window_size[1] says",
                      "causal=True では、window_size[1] が何であれ、クエリより右にあるものは何も見えない")
    if counts == tuple(q + 1 for q in queries):
        raise Mistake("that is the whole past of each query: window_size[0] limits how far back a query reaches",
                      "それは各クエリの過去全体である。window_size[0] は、クエリがどこまで前に届くかを制限する")
    if counts == tuple(keys_seen(q - 1, left, "left") if q else 0 for q in queries):
        raise Mistake("positions count from 0: query 0 is the first token of the sequence",
                      "位置は 0 から数える。クエリ 0 が系列の最初のトークンである")
    if sorted(counts) == sorted(expected):
        raise Mistake("the counts are in the wrong order: one per query, in the order the queries are given",
                      "個数の順序が違う。クエリが与えられた順に、1 つずつ並べること")
    if all(a == left + 1 for a in counts):
        raise Mistake("near the start of the sequence a query has fewer keys behind it than the window allows",
                      "系列の先頭近くでは、クエリより前にあるキーが、ウィンドウの許す数より少ない")
    raise Mistake("count again: list the key positions each query may see under this window, and keep only "
                  "those that exist",
                  "数え直すこと。このウィンドウで各クエリが参照してよいキーの位置を書き出し、実在する位置だけを残すこと")


@exercise
def check_2(answer: object, chunk: int, cached: int, window: int) -> None:
    """Exercise 2: the (chunk, cached + chunk) mask of a chunk against a cache, with a window; True = blocked."""
    expected = chunk_mask(chunk, cached, window)
    answer, right = blocked_mask(answer, expected, lambda got: Mistake(
        f"the mask has one row per query of the chunk and one column per key it can be compared with "
        f"(the cached keys and the chunk's own), got shape {got}",
        "マスクの行はチャンクのクエリ 1 つにつき 1 行、列は、クエリが参照しうるキー（キャッシュ済みのキーと"
        f"チャンク自身のキー）1 つにつき 1 列である。渡された形状は {got} である"))
    if right:
        return
    if torch.equal(answer, _prefill_mask("top-left", chunk, cached, window)) or \
            torch.equal(answer, ~torch.ones(chunk, cached + chunk, dtype=torch.bool).tril()):
        raise Mistake("aligned top-left: the chunk's first query is not position 0 of the sequence",
                      "左上に揃えている。チャンクの最初のクエリは、系列の位置 0 ではない")
    if answer[:, :cached].all() and cached:
        raise Mistake("the cached columns are blocked: the cache holds keys the chunk's queries must see",
                      "キャッシュ済みの列が遮断されている。キャッシュには、チャンクのクエリが見なければならないキーが"
                      "入っている")
    if torch.equal(answer, chunk_mask(chunk, cached)):
        raise Mistake("the window is missing: keys too far behind a query must be blocked too",
                      "ウィンドウが抜けている。クエリから遠すぎる過去のキーも遮断すること")
    for off in (window - 1, window + 1):
        if off >= 1 and torch.equal(answer, chunk_mask(chunk, cached, off)):
            raise Mistake("the window is off by one: it counts the keys a query sees, the query itself included",
                          "ウィンドウが 1 つずれている。"
                          "ウィンドウの幅は、クエリが見るキーの数である（クエリ自身を含む）")
    behind = _behind(chunk, cached + chunk, cached)
    if (~answer & (behind < 0)).any():
        raise Mistake("a query sees a key after its own position",
                      "自分の位置より後のキーを見ているクエリがある")
    if answer[behind == 0].any():
        raise Mistake("a query cannot see its own key: find the column of each query's own position "
                      "(the chunk's queries come after the cached keys)",
                      "自分自身のキーを見られないクエリがある。各クエリ自身の位置に当たる列を探すこと"
                      "（チャンクのクエリは、キャッシュ済みのキーの後に来る）")
    raise Mistake("not quite: write out the position of each query of the chunk, then which keys it may see",
                  "まだ違う。チャンクの各クエリの位置を書き出し、次にそれぞれが参照してよいキーを書き出すこと")


def _check_mod(make: Callable[[int, int], MaskMod], sinks: int, width: int, length: int) -> torch.Tensor:
    """The learner's mask_mod, drawn with create_mask: bool (length, length), True = blocked; Mistake on misuse."""
    mod = call(make, sinks, width, when=say(f"called with (sinks={sinks}, width={width}),",
                                            f"(sinks={sinks}, width={width}) で呼んだとき、"))
    if not callable(mod):
        raise Mistake("your function must return a mask_mod: a function (b, h, q_idx, kv_idx) -> bool tensor",
                      "書く関数は mask_mod、つまり (b, h, q_idx, kv_idx) から bool テンソルを返す関数を返すこと")
    q, kv = torch.arange(length)[:, None], torch.arange(length)[None, :]
    try:
        allowed = mod(torch.tensor(0), torch.tensor(0), q, kv)
    except TypeError as error:
        if "positional argument" not in str(error):
            raise Mistake(f"your mask_mod raised TypeError: {str(error).splitlines()[0][:80]}",
                          f"書いた mask_mod で TypeError が発生した（{str(error).splitlines()[0][:80]}）") from None
        raise Mistake("a mask_mod takes four arguments (b, h, q_idx, kv_idx), even if it uses only the last "
                      "two",
                      "mask_mod は、最後の 2 つしか使わなくても、4 つの引数 (b, h, q_idx, kv_idx) をとる") from None
    except RuntimeError:
        raise Mistake("q_idx and kv_idx are tensors: combine conditions with &, | and ~ (in parentheses), not "
                      "`and`, `or`, `not` or an `if`",
                      "q_idx と kv_idx はテンソルである。条件は `and`、`or`、`not` や `if` ではなく、"
                      "&、|、~ で（括弧に入れて）組み合わせること") from None
    if not isinstance(allowed, torch.Tensor) or allowed.dtype != torch.bool:
        raise Mistake("a mask_mod returns a bool tensor (a comparison such as q_idx >= kv_idx gives one)",
                      "mask_mod は bool テンソルを返す（q_idx >= kv_idx のような比較の結果がそれである）")
    try:
        return mod_mask(mod, length)
    except Exception:   # noqa: BLE001
        raise Mistake("create_mask could not draw your mask_mod: use only comparisons and &, |, ~ of "
                      "q_idx and kv_idx",
                      "create_mask が、書いた mask_mod を描けなかった。q_idx と kv_idx の比較と、&、|、~ だけを"
                      "使うこと") from None


CASES_3 = ((1, 3, 8), (2, 2, 9), (0, 3, 7), (3, 1, 8), (1, 8, 8))   # (sinks, width, length)


@exercise
def check_3(answer: object) -> None:
    """Exercise 3: a function (sinks, width) -> mask_mod of the first `sinks` tokens plus a window (causal)."""
    if not callable(answer):
        raise Mistake("give a function (sinks, width) that returns a mask_mod",
                      "引数 (sinks, width) をとり、mask_mod を返す関数を答えること")
    drawn = [_check_mod(answer, sinks, width, length) for sinks, width, length in CASES_3]
    triangle = _behind(CASES_3[0][2], CASES_3[0][2]) < 0
    if torch.equal(drawn[0], drawn[3]) and not torch.equal(drawn[0], triangle):   # (1, 3, 8) vs (3, 1, 8)
        raise Mistake("your function gives the same mask whatever sinks and width it is called with: use its "
                      "arguments",
                      "書いた関数は、sinks と width に何を渡しても同じマスクを返す。引数を使うこと")
    for got, (sinks, width, length) in zip(drawn, CASES_3, strict=True):
        expected = sink_window_mask(length, sinks, width)
        if torch.equal(got, expected):
            continue
        if torch.equal(got, ~expected):
            raise Mistake("the polarity is flipped: in a mask_mod True means MAY attend",
                          "極性が逆である。mask_mod では True が「参照してよい」を意味する")
        if sinks != width and torch.equal(got, sink_window_mask(length, width, sinks)):
            raise Mistake("sinks and width are swapped: the function is called as sink_window(sinks, width)",
                          "sinks と width が入れ替わっている。関数は sink_window(sinks, width) の順で呼ばれる")
        behind = _behind(length, length)
        future = behind < 0
        if (~got & future).any():
            if (~got & future)[:, sinks:].any():
                raise Mistake(f"with sinks={sinks}, width={width}: a query sees a later token through the window; "
                              "the window stays causal (and & binds tighter than |: use parentheses)",
                              f"sinks={sinks}、width={width} のとき、ウィンドウを通して後のトークンを見るクエリが"
                              "ある。ウィンドウの部分も因果的でなければならない（& は | より強く結び付くので、"
                              "括弧を使うこと）")
            raise Mistake(f"with sinks={sinks}, width={width}: a query sees a later sink; the sinks stay causal "
                          "too",
                          f"sinks={sinks}、width={width} のとき、自分より後のシンクを見るクエリがある。シンクの"
                          "部分も因果的でなければならない")
        both = ~((behind >= 0) & (behind < width) & (torch.arange(length) < sinks)[None, :])
        if torch.equal(got, both):
            raise Mistake(f"with sinks={sinks}, width={width}: a key is seen only if it is a sink AND in the "
                          "window; one of the two is enough",
                          f"sinks={sinks}、width={width} のとき、キーが見えるのはシンクであり、かつウィンドウ内にある"
                          "ときだけになっている。どちらか一方で十分である")
        if got.diagonal().any():
            raise Mistake(f"with sinks={sinks}, width={width}: a query cannot see itself; the window counts the "
                          "query itself",
                          f"sinks={sinks}、width={width} のとき、自分自身を見られないクエリがある。ウィンドウは"
                          "クエリ自身も数える")
        if torch.equal(got, sink_window_mask(length, sinks, length)) and width < length:
            raise Mistake(f"with sinks={sinks}, width={width}: the window cuts no key at all; check its "
                          "condition, which keys are too far behind the query",
                          f"sinks={sinks}、width={width} のとき、ウィンドウがキーを 1 つも切っていない。どのキーが"
                          "クエリから遠すぎるかを決める条件を確かめること")
        if torch.equal(got, window_mask(length, width)) and sinks:
            raise Mistake(f"with sinks={sinks}: the sinks are missing; the first tokens must stay visible to every "
                          "later query",
                          f"sinks={sinks} のとき、シンクが抜けている。最初のトークンは、それより後のすべてのクエリから"
                          "見え続けなければならない")
        for w in (width - 1, width + 1):
            if w >= 1 and torch.equal(got, sink_window_mask(length, sinks, w)):
                raise Mistake("the window is off by one: width counts the keys a query sees, itself included",
                              "ウィンドウが 1 つずれている。width は、クエリが見るキーの数である（クエリ自身を含む）")
        for k in (sinks - 1, sinks + 1):
            if k >= 0 and torch.equal(got, sink_window_mask(length, k, width)):
                raise Mistake(f"with sinks={sinks}: the sinks are off by one; count the first tokens kept",
                              f"sinks={sinks} のとき、シンクが 1 つずれている。残す最初のトークンの数を数え直すこと")
        raise Mistake(f"with sinks={sinks}, width={width}, {length} tokens the mask differs: draw it with "
                      f"ch13.mod_mask(answer_3({sinks}, {width}), {length}) and compare it row by row with the rule",
                      f"sinks={sinks}、width={width}、{length} トークンのとき、マスクが違う。"
                      f"ch13.mod_mask(answer_3({sinks}, {width}), {length}) で描き、規則と 1 行ずつ比べること")

# The texts chapter 13's notebook draws on its figures (titles, axis labels, legends), English as its code writes
# them, and their Japanese: `title=ch13.label("...")` draws either (helpers.language.labeller).
FIGURES_JA = {
    "prefix-LM, prefix {P}": "プレフィックス LM、プレフィックス {P}",
    "word": "語",
    "two images as bidirectional spans": "2 枚の画像を双方向のスパンとして",
    "1: may attend    hatched: blocked": "1：参照してよい    斜線：遮断",
    "chunk mask: {chunk} queries x ({cached} cached + {chunk}) keys\naligned bottom-right":
        "チャンクのマスク：クエリ {chunk} 個 × キー（キャッシュ済み {cached} + {chunk}）個\n右下に揃える",
    "aligned top-left (is_causal=True): wrong": "左上に揃える (is_causal=True)：誤り",
    "1: may attend    hatched: blocked    ×: differs from the chunk's own mask":
        "1：参照してよい    斜線：遮断    ×：チャンク本来のマスクと異なる",
}
label = labeller(FIGURES_JA)
