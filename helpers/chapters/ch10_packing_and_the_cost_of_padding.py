"""Chapter 10: what padding costs, and the ways around it: waste counts, bucketing, packing, mask_mods, explorer.

Counts are in "cells": one attention score (query, key) or one token through a position-wise layer.
A batch of N sequences padded to L_max computes N * L_max**2 scores and N * L_max token rows;
only sum(L_i**2) and sum(L_i) of them belong to real tokens (bidirectional attention, no causal saving).

mask_mod functions follow torch.nn.attention.flex_attention: mask_mod(b, h, q_idx, kv_idx) -> bool,
True = the query MAY attend the key (SDPA's convention, the opposite of helpers.masks').

The explorer: the same 8 sequences padded, bucketed or packed; the layout, a mask and the waste.
The exercise checks (at the end): check_1 (wasted scores), check_2 (a sliding-window mask_mod), check_3 (positions).
"""

from __future__ import annotations

import functools
import inspect
import statistics
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

import ipywidgets as widgets
import torch

from helpers import arguments
from helpers.exercises import Mistake, as_ints, as_number, call, exercise
from helpers.explorer import Explorer, Panel, View, explorer
from helpers.language import Bilingual, labeller, say
from helpers.masks import causal_mask, key_padding_mask

MaskMod = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def _check_lengths(lengths: Sequence[int], name: str = "lengths") -> list[int]:
    if isinstance(lengths, torch.Tensor):
        lengths = lengths.tolist()
    if not isinstance(lengths, Sequence) or isinstance(lengths, (str, bytes)):
        raise TypeError(f"{name} must be a non-empty list of ints, got {lengths!r}")
    if len(lengths) == 0:
        raise ValueError(f"{name} must be a non-empty list of ints (one real length per sequence), got []")
    try:
        checked = [arguments.integer(n, name) for n in lengths]
    except TypeError:
        raise TypeError(f"{name} must hold ints (one real length per sequence), got {list(lengths)}") from None
    if min(checked) < 1:
        raise ValueError(f"{name} must hold ints >= 1 (one real length per sequence), got {checked}")
    return checked


def _check_positive(value: int, name: str) -> int:
    return arguments.integer(value, name, minimum=1)


# --- counting the waste ---

class Cost(NamedTuple):
    """Work of one strategy on a set of sequences: useful (real tokens) vs computed."""

    useful_attention: int       # sum(L_i**2): scores between real tokens of the same sequence
    computed_attention: int     # scores actually computed (padding and other documents included)
    useful_positionwise: int    # sum(L_i): real token rows through a position-wise layer
    computed_positionwise: int  # token rows computed, pads included

    @property
    def wasted_attention(self) -> float:
        """Fraction of the computed scores that are wasted."""
        return 1 - self.useful_attention / self.computed_attention

    @property
    def wasted_positionwise(self) -> float:
        """Fraction of the computed token rows that are wasted."""
        return 1 - self.useful_positionwise / self.computed_positionwise


def padded_cost(batches: Sequence[Sequence[int]]) -> Cost:
    """Each batch (a list of lengths) padded to its own longest sequence: N * L_max**2 and N * L_max per batch."""
    if not isinstance(batches, Sequence) or isinstance(batches, (str, bytes)):
        raise TypeError(f"batches must be a non-empty list of lists of lengths, got {batches!r}")
    if len(batches) == 0:
        raise ValueError("batches must be a non-empty list of lists of lengths, got []")
    batches = [_check_lengths(b, "each batch") for b in batches]
    return Cost(sum(n * n for b in batches for n in b), sum(len(b) * max(b) ** 2 for b in batches),
                sum(n for b in batches for n in b), sum(len(b) * max(b) for b in batches))


def packed_cost(rows: Sequence[Sequence[int]], row_len: int) -> Cost:
    """Packed rows of row_len tokens (each row a list of lengths), attention with a dense (row_len, row_len) mask."""
    _check_positive(row_len, "row_len")
    if not isinstance(rows, Sequence) or isinstance(rows, (str, bytes)) or len(rows) == 0:
        raise ValueError(f"rows must be a non-empty list of lists of lengths, got {rows!r}")
    rows = [_check_lengths(r, "each row") for r in rows]
    if any(sum(r) > row_len for r in rows):
        raise ValueError(f"every row must fit in row_len={row_len} tokens, got rows {rows}")
    return Cost(sum(n * n for r in rows for n in r), len(rows) * row_len ** 2,
                sum(n for r in rows for n in r), len(rows) * row_len)


# --- three ways to batch the same sequences (each returns lists of sequence indices) ---

def in_order(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Batches of batch_size sequences in arrival order (the last one may be smaller)."""
    n = len(_check_lengths(lengths))
    _check_positive(batch_size, "batch_size")
    return [list(range(i, min(i + batch_size, n))) for i in range(0, n, batch_size)]


def bucketed(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Bucketing: sort by length (stable), then batches of batch_size neighbours, so similar lengths share a batch."""
    lengths = _check_lengths(lengths)
    _check_positive(batch_size, "batch_size")
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


def packed_rows(lengths: Sequence[int], row_len: int) -> list[list[int]]:
    """Packing, first-fit decreasing: longest first, each into the first row with room; no sequence is split."""
    lengths = _check_lengths(lengths)
    _check_positive(row_len, "row_len")
    if max(lengths) > row_len:
        raise ValueError(f"row_len must be >= the longest sequence ({max(lengths)}), got {row_len}")
    rows: list[list[int]] = []
    free: list[int] = []
    for i in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        for r, room in enumerate(free):
            if lengths[i] <= room:
                rows[r].append(i)
                free[r] -= lengths[i]
                break
        else:
            rows.append([i])
            free.append(row_len - lengths[i])
    return rows


def pick(lengths: Sequence[int], groups: list[list[int]]) -> list[list[int]]:
    """The lengths of each group of indices (for padded_cost / packed_cost)."""
    lengths = _check_lengths(lengths)
    indices = [[arguments.integer(i, "groups[g][k] (an index into lengths)") for i in g] for g in groups]
    wrong = sorted({i for g in indices for i in g if not 0 <= i < len(lengths)})
    if wrong:   # a negative index would silently count a sequence from the end
        raise ValueError(f"groups must hold indices 0..{len(lengths) - 1} into lengths, got {wrong}")
    return [[lengths[i] for i in g] for g in indices]


# --- one packed row: document ids, restarted positions, the document mask ---

class PackedRow(NamedTuple):
    document: torch.Tensor  # (T,) int64: which sequence each token of the row comes from
    position: torch.Tensor  # (T,) int64: the token's position inside its own sequence (restarts at 0)


def pack(lengths: Sequence[int]) -> PackedRow:
    """Document ids and restarted positions for sequences of `lengths` concatenated into one row."""
    lengths = _check_lengths(lengths)
    sizes = torch.tensor(lengths)
    document = torch.repeat_interleave(torch.arange(len(lengths)), sizes)
    starts = torch.cumsum(sizes, 0) - sizes
    return PackedRow(document, torch.arange(int(sizes.sum())) - starts[document])


def document_mask(document: torch.Tensor, causal: bool = True) -> torch.Tensor:
    """Bool (T, T), True = blocked (helpers.masks' convention): another document, or (causal) a later key."""
    _integer_vector(document, "document", "document ids")
    arguments.flag(causal, "causal")
    blocked = document[:, None] != document[None, :]
    if causal and document.numel():            # causal_mask(0) refuses an empty mask; an empty document has none
        blocked |= causal_mask(document.numel()).to(document.device)
    return blocked


def _integer_vector(value: object, name: str, what: str) -> torch.Tensor:
    """value as a 1-D integer tensor (document ids, lengths), or a TypeError naming `name` and `what`."""
    if not isinstance(value, torch.Tensor) or value.dim() != 1 or value.dtype.is_floating_point \
            or value.dtype.is_complex or value.dtype == torch.bool:
        got = type(value).__name__
        if isinstance(value, torch.Tensor):
            got = f"{value.dtype} of shape {tuple(value.shape)}"
        hint = " (torch.tensor(...) makes one from a list)" if isinstance(value, (list, tuple)) else ""
        raise TypeError(f"{name} must be a 1-D integer tensor of {what}, got {got}{hint}")
    return value


# --- every mask of the series as a mask_mod (True = may attend) ---

def causal_mod(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor) -> torch.Tensor:
    """Query q may see keys 0..q."""
    return q_idx >= kv_idx


def padding_mod(lengths: torch.Tensor) -> MaskMod:
    """Batch item b may see its first lengths[b] keys (right padding)."""
    _integer_vector(lengths, "lengths", "real lengths, one per batch item")

    def mod(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor) -> torch.Tensor:
        return kv_idx < lengths[b]
    return mod


def padding_causal_mod(lengths: torch.Tensor) -> MaskMod:
    """Padding and causal together: a real key, not in the future."""
    padding = padding_mod(lengths)   # checks lengths

    def mod(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor) -> torch.Tensor:
        return padding(b, h, q_idx, kv_idx) & (q_idx >= kv_idx)
    return mod


def sliding_window_mod(width: int) -> MaskMod:
    """Causal, and at most width - 1 steps back: query q sees keys q - width + 1 .. q."""
    _check_positive(width, "width")

    def mod(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor) -> torch.Tensor:
        return (q_idx >= kv_idx) & (q_idx - kv_idx < width)
    return mod


def document_mod(document: torch.Tensor) -> MaskMod:
    """Packing: same document AND causal."""
    _integer_vector(document, "document", "document ids")

    def mod(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor) -> torch.Tensor:
        return (document[q_idx] == document[kv_idx]) & (q_idx >= kv_idx)
    return mod


# --- lengths from a long-tailed distribution ---

def lognormal_lengths(n: int, median: float, sigma: float, max_len: int, seed: int) -> list[int]:
    """n lengths round(median * exp(sigma * z)), z ~ N(0, 1) from torch.Generator(seed), clipped to 1..max_len."""
    n, max_len, seed = _check_positive(n, "n"), _check_positive(max_len, "max_len"), arguments.integer(seed, "seed")
    if n > 10**7:
        raise ValueError(f"n must be at most 10**7 lengths, got {n}")
    median, sigma = arguments.number(median, "median"), arguments.number(sigma, "sigma", minimum=0)
    if not median > 0:
        raise ValueError(f"median must be > 0 and sigma >= 0, got median={median!r}, sigma={sigma!r}")
    if not -2**63 <= seed < 2**64:
        raise ValueError(f"seed must fit in 64 bits (-2**63 <= seed < 2**64), got {seed}")
    z = torch.randn(n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return (median * torch.exp(sigma * z)).round().clamp(1, max_len).long().tolist()


def median_ms(fn: Callable[[], object], warmup: int = 3, repeats: int = 15) -> float:
    """Median wall time of fn() in milliseconds, after `warmup` untimed calls. A measurement, never a test."""
    if not callable(fn):
        raise TypeError(f"fn must be a function to time, called with no arguments, got {type(fn).__name__}")
    _check_positive(repeats, "repeats")
    arguments.integer(warmup, "warmup", minimum=0)
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


# --- the explorer: 8 sequences padded, bucketed or packed ---

DISTRIBUTIONS = ("narrow", "log-normal", "bimodal")
STRATEGIES = ("pad", "bucket", "pack")
BATCH_SIZES = (1, 2, 4, 8)
LABELS_JA = {"narrow": "狭い", "log-normal": "対数正規", "bimodal": "二峰性",
             "pad": "パディング", "bucket": "バケット", "pack": "パッキング"}  # the options' Japanese labels
NAMES = "ABCDEFGH"   # the 8 sequences
POOL = 8


@functools.cache
def pool_lengths(distribution: str) -> tuple[int, ...]:
    """The 8 sequence lengths (1..8) of a distribution, fixed by a seed."""
    g = torch.Generator().manual_seed(10)
    if distribution == "narrow":
        return tuple(torch.randint(5, 9, (POOL,), generator=g).tolist())              # 5..8
    if distribution == "log-normal":
        return tuple(lognormal_lengths(POOL, median=3, sigma=0.7, max_len=8, seed=0))
    if distribution == "bimodal":
        short = torch.randint(1, 3, (POOL,), generator=g)                             # 1..2
        long = torch.randint(7, 9, (POOL,), generator=g)                              # 7..8
        return tuple(torch.where(torch.arange(POOL) % 3 == 0, long, short).tolist())  # every third one is long
    raise ValueError(f"distribution must be one of {DISTRIBUTIONS}, got {distribution!r}")


def _layout_panel(lengths: tuple[int, ...], rows: list[list[int]], width: int, title: str) -> Panel:
    """One table row per batch row (a list of sequence indices, several when packed), one column per slot.

    Each cell shows the token's position inside its own sequence; hatched = padding.
    """
    position = torch.zeros(len(rows), width)
    pad = torch.ones(len(rows), width, dtype=torch.bool)
    for r, members in enumerate(rows):
        row = pack([lengths[i] for i in members])
        position[r, :len(row.position)] = row.position.float()
        pad[r, :len(row.position)] = False
    labels = ["+".join(NAMES[i] for i in members) for members in rows]
    return Panel(position, labels, [str(j) for j in range(width)], title=title, masked=pad, fmt=".0f",
                 xlabel=Bilingual("slot", "スロット"), ylabel=Bilingual("row", "行"))


def packing_view(distribution: str = "log-normal", batch_size: int = 4, strategy: str = "pad") -> View:
    """Chapter 10: how the 8 sequences are laid out, the attention mask of one row, and the wasted work."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    if batch_size not in BATCH_SIZES:
        raise ValueError(f"batch_size must be one of {BATCH_SIZES}, got {batch_size!r}")
    lengths = pool_lengths(distribution)
    if strategy == "pack":
        row_len = max(lengths)
        groups = packed_rows(lengths, row_len)
        cost = packed_cost(pick(lengths, groups), row_len)
        title = Bilingual(f"packed: {len(groups)} rows x {row_len} slots",
                          f"パッキング：{len(groups)} 行 × {row_len} スロット")
        layouts = [_layout_panel(lengths, groups, row_len, title)]
        busiest = max(range(len(groups)), key=lambda r: len(groups[r]))   # the row with the most documents
        first = pack([lengths[i] for i in groups[busiest]])
        used = len(first.document)
        document = torch.cat([first.document, torch.full((row_len - used,), -1)])   # empty slots: their own "document"
        blocked = document_mask(document)
        names = [NAMES[groups[busiest][d]] for d in first.document.tolist()]
        labels = [f"{n}{p}" for n, p in zip(names, first.position.tolist(), strict=True)]
        labels += ["·"] * (row_len - used)
        row_name = "+".join(NAMES[i] for i in groups[busiest])   # the row label of the layout table
        mask_title = Bilingual(f"document mask of row {row_name}\n(same document AND causal)",
                               f"行 {row_name} の文書マスク\n（同じ文書 かつ 因果）")
    else:
        groups = in_order(lengths, batch_size) if strategy == "pad" else bucketed(lengths, batch_size)
        cost = padded_cost(pick(lengths, groups))
        layouts = []
        for k, g in enumerate(groups):
            width = max(lengths[i] for i in g)
            layouts.append(_layout_panel(lengths, [[i] for i in g], width, Bilingual(f"batch {k}: {len(g)} x {width}",
                                                                                   f"バッチ {k}：{len(g)} × {width}")))
        shortest = min(groups[0], key=lambda i: lengths[i])   # the row of batch 0 with the most padding
        first, width = lengths[shortest], max(lengths[i] for i in groups[0])
        blocked = causal_mask(width) | key_padding_mask([first], width)
        labels = [f"{NAMES[shortest]}{p}" for p in range(first)] + [say("pad", "パッド")] * (width - first)
        mask_title = Bilingual(f"mask of batch 0, row {NAMES[shortest]}\n(causal + padding)",
                               f"バッチ 0、行 {NAMES[shortest]} のマスク\n（因果 + パディング）")
    mask = Panel((~blocked).float(), labels, labels, masked=blocked, fmt=".0f", title=mask_title)
    note = say(" (one dense mask per row; the batch size does not change packing)",
               "（行ごとに密なマスクが 1 つ。バッチサイズはパッキングを変えない）") if strategy == "pack" else ""
    summary = say(f"{distribution} lengths {list(lengths)}, batch size {batch_size}, {strategy}: "
                  f"{cost.computed_positionwise} token slots for {cost.useful_positionwise} tokens, "
                  f"wasted {cost.wasted_positionwise:.0%} of position-wise work and "
                  f"{cost.wasted_attention:.0%} of attention scores{note}",
                  f"{LABELS_JA[distribution]}分布の長さ {list(lengths)}、バッチサイズ {batch_size}、"
                  f"{LABELS_JA[strategy]}："
                  f"トークン {cost.useful_positionwise} 個に {cost.computed_positionwise} スロットを使い、"
                  f"位置ごとの計算の {cost.wasted_positionwise:.0%} とアテンションスコアの "
                  f"{cost.wasted_attention:.0%} が無駄になる{note}")
    caption = Bilingual("cells: the token's position inside its own sequence; hatched: padding or a blocked key",
                        "セル：自分の系列の中でのトークンの位置。斜線：パディングか遮断されたキー")
    return View((*layouts, mask), summary, caption)


def packing_explorer() -> Explorer:
    """Length distribution, batch size and strategy -> the rows, the first row's mask, and the wasted fraction."""
    controls = {
        "distribution": widgets.Dropdown(options=[(say(d, LABELS_JA[d]), d) for d in DISTRIBUTIONS],
                                         value="log-normal", description=say("lengths", "長さ")),
        "batch_size": widgets.ToggleButtons(options=BATCH_SIZES, value=4,
                                            description=say("batch size", "バッチサイズ")),
        "strategy": widgets.ToggleButtons(options=[(say(s, LABELS_JA[s]), s) for s in STRATEGIES], value="pad",
                                          description=say("strategy", "方式")),
    }
    return explorer(controls, packing_view, Bilingual(
        "Length distribution, batch size and strategy -> the rows, the first row's mask, and the wasted fraction.",
        '長さの分布、バッチサイズ、方式 → 行の並び、1 行のマスク、無駄になる割合'))


EXPLORERS = (packing_explorer,)


# --- the exercise checks (a wrong answer raises Mistake with a hint that never gives the answer) ---

@exercise
def check_1(answer: object, batch: Sequence[int]) -> None:
    """Exercise 1: the fraction of attention scores wasted when `batch` (real lengths) is padded to its longest."""
    batch = _check_lengths(batch, "batch")
    cost = padded_cost([batch])
    answer = as_number(answer, Mistake("give a number such as 0.5", "0.5 のような数で答えること"))
    if 1 < answer <= 100 and abs(answer / 100 - cost.wasted_attention) < 1e-3:
        raise Mistake("that is a percentage: give the fraction, between 0 and 1",
                      "それはパーセントである。0 から 1 の間の割合で答えること")
    if not 0 <= answer <= 1:
        raise Mistake(f"a fraction lies between 0 and 1, got {answer}",
                      f"割合は 0 から 1 の間にある。答えは {answer} になっている")
    if abs(answer - cost.wasted_attention) < 1e-3:
        return
    if abs(answer - (1 - cost.wasted_attention)) < 1e-3:
        raise Mistake("that is the useful share of the scores; the question asks for the wasted one",
                      "それは有用なスコアの割合である。問われているのは無駄になるスコアの割合である")
    if abs(answer - cost.wasted_positionwise) < 1e-3:
        raise Mistake("that counts pad positions (token rows, or pad keys of one query); a score belongs to a "
                      "(query, key) pair, and it is wasted when the query or the key is a pad",
                      "それはパッド位置（トークン行、または 1 つのクエリから見たパッドのキー）を数えている。"
                      "スコアは（クエリ, キー）の組ごとに 1 つあり、クエリかキーがパッドなら無駄になる")
    raise Mistake("count the (query, key) pairs the padded batch computes, and those between two real tokens "
                  "of the same sequence",
                  "パディングしたバッチが計算する（クエリ, キー）の組と、同じ系列の実トークン同士の組を数えること")


def _window_reference(width: int, n: int) -> torch.Tensor:
    """May attend (True), (n, n): causal, and fewer than `width` steps back."""
    return ~(causal_mask(n) | torch.ones(n, n, dtype=torch.bool).tril(-width))


def _required_arguments(function: Callable[..., object]) -> int | None:
    """How many positional arguments `function` requires, or None if Python cannot tell (a builtin, say)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    return sum(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)


@exercise
def check_2(answer: object, widths: Sequence[int] = (1, 2, 4), lengths: Sequence[int] = (5, 7)) -> None:
    """Exercise 2: `answer(w)` returns a mask_mod for a causal sliding window of width w (True = may attend)."""
    from torch.nn.attention.flex_attention import create_mask  # here: only this check needs flex_attention

    widths, lengths = _check_lengths(widths, "widths"), _check_lengths(lengths, "lengths")
    if not callable(answer):
        raise Mistake(f"answer_2 should be a function of the width w, got a {type(answer).__name__}",
                      f"answer_2 は幅 w の関数にすること。渡されたのは {type(answer).__name__} である")
    if _required_arguments(answer) == 4:   # (b, h, q_idx, kv_idx): answer(w) would raise a bare TypeError
        raise Mistake("answer_2 is a mask_mod itself; it should be the function of the width w that returns one: "
                      "def answer_2(w), with your mask_mod defined inside it and returned",
                      "answer_2 が mask_mod そのものになっている。answer_2 は幅 w を受け取って mask_mod を返す"
                      "関数にすること。書いた mask_mod を def answer_2(w) の中で定義し、それを返す")
    for w in widths:
        mod = call(answer, w, when=say(f"with w = {w},", f"w = {w} のとき、"))
        if not callable(mod):
            raise Mistake(f"answer_2({w}) should return a mask_mod function (b, h, q_idx, kv_idx) -> bool tensor, "
                          f"got {type(mod).__name__}",
                          f"answer_2({w}) は mask_mod、つまり (b, h, q_idx, kv_idx) を受け取って bool テンソルを返す"
                          f"関数を返すこと。返ったのは {type(mod).__name__} である")
        for n in lengths:
            try:
                got = create_mask(mod, None, None, n, n, device="cpu")[0, 0]
            except RuntimeError as error:
                first_line = str(error).splitlines()[0][:60]
                raise Mistake(f"create_mask failed ({first_line}...): q_idx and kv_idx are "
                              "tensors, so combine conditions with &, | and ~ (with parentheses), not `and`, "
                              "`or`, `not` or an `if`",
                              f"create_mask が失敗した（{first_line}...）。q_idx と kv_idx はテンソルなので、"
                              "条件は `and`、`or`、`not` や `if` ではなく、&、|、~（と括弧）で組み合わせること"
                              ) from None
            want = _window_reference(w, n)
            if got.dtype != torch.bool or got.shape != want.shape:
                raise Mistake(f"the mask_mod should return a bool tensor, got {got.dtype}",
                              f"mask_mod は bool テンソルを返すこと。返ったのは {got.dtype} である")
            if torch.equal(got, want):
                continue
            if torch.equal(got, ~want):
                raise Mistake("that is the opposite polarity: a mask_mod returns True where the query MAY attend",
                              "極性が逆である。mask_mod が True を返すのは、クエリが参照してよいところである")
            if got.triu(1).any():
                raise Mistake("some queries see later keys: the window must also be causal",
                              "後ろのキーを見ているクエリがある。ウィンドウは因果的でもなければならない")
            if w < n and torch.equal(got, _window_reference(w + 1, n)):
                raise Mistake(f"with width {w} the window is one key too wide: a query sees itself and the "
                              f"{w - 1} key(s) just before it",
                              f"幅 {w} では、ウィンドウがキー 1 つ分広すぎる。クエリが見るのは自分自身と、"
                              f"その直前の {w - 1} 個のキーである")
            if torch.equal(got, _window_reference(w - 1, n)):
                raise Mistake(f"with width {w} the window is one key too narrow: a query sees itself and the "
                              f"{w - 1} key(s) just before it",
                              f"幅 {w} では、ウィンドウがキー 1 つ分狭すぎる。クエリが見るのは自分自身と、"
                              f"その直前の {w - 1} 個のキーである")
            raise Mistake(f"width {w}, length {n}: the mask differs from a causal window of width {w}",
                          f"幅 {w}、長さ {n} のとき、マスクが幅 {w} の因果的なウィンドウと一致しない")


@exercise
def check_3(answer: object, doc_lengths: Sequence[int]) -> None:
    """Exercise 3: the position ids of documents of `doc_lengths` packed into one row, each as if alone."""
    doc_lengths = _check_lengths(doc_lengths, "doc_lengths")
    row = pack(doc_lengths)
    answer = list(as_ints(answer, Mistake("give a list of ints, one position per token",
                                          "トークンごとに 1 つの位置を、int のリストで答えること")))
    if len(answer) != len(row.position):
        raise Mistake(f"one position per token of the row: {len(row.position)} of them, got {len(answer)}",
                      f"行のトークンごとに位置が 1 つ、つまり {len(row.position)} 個要る。"
                      f"答えは {len(answer)} 個である")
    if answer == row.position.tolist():
        return
    if answer == list(range(len(answer))):
        raise Mistake("those positions run on across the whole row; what would each document see alone?",
                      "その位置は行全体の通し番号になっている。各文書を単独で処理したら、位置はどうなるか？")
    if answer == row.document.tolist():
        raise Mistake("those are document ids (which document each token is in), not positions",
                      "それは文書 ID（各トークンがどの文書に属するか）であり、位置ではない")
    if answer == (row.position + 1).tolist():
        raise Mistake("positions in this series start at 0, as torch.arange does",
                      "本シリーズの位置は、torch.arange と同じく 0 から始まる")
    start = 0
    for d, n in enumerate(doc_lengths):
        if answer[start:start + n] != row.position[start:start + n].tolist():
            raise Mistake(f"document {d} (slots {start} to {start + n - 1}) is not numbered as it would be alone",
                          f"文書 {d}（スロット {start}〜{start + n - 1}）の番号が、単独のときの番号になっていない")
        start += n

# The texts chapter 10's notebook draws on its figures (titles, axis labels, legends), English as its code writes
# them, and their Japanese: `title=ch10.label("...")` draws either (helpers.language.labeller).
FIGURES_JA = {
    "batch size N (log-normal, σ = 0.8)": "バッチサイズ N（対数正規、σ = 0.8）",
    "spread σ of the log-normal (N = 16)": "対数正規分布の広がり σ（N = 16）",
    "attention scores (N·L_max²)": "アテンションのスコア (N·L_max²)",
    "token rows (N·L_max)": "トークンの行 (N·L_max)",
    "% of the work that is padding": "計算のうちパディングの割合 (%)",
    "What padding wastes: 512 sequences, median length 48": "パディングの無駄：512 系列、長さの中央値 48",
    "median ms per call, log scale (lower is faster)": "1 回の呼び出しの時間の中央値 (ms)、対数目盛（小さいほど速い）",
    "one attention call, {N} sequences, L_max = {L_max} (CPU, 1 thread)":
        "アテンションの呼び出し 1 回、{N} 系列、L_max = {L_max}（CPU、1 スレッド）",
    "padded": "パディング",
    "per sequence": "系列ごと",
    "nested": "ネステッドテンソル",
    "packed": "パッキング",
    "document mask: same document AND causal": "文書マスク：同じ文書、かつ因果",
    "padding": "パディング",
    "causal": "因果",
    "padding + causal": "パディング + 因果",
    "sliding window 3": "スライディングウィンドウ 3",
    "document": "文書",
    "{name} (item 1)": "{name}（サンプル 1）",
    "1, blue: may attend\n0, grey hatched: blocked": "1（青）：参照してよい\n0（灰色の斜線）：遮断",
}
label = labeller(FIGURES_JA)
