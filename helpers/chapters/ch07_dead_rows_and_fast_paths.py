"""Chapter 7's code: a spy that shows which fast path ran, the explorer (what each code path returns for rows
with no visible key and for pad rows), and the exercise checks.

The explorer's batch: item 0 = 犬 猫 鳥 + two pads, item 1 = five real tokens; one seeded nn.MultiheadAttention
(4 features, 2 heads, out_proj.bias non-zero) and one seeded 1-layer nn.TransformerEncoder. The manual paths
and SDPA use the MHA's own projections, so on rows that have a visible key they agree with the MHA. Every output
is computed once per combination and cached: an update is a lookup.
"""

from __future__ import annotations

import contextlib
import functools
import unicodedata
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from typing import NamedTuple

import ipywidgets as widgets
import torch
import torch.nn.functional as F
from torch import nn

from helpers import arguments
from helpers.exercises import Mistake, as_bool_tensor, call, exercise
from helpers.explorer import RED, Explorer, Panel, View, explorer
from helpers.language import Bilingual, labeller, listed, mark, say
from helpers.masks import causal_mask, key_padding_mask, left_pad
from helpers.toy import is_pad

# PyTorch's fast-path entry points (torch 2.13.0): MultiheadAttention.forward calls the first, a
# TransformerEncoderLayer the second, and nn.TransformerEncoder packs its input into a nested tensor with the third.
FAST_KERNELS = {
    "_native_multi_head_attention": "native MHA",
    "_transformer_encoder_layer_fwd": "fused encoder layer",
    "_nested_tensor_from_mask": "nested tensor",
}
KERNELS_JA = {"native MHA": "ネイティブ MHA", "fused encoder layer": "融合エンコーダ層",
              "nested tensor": "ネステッドテンソル"}


@contextlib.contextmanager
def fast_path_spy() -> Iterator[Counter[str]]:
    """Count the calls of PyTorch's fast-path entry points (FAST_KERNELS) inside the block.

    Each entry point is replaced by a wrapper that counts and then calls the original; the originals are put back
    on exit, also after an error. The Counter maps a short name ("native MHA", "nested tensor", ...) to its
    number of calls.
    """
    calls: Counter[str] = Counter()
    originals = {name: getattr(torch, name) for name in FAST_KERNELS}

    def counting(name: str) -> Callable[..., object]:
        def wrapper(*args: object, **kwargs: object) -> object:
            calls[FAST_KERNELS[name]] += 1
            return originals[name](*args, **kwargs)
        return wrapper

    try:
        for name in FAST_KERNELS:
            setattr(torch, name, counting(name))
        yield calls
    finally:
        for name, original in originals.items():
            setattr(torch, name, original)


def fast_paths_ran(calls: Counter[str]) -> str:
    """The spy's Counter in words: 'fast path: nested tensor + fused encoder layer', or 'no fast path' (in
    Japanese in the Japanese edition)."""
    return ran_words(*[name for name in FAST_KERNELS.values() if calls[name]])


def ran_words(*kernels: str) -> str:
    """The words for the fast-path entry points that ran (FAST_KERNELS' short names), in the current language:
    ran_words("native MHA") == "fast path: native MHA", ran_words() == "no fast path"."""
    unknown = [k for k in kernels if k not in KERNELS_JA]
    if unknown:
        raise ValueError(f"kernels must be among {list(KERNELS_JA)}, got {unknown}")
    ran = [name for name in FAST_KERNELS.values() if name in kernels]
    if "nested tensor" in ran:  # packing comes first, then each layer runs on the packed tensor
        ran.remove("nested tensor")
        ran.insert(0, "nested tensor")
    if not ran:
        return say("no fast path", "高速パスなし")
    return say("fast path: " + " + ".join(ran), "高速パス：" + " + ".join(KERNELS_JA[name] for name in ran))


# The words chapter 7's notebook prints for paths, settings and results, and their Japanese (label()).
LABELS_JA = {
    "NaN": "NaN",
    "fast path": "高速パス",
    "slow path": "低速パス",
    "function": "関数",
    "fast path, dead row ->": "高速パス、死んだ行 →",
    "slow path, dead row ->": "低速パス、死んだ行 →",
    "ordinary": "普通の値",
    "ordinary values": "普通の値",
    "zero, shows as out_proj.bias": "0（出力は out_proj.bias）",
    "zero before out_proj: the output is out_proj.bias": "out_proj の前で 0：出力は out_proj.bias",
    "item 0, left padding + causal: what each setting returns per query row":
        "サンプル 0、左パディング + 因果：各設定がクエリの行ごとに返すもの",
    "left padding + causal: 1 = blocked (hatched)": "左パディング + 因果：1 = 遮断（斜線）",
    # the explorer's settings (its drop-downs show these, and its summaries and titles name them)
    "manual: fill -inf, softmax": "手書き：-inf で埋めてソフトマックス",
    "manual: fill finfo.min, softmax": "手書き：finfo.min で埋めてソフトマックス",
    "MHA, need_weights=True": "MHA (need_weights=True)",
    "MHA, need_weights=False": "MHA (need_weights=False)",
    "training": "学習モード",
    "eval, grad on": "評価モード、勾配あり",
    "eval + no_grad": "評価モード + no_grad",
    "eval, frozen parameters, grad on": "評価モード、パラメータを凍結、勾配あり",
    "right": "右",
    "left": "左",
    # the rows of the notebook's table of code paths (step 3)
    "MHA, training": "MHA、学習モード",
    "MHA, eval, grad on": "MHA、評価モード、勾配あり",
    "MHA, eval + no_grad": "MHA、評価モード + no_grad",
    "MHA, eval, frozen params, grad on": "MHA、評価モード、パラメータを凍結、勾配あり",
    "MHA, eval + no_grad, float masks (-inf)": "MHA、評価モード + no_grad、float マスク (-inf)",
    "MHA, eval + no_grad, float masks (finfo.min)": "MHA、評価モード + no_grad、float マスク (finfo.min)",
    "MHA, same float masks, need_weights=True": "MHA、同じ float マスク、need_weights=True",
    "MHA, training, need_weights=True": "MHA、学習モード、need_weights=True",
    "MHA, eval + no_grad, need_weights=True": "MHA、評価モード + no_grad、need_weights=True",
    "F.scaled_dot_product_attention": "F.scaled_dot_product_attention",
    "manual masked_fill(-inf) + softmax": "手書きの masked_fill(-inf) + ソフトマックス",
    # the variants of step 4's table of dead rows and code paths
    "2 heads, x is x is x, bool masks": "2 ヘッド、x is x is x、bool マスク",
    "1 head": "1 ヘッド",
    "key = x.clone() (equal, not the same)": "key = x.clone()（値は等しいが別のテンソル）",
    "float attn_mask only": "float は attn_mask だけ",
    "float key_padding_mask only": "float は key_padding_mask だけ",
    "2 heads, under CPU autocast (bfloat16)": "2 ヘッド、CPU の autocast (bfloat16)",
    "frozen, but the input requires grad": "凍結、ただし入力が勾配を要求する",
    "fast path switched off (torch.backends.mha)": "高速パスを無効化 (torch.backends.mha)",
    # the encoder's cases (step 5) and what each returns
    "right padding, bool masks": "右パディング、bool マスク",
    "right padding, float key_padding_mask": "右パディング、float key_padding_mask",
    "right padding, norm_first=True": "右パディング、norm_first=True",
    "left padding + causal, bool masks": "左パディング + 因果、bool マスク",
    "left padding + causal, float masks": "左パディング + 因果、float マスク",
    "pads all zero:": "パッドがすべて 0：",
    "item 0 all NaN:": "サンプル 0 がすべて NaN：",
    # the encoder output's figure (step 5)
    "encoder output, item 0, feature 0": "エンコーダの出力、サンプル 0、特徴量 0",
    "position": "位置",
    "eval, frozen params": "評価モード、パラメータを凍結",
    "eval, nested off": "評価モード、ネステッドテンソルなし",
}


# label(text): a word label of a path, a setting or a result, in the current language: `text` itself in English,
# its Japanese (LABELS_JA) in the Japanese edition, where the code names in it stay as they are
# ("MHA, eval + no_grad" -> "MHA、評価モード + no_grad").
label = labeller(LABELS_JA)


def verdict(text: str, value: bool) -> str:
    """A result line's label (one of LABELS_JA, ending in a colon) and its yes/no, in the current language:
    verdict("pads all zero:", True) == "pads all zero: True" in English, "パッドがすべて 0：はい" in Japanese."""
    if text not in LABELS_JA or not text.endswith(":"):
        raise ValueError(f"text must be a label of LABELS_JA that ends in ':', got {text!r}")
    return say(f"{text} {bool(value)}", LABELS_JA[text] + ("はい" if value else "いいえ"))


def width(text: str) -> int:
    """How many columns `text` takes in a fixed-width font: 2 for a wide or full-width character (East Asian
    width W or F: kanji, kana, 、 and （）), 1 for any other. width("abc") == 3, width("低速パス") == 8."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def padded(text: str, columns: int) -> str:
    """`text` with spaces after it up to `columns` columns (width(): a Japanese character counts 2), so that
    the next column of a printed table lines up in both editions. Like f"{text:{columns}s}" for ASCII text;
    text that is already wider is returned as it is."""
    if not isinstance(columns, int) or isinstance(columns, bool) or columns < 0:
        raise ValueError(f"columns must be an int >= 0, got {columns!r}")
    return text + " " * max(0, columns - width(text))


def _path_label(path: str) -> str:
    """A code path's name as shown: the manual paths' words translated, the code names as they are."""
    return label(path) if path in LABELS_JA else path


FAST_PATHS = (
    "manual: fill -inf, softmax",
    "manual: fill finfo.min, softmax",
    "F.scaled_dot_product_attention",
    "MHA, need_weights=True",
    "MHA, need_weights=False",
    "nn.TransformerEncoder",
)
FAST_MODES = ("training", "eval, grad on", "eval + no_grad", "eval, frozen parameters, grad on")
MASK_DTYPES = ("bool", "float")
FAST_TOKENS = {"right": ["犬", "猫", "鳥", "<pad>", "<pad>"], "left": ["<pad>", "<pad>", "犬", "猫", "鳥"]}
E, HEADS = 4, 2


class Setup(NamedTuple):
    x: torch.Tensor                  # (2, 5, E): item 0 = 犬 猫 鳥 and two pad vectors (order per padding side)
    mha: nn.MultiheadAttention
    encoder: nn.TransformerEncoder


@functools.cache  # built once, on first use
def fast_setup() -> Setup:
    """The seeded batch and modules (dropout 0, so training mode is deterministic)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(7)
        words = torch.randn(3, E)                                       # 犬 猫 鳥
        pad, other = torch.randn(1, E), torch.randn(5, E)              # one pad vector; item 1
        mha = nn.MultiheadAttention(E, HEADS, batch_first=True, dropout=0.0)
        nn.init.normal_(mha.out_proj.bias)                              # zero before out_proj shows as the bias
        layer = nn.TransformerEncoderLayer(E, HEADS, dim_feedforward=8, dropout=0.0, batch_first=True)
        encoder = nn.TransformerEncoder(layer, num_layers=1)            # enable_nested_tensor=True (default)
    x = torch.stack([torch.cat([words, pad, pad]), other])
    return Setup(x, mha, encoder)


def fast_batch(padding: str) -> tuple[torch.Tensor, torch.Tensor]:
    """x (2, 5, E) and key_padding_mask (2, 5), True = pad, with item 0 padded on `padding`'s side."""
    if padding not in FAST_TOKENS:
        raise ValueError(f"padding must be one of {list(FAST_TOKENS)}, got {padding!r}")
    x = fast_setup().x
    kpm = torch.stack([is_pad(FAST_TOKENS[padding]), torch.zeros(5, dtype=torch.bool)])
    if padding == "left":
        x = left_pad(x, (~kpm).sum(-1))                                 # pads first: <pad> <pad> 犬 猫 鳥
    return x, kpm


def split_heads(mha: nn.MultiheadAttention, x: torch.Tensor) -> list[torch.Tensor]:
    """MHA's input projection split into heads: q, k, v of shape (N, H, L, E/H)."""
    N, L, _ = x.shape
    q, k, v = F.linear(x, mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1)
    return [t.view(N, L, HEADS, E // HEADS).transpose(1, 2) for t in (q, k, v)]


def merge_heads(mha: nn.MultiheadAttention, out: torch.Tensor) -> torch.Tensor:
    """(N, H, L, E/H) -> (N, L, E), then MHA's output projection."""
    N, _, L, _ = out.shape
    return mha.out_proj(out.transpose(1, 2).reshape(N, L, E))


def as_float_mask(blocked: torch.Tensor | None, fill: float = float("-inf")) -> torch.Tensor | None:
    """A bool mask (True = blocked) as the additive float mask PyTorch's modules accept: 0 visible, `fill` blocked."""
    return None if blocked is None else torch.zeros(blocked.shape).masked_fill(blocked, fill)


def _run(path: str, x: torch.Tensor, kpm: torch.Tensor, attn_mask: torch.Tensor | None, masks: str) -> torch.Tensor:
    mha, encoder = fast_setup().mha, fast_setup().encoder
    blocked = kpm[:, None, None, :] if attn_mask is None else kpm[:, None, None, :] | attn_mask   # (N, 1, L, S)
    if path.startswith("manual"):
        q, k, v = split_heads(mha, x)
        fill = float("-inf") if "-inf" in path else torch.finfo(x.dtype).min
        scores = q @ k.transpose(-2, -1) / (E // HEADS) ** 0.5
        # bool: the fill replaces the blocked scores; float: a mask of 0 / fill is added to them
        masked = scores.masked_fill(blocked, fill) if masks == "bool" else scores + as_float_mask(blocked, fill)
        return merge_heads(mha, masked.softmax(-1) @ v)
    if path == "F.scaled_dot_product_attention":
        sdpa_mask = ~blocked if masks == "bool" else as_float_mask(blocked)   # SDPA's bool: True = may attend
        return merge_heads(mha, F.scaled_dot_product_attention(*split_heads(mha, x), attn_mask=sdpa_mask))
    if masks == "float":
        kpm, attn_mask = as_float_mask(kpm), as_float_mask(attn_mask)
    if path.startswith("MHA"):
        need_weights = path.endswith("True")
        return mha(x, x, x, key_padding_mask=kpm, attn_mask=attn_mask, need_weights=need_weights)[0]
    if path == "nn.TransformerEncoder":
        with warnings.catch_warnings():  # the one-time "nested tensors are a prototype" note: chapter 7 shows it
            warnings.filterwarnings("ignore", message=".*nested tensors.*prototype")
            return encoder(x, mask=attn_mask, src_key_padding_mask=kpm)
    raise ValueError(f"path must be one of {list(FAST_PATHS)}, got {path!r}")


class FastRun(NamedTuple):
    out: torch.Tensor                # (2, 5, E)
    ran: str                         # fast_paths_ran() of the spy's counts, in the current language


def fast_run(path: str, padding: str, mode: str, causal: bool, masks: str = "bool") -> FastRun:
    """The (2, 5, E) output of `path` on the batch, run in `mode`, and which fast path ran (cached)."""
    out, kernels = _fast_run(path, padding, mode, causal, masks)
    return FastRun(out, ran_words(*kernels))


@functools.cache
def _fast_run(path: str, padding: str, mode: str, causal: bool, masks: str) -> tuple[torch.Tensor, tuple[str, ...]]:
    """fast_run's output, and the short names of the fast-path entry points that ran (computed once)."""
    if mode not in FAST_MODES:
        raise ValueError(f"mode must be one of {list(FAST_MODES)}, got {mode!r}")
    if masks not in MASK_DTYPES:
        raise ValueError(f"masks must be one of {list(MASK_DTYPES)}, got {masks!r}")
    x, kpm = fast_batch(padding)
    attn_mask = causal_mask(5) if causal else None
    modules = [fast_setup().mha, fast_setup().encoder]
    frozen = mode.startswith("eval, frozen")
    try:
        for module in modules:
            module.train(mode == "training")
            module.requires_grad_(not frozen)
        with torch.set_grad_enabled(mode != "eval + no_grad"), fast_path_spy() as calls:
            out = _run(path, x, kpm, attn_mask, masks).detach()
        return out, tuple(name for name in FAST_KERNELS.values() if calls[name])
    finally:
        for module in modules:
            module.eval().requires_grad_(True)


def fast_output(path: str, padding: str, mode: str, causal: bool, masks: str = "bool") -> torch.Tensor:
    """The (2, 5, E) output of `path` on the batch, run in `mode` (cached: computed once per combination)."""
    return fast_run(path, padding, mode, causal, masks).out


def _kind(row: torch.Tensor, bias: torch.Tensor) -> str:
    """One output row in words: NaN, exact zeros, zero before out_proj (shown as out_proj.bias), or ordinary."""
    if row.isnan().all():
        return "NaN"
    if (row == 0).all():
        return say("exact zeros", "ちょうど 0")
    if torch.allclose(row, bias, atol=1e-6, rtol=0):
        return label("zero, shows as out_proj.bias")
    return label("ordinary values")


def fast_paths_view(path: str = "MHA, need_weights=False", padding: str = "left", mode: str = "eval + no_grad",
                    causal: bool = True, masks: str = "bool") -> View:
    """Item 0's output rows on one code path: rows with no visible key (red) and pad rows (hatched)."""
    if path not in FAST_PATHS:
        raise ValueError(f"path must be one of {list(FAST_PATHS)}, got {path!r}")
    out, ran = fast_run(path, padding, mode, causal, masks)
    _, kpm = fast_batch(padding)
    tokens = FAST_TOKENS[padding]
    blocked = kpm[0] | causal_mask(5) if causal else kpm[0].expand(5, 5)
    dead = blocked.all(-1)                                               # (L,) rows with no visible key
    pads = kpm[0] & ~dead
    bias = fast_setup().mha.out_proj.bias.detach()
    found = []
    names = {"dead": say("rows with no visible key", "見えるキーのない行"), "pads": say("pad rows", "パッド行")}
    for name, rows in (("dead", dead), ("pads", pads)):
        if rows.any():
            kinds = sorted({_kind(out[0, i], bias) for i in rows.nonzero().flatten().tolist()})
            if name == "dead" and "finfo.min" in path:
                kinds = [say("finite: the plain average of all 5 values, pads included",
                             "有限：パッドを含む 5 つのバリューすべての単純平均")]
            found.append(f"{names[name]} {rows.nonzero().flatten().tolist()} {mark('arrow')} {' / '.join(kinds)}")
    if not dead.any():
        found.insert(0, say("no row without a visible key", "見えるキーのない行はない"))
    setting = say(f"{mode}, {masks} masks, {padding} padding{' + causal' if causal else ''}",
                  f"{label(mode)}、{masks} マスク、{label(padding)}パディング{' + 因果' if causal else ''}")
    no_key = say("  (no key)", "（キーなし）")
    rows = [f"{t}{no_key if d else ''}" for t, d in zip(tokens, dead.tolist(), strict=True)]
    panel = Panel(out[0], rows, [f"{say('out', '出力')} {j}" for j in range(E)], masked=kpm[0][:, None].expand(5, E),
                  framed=dead[:, None].expand(5, E), frame_color=RED, red_rows=tuple(dead.nonzero().flatten().tolist()),
                  xlabel=say("output feature", "出力の特徴量"), ylabel=say("position", "位置"),
                  alert=bool(out[0, dead].isnan().any()), title=f"{_path_label(path)}\n{setting}\n{ran}")
    findings = listed(found, by="sentence")
    summary = say(f"{path}, {setting}: {findings} ({ran})", f"{_path_label(path)}、{setting}：{findings}（{ran}）")
    return View((panel,), summary,
                caption=say("hatched: pad positions (masked as keys; never read their outputs)    red frame: no "
                            "visible key\ncolour: light to dark blue from the smallest to the largest finite value "
                            "outside the hatched rows; grey: hatched or NaN",
                            "斜線：パッド位置（キーとしてマスクされる。その出力は読まないこと）"
                            "    赤枠：見えるキーがない\n"
                            "色：斜線の行以外の有限の値のうち、最小が薄い青、最大が濃い青。灰色：斜線または NaN\n"
                            + TITLE_LEGEND_JA))


# The Japanese caption's last line reads the panel's title. It also holds every Japanese character a title or
# a row label can show, so that every view needs the same glyphs: the static explorer then ships one font for
# all of them instead of one per view (tests/chapters/test_ch07_dead_rows_and_fast_paths.py checks it).
TITLE_LEGEND_JA = ("見出し：コードパス（手書きは埋め値で埋めてからソフトマックス）\n"
                   "学習モードか評価モード（勾配あり、パラメータを凍結）、マスク、左か右のパディング + 因果\n"
                   "スパイが見た高速パス（ネイティブ MHA、融合エンコーダ層、"
                   "ネステッドテンソル）")


def fast_paths_explorer() -> Explorer:
    """Code path x padding side x mode x mask dtype x causal mask -> item 0's output rows, marked."""
    width = {"description_width": say("4em", "6em")}
    layout = {"width": say("26em", "30em")}
    controls = {  # each option shown by its label (Japanese in the Japanese edition), its value the English name
        "path": widgets.Dropdown(options=[(_path_label(p), p) for p in FAST_PATHS], value="MHA, need_weights=False",
                                 description=say("path", "コードパス"), layout=layout, style=width),
        "padding": widgets.ToggleButtons(options=[(label(p), p) for p in FAST_TOKENS], value="left",
                                         description=say("padding", "パディング")),
        "mode": widgets.Dropdown(options=[(label(m), m) for m in FAST_MODES], value="eval + no_grad",
                                 description=say("mode", "モード"), layout=layout, style=width),
        "causal": widgets.Checkbox(value=True, description=say("causal mask", "因果マスク")),
        "masks": widgets.ToggleButtons(options=MASK_DTYPES, value="bool", description=say("masks", "マスク")),
    }
    return explorer(controls, fast_paths_view, Bilingual(
        "Code path x padding side x mode x mask dtype x causal mask -> item 0's output rows, marked.",
        'コードパス × パディングの側 × モード × マスクの dtype × 因果マスク → サンプル 0 の出力の行（印付き）'))


EXPLORERS = (fast_paths_explorer,)


# ---- exercise checks -------------------------------------------------------------------------------------------

def _lengths(lengths: object) -> list[int]:
    if not isinstance(lengths, list | tuple) or not lengths:
        raise TypeError(f"lengths must be a non-empty list of ints, got {type(lengths).__name__} {lengths!r}")
    return [arguments.integer(n, "lengths", minimum=1) for n in lengths]


def _dead_rows_cases(lengths: list[int]) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """The masks check 1 tries (MHA polarity, True = blocked): (key_padding_mask (N, S), attn_mask (S, S))."""
    S = max(lengths)
    right = key_padding_mask(lengths, S)
    left = key_padding_mask(lengths, S, side="left")                 # the same items with their pads first
    nothing = torch.zeros(S, S, dtype=torch.bool)
    return {"left padding + causal": (left, causal_mask(S)), "right padding + causal": (right, causal_mask(S)),
            "left padding, no causal mask": (left, nothing)}


CASES_JA = {"left padding + causal": "左パディング + 因果", "right padding + causal": "右パディング + 因果",
            "left padding, no causal mask": "左パディングで因果マスクなし"}


@exercise
def check_1(answer: object, lengths: list[int]) -> None:
    """Exercise 1: a function dead_rows(key_padding_mask, attn_mask) -> (N, L) bool, True = no visible key."""
    lengths = _lengths(lengths)
    if not callable(answer):
        raise Mistake("answer_1 should be a function: dead_rows(key_padding_mask, attn_mask)",
                      "answer_1 は関数 dead_rows(key_padding_mask, attn_mask) にすること")
    for case, (kpm, attn_mask) in _dead_rows_cases(lengths).items():
        expected = (kpm[:, None, :] | attn_mask).all(-1)
        ja = CASES_JA[case]
        got = call(answer, kpm.clone(), attn_mask.clone(), when=say(f"with {case},", f"{ja}のとき、"))
        if not isinstance(got, torch.Tensor) or got.dtype != torch.bool:
            raise Mistake("return a bool tensor, True = this query row has no visible key",
                          "bool テンソルを返すこと。True = このクエリの行には見えるキーがない")
        if got.shape != expected.shape:
            raise Mistake(f"return one value per item and query row, shape (N, L) = {tuple(expected.shape)}; "
                          f"got {tuple(got.shape)}",
                          f"サンプルとクエリの行ごとに 1 つの値、形状 (N, L) = {tuple(expected.shape)} を返すこと。"
                          f"返ってきた形状は {tuple(got.shape)}")
        if torch.equal(got, expected):
            continue
        if torch.equal(got, kpm):
            raise Mistake(f"with {case} you marked the pad positions, but a pad query is dead only if it cannot "
                          "see any key at all: what may it see there?",
                          f"{ja}のとき、パッド位置に印を付けているが、パッドのクエリが死んだ行になるのは"
                          "どのキーもまったく見えないときだけである。そこでは何が見えるか？")
        if not got.any():  # & for |, the attention mask alone, or "all-pad items only" (lengths >= 1: there are none)
            raise Mistake(f"with {case} you marked no row, yet some rows have no visible key: a key is hidden when "
                          "EITHER mask blocks it (combine the two with |), and a row is dead when every key is hidden",
                          f"{ja}のとき、どの行にも印が付いていないが、見えるキーのない行がある。キーはどちらか"
                          "一方のマスクが遮断すれば隠れる（2 つのマスクは | で合わせる）。すべてのキーが隠れた行が"
                          "死んだ行である")
        if torch.equal(got, (kpm[:, None, :] | attn_mask).any(-1)):
            raise Mistake(f"with {case}: a row is dead when ALL its keys are blocked, not when some are",
                          f"{ja}のとき、死んだ行とは、一部ではなく「すべて」のキーが遮断された行である")
        if torch.equal(got, ~expected):
            raise Mistake(f"with {case}: the polarity is reversed; True must mark the rows with no visible key",
                          f"{ja}のとき、極性が逆である。True で印を付けるのは見えるキーのない行である")
        raise Mistake(f"with {case} some rows are wrong: for each query, which keys do the two masks leave visible?",
                      f"{ja}のとき、いくつかの行が違う。各クエリについて、2 つのマスクはどのキーを見えるまま残すか？")


_CHECK_2_BLOCKED = torch.tensor([[False, True, True], [True, True, True], [False, True, True]])  # row 1: dead
_CHECK_2_SCORES = [[1.0, 2.0, 3.0], [-30.0, -20.0, -50.0], [0.0, 5.0, 5.0]]     # row 2: a very negative real score
# row 2's real score, per dtype: far below any fixed fill float16 could hold (float32, bfloat16), and below half
# of float16's finfo.min (float16); finfo(dtype).min still lies far below each
CHECK_2_LOW = {torch.float32: -1e6, torch.float16: -50000.0, torch.bfloat16: -1e6}


def _check_2_scores(dtype: torch.dtype) -> torch.Tensor:
    scores = torch.tensor(_CHECK_2_SCORES, dtype=dtype)
    scores[2, 0] = CHECK_2_LOW[dtype]
    return scores


def _one_fill(masked: torch.Tensor, blocked: torch.Tensor) -> float | None:
    """The single number in every blocked cell, or None if the blocked cells differ."""
    values = masked[blocked].float().unique()
    return values.item() if values.numel() == 1 else None


def _fixed(fills: dict[torch.dtype, float | None]) -> bool:
    """True if every dtype's fill is one number (float32's fill), rounded to that dtype."""
    c = fills[torch.float32]
    return c is not None and all(f == torch.tensor(c).to(dtype).item() for dtype, f in fills.items())


@exercise
def check_2(answer: object) -> None:
    """Exercise 2: apply_mask(scores, blocked) -> masked scores, for float32, float16 and bfloat16."""
    if not callable(answer):
        raise Mistake("answer_2 should be a function: apply_mask(scores, blocked)",
                      "answer_2 は関数 apply_mask(scores, blocked) にすること")
    blocked = _CHECK_2_BLOCKED
    live = ~blocked.all(-1)
    dtypes = (torch.float32, torch.float16, torch.bfloat16)
    results = {}
    for dtype in dtypes:
        scores = _check_2_scores(dtype)
        masked = call(answer, scores.clone(), blocked.clone(), when=say(f"in {dtype}", f"{dtype} のとき、"))
        if not isinstance(masked, torch.Tensor) or masked.shape != scores.shape:
            raise Mistake(f"return the masked scores, a tensor of the scores' shape {tuple(scores.shape)}",
                          f"マスクしたスコアを、スコアと同じ形状 {tuple(scores.shape)} のテンソルで返すこと")
        if masked.dtype != dtype:
            raise Mistake(f"keep the scores' dtype: scores in {dtype} came back as {masked.dtype}",
                          f"スコアの dtype を保つこと。{dtype} のスコアが {masked.dtype} になって返ってきた")
        results[dtype] = scores, masked
    fills = {dtype: _one_fill(masked, blocked) for dtype, (_, masked) in results.items()}
    for dtype, (scores, masked) in results.items():
        weights = masked.softmax(-1)
        if not weights[~live].isfinite().all():
            if dtype == torch.float32:
                raise Mistake("in torch.float32 the row with no visible key became NaN: which fill gives 0/0?",
                              "torch.float32 で、見えるキーのない行が NaN になった。0/0 になるのはどの埋め値か？")
            raise Mistake(f"in {dtype} the row with no visible key became NaN: a finite number became -inf "
                          "somewhere (what happens to a number near the edge of the range when you add to it?)",
                          f"{dtype} で、見えるキーのない行が NaN になった。どこかで有限の数が -inf になっている"
                          "（表せる範囲の端に近い数に何かを足すとどうなるか？）")
        if not torch.equal(masked[~blocked], scores[~blocked]):
            raise Mistake(f"in {dtype} the visible scores changed: only the blocked cells may change",
                          f"{dtype} で、見えるスコアが変わった。変えてよいのは遮断するセルだけである")
        if (weights[live][blocked[live]] == 0).all():
            continue
        low, fill = f"{CHECK_2_LOW[dtype]:,.0f}", fills[dtype]
        where = f"in {dtype} a blocked key got weight above 0 in row 2, next to a real score of {low}"
        where_ja = f"{dtype} で、実トークンのスコア {low} がある行 2 において、遮断したキーに 0 より大きい重みが付いた"
        if fill is not None and dtype != torch.float16 and fill == torch.finfo(torch.float16).min:
            raise Mistake(f"{where}: your fill is float16's lowest number, used in every dtype; {dtype} reaches "
                          "much further down, and its real scores can lie below that fill",
                          f"{where_ja}。埋め値が float16 の最小の数で、それをどの dtype でも使っている。{dtype} は"
                          "それよりずっと下まで表せるので、実トークンのスコアがその埋め値より下になりうる")
        if fill is not None and fill == torch.finfo(dtype).min / 2:
            raise Mistake(f"{where}: half of the dtype's lowest number is not far enough down; real scores can "
                          "lie below it",
                          f"{where_ja}。dtype の最小の数の半分では十分に下ではない。実トークンのスコアがそれより"
                          "下になりうる")
        if fill is not None and _fixed(fills):
            raise Mistake(f"{where}: your fill is the same fixed number in every dtype, and a fixed number works "
                          "only while every real score stays far above it",
                          f"{where_ja}。埋め値がどの dtype でも同じ固定の数になっている。固定の数が使えるのは、"
                          "実トークンのスコアがどれもそれより十分に上にある間だけである")
        raise Mistake(f"{where}: the fill must lie below every real score the dtype can hold, in every dtype",
                      f"{where_ja}。どの dtype でも、埋め値はその dtype が表せるどの実トークンのスコアよりも"
                      "下になければならない")


@exercise
def check_3(answer: object, L: int, S: int) -> None:
    """Exercise 3: SDPA's bool attn_mask (L, S), True = may attend, for L new queries at the last L of S positions."""
    L, S = arguments.integer(L, "L", minimum=1), arguments.integer(S, "S", minimum=1)
    if L > S:
        raise ValueError(f"L must be at most S, got L={L}, S={S}")
    expected = torch.ones(L, S, dtype=torch.bool).tril(diagonal=S - L)
    answer = as_bool_tensor(answer, Mistake("SDPA takes a bool mask here: a bool tensor, True = may attend",
                                            "ここで SDPA に渡すのは bool マスクである（bool テンソルで、"
                                            "True = 参照してよい）"))
    if answer.shape != expected.shape:
        raise Mistake(f"the shape should be (L, S) = {(L, S)}, one row per new query; got {tuple(answer.shape)}",
                      f"形状は (L, S) = {(L, S)} で、新しいクエリごとに 1 行になるはずである。"
                      f"書いた答えの形状は {tuple(answer.shape)} になっている")
    if torch.equal(answer, expected):
        return
    if torch.equal(answer, ~expected):
        raise Mistake("that is MHA's polarity (True = blocked); for SDPA, True means may attend",
                      "これは MHA の極性（True = 遮断）である。SDPA では True は参照してよいことを表す")
    if torch.equal(answer, torch.ones(L, S, dtype=torch.bool).tril()):
        raise Mistake("that is the top-left triangle is_causal=True builds: which positions do the new tokens hold?",
                      "これは is_causal=True が作る左上の三角形である。新しいトークンはどの位置にあるか？")
    if not answer[torch.arange(L), torch.arange(S - L, S)].all():
        raise Mistake("a new token must also see itself: look at the cell of its own position",
                      "新しいトークンは自分自身も見えなければならない。自分の位置のセルを確かめること")
    if answer[~expected].any():
        raise Mistake("a new token sees a key after its own position: that is the future",
                      "新しいトークンが自分の位置より後ろのキーを見ている。それは未来である")
    raise Mistake("some keys at or before a new token's position are blocked: it may see all of them",
                  "新しいトークンの位置か、それより前にあるキーの一部が遮断されている。それらはすべて参照してよい")
