"""Chapter 3: two attention layers on the running toy, an explorer (does junk in the pad rows reach a real token?)
and the exercise checks.

attention_layer, layer2_params and POLICIES (how a layer treats the pad query rows) are the model; the
explorer puts junk in the pad rows between the two layers and compares with the book's layers without junk.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import ipywidgets as widgets
import torch
import torch.nn.functional as F

from helpers import arguments, toy
from helpers.attention import attention_steps
from helpers.exercises import Mistake, as_tensor, exercise
from helpers.explorer import Explorer, Panel, View, explorer
from helpers.language import Bilingual, labeller, say

# --- two layers, and what a layer does with the pad query rows ---

POLICIES = {  # how a layer treats the pad query rows (the pad key columns are always masked) -> its label
    "leave": "leave them (the book)",
    "uniform": "mask them too: 1/5",
    "zero": "zero them after softmax",
    "-inf": "mask them with -inf: NaN",
}
POLICIES_JA = {  # the same labels in the Japanese edition
    "leave": "そのまま（書籍の方法）",
    "uniform": "パッド行もマスク：1/5",
    "zero": "ソフトマックスの後で 0 にする",
    "-inf": "-inf でマスク：NaN",
}
ROWS_JA = {  # what the Japanese summary says of the pad rows under each policy
    "leave": "パッド行はそのまま",
    "uniform": "パッド行もマスク",
    "zero": "パッド行はソフトマックスの後で 0",
    "-inf": "パッド行は -inf でマスク",
}


# step 3's two result lines: how far the real rows and the pad rows moved when the pads got junk
DIFF_LABELS = {"real": Bilingual("real rows, max abs diff: ", "実トークンの行の差の絶対値の最大："),
               "pad": Bilingual("pad rows,  max abs diff: ", "パッド行の差の絶対値の最大：")}


def diff_line(rows: str, value: float) -> str:
    """Step 3's line for `rows` ("real" or "pad"), in the current language: diff_line("real", 0.0) ==
    "real rows, max abs diff: 0.0" in English, "実トークンの行の差の絶対値の最大：0.0" in Japanese."""
    if rows not in DIFF_LABELS:
        raise ValueError(f"rows must be one of {list(DIFF_LABELS)}, got {rows!r}")
    return f"{DIFF_LABELS[rows].said()}{value}"


def layer2_params(seed: int = 3) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """W_q, W_k, W_v (4, 4) of chapter 3's second layer: seeded randn rounded to one decimal."""
    g = torch.Generator().manual_seed(seed)
    W_q, W_k, W_v = (torch.randn(toy.D_MODEL, toy.D_MODEL, generator=g).round(decimals=1) for _ in range(3))
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


# --- the explorer: does the pad row matter ---

JUNK = ("none", "random x1000", "zeros", "NaN")  # what replaces the pad rows between the layers
JUNK_JA = {"none": "なし", "random x1000": "乱数 ×1000", "zeros": "ゼロ", "NaN": "NaN"}  # their Japanese labels


@functools.cache  # the explorer recomputes only what a control changes
def _layer1(policy: str, n_pads: int) -> tuple[torch.Tensor, ...]:
    """pad, layer 1's output under `policy`, the book's layer-2 output without junk, and W2."""
    ids, x, *_ = toy.qkv(toy.tokens(n_pads))
    _, *W1 = toy.params()
    W2 = layer2_params()
    pad = ids == toy.PAD_ID
    h1, _ = attention_layer(x, W1, pad, policy)
    reference = attention_layer(attention_layer(x, W1, pad)[0], W2, pad)[0]   # the book, no junk
    return pad, h1, reference, W2


def pad_rows_view(policy: str = "leave", junk: str = "random x1000", n_pads: int = 2) -> View:
    """Two layers with a pad-row policy and junk in the pad rows between them, against the book without junk."""
    tokens = toy.tokens(n_pads)
    if n_pads == len(tokens):
        raise ValueError(say("every token is <pad>: there is no real token whose output could be checked. "
                             "Keep at least one word.",
                             "すべてのトークンが <pad> で、出力を確かめられる実トークンがない。"
                             "単語を少なくとも 1 つ残すこと。"))
    if junk not in JUNK:
        raise ValueError(f"junk must be one of {list(JUNK)}, got {junk!r}")
    pad, h1, reference, W2 = _layer1(policy, n_pads)
    if junk == "none":
        replacement = h1
    elif junk == "random x1000":
        replacement = torch.randn(h1.shape, generator=torch.Generator().manual_seed(0)) * 1000
    elif junk == "zeros":
        replacement = torch.zeros(h1.shape)
    else:
        replacement = torch.full(h1.shape, float("nan"))
    h1_junk = torch.where(pad.unsqueeze(-1), replacement, h1)
    h2_junk, w2_junk = attention_layer(h1_junk, W2, pad, policy)
    diff = (h2_junk - reference).abs()[0]

    hidden = pad[0].expand(len(tokens), len(tokens))                  # hatched = masked before softmax:
    if policy in ("uniform", "-inf"):                                  # the pad key columns, and under these
        hidden = hidden | pad[0].unsqueeze(1)                          # two policies the pad query rows too
    panels = (Panel(w2_junk[0], tokens, tokens, masked=hidden,
                    title=Bilingual("layer 2 weights" + ("" if junk == "none" else f", pad rows = {junk}"),
                                    "2 層目の重み" + ("" if junk == "none" else f"、パッド行 = {JUNK_JA[junk]}"))),
              Panel(diff, tokens, ["d0", "d1", "d2", "d3"], fmt=".2g",
                    title=Bilingual("|output - book's, no junk|", "|出力 - ゴミ値なしの書籍の出力|"),
                    xlabel=Bilingual("feature", "特徴量"), ylabel=""))

    real_diff = diff[~pad[0]].max().item()
    text = say(f"policy {policy}, junk {junk}, {n_pads} pad(s): real rows max |change| = {real_diff:g}",
               f"{ROWS_JA[policy]}、ゴミ値 {JUNK_JA[junk]}、パッド {n_pads} 個：実トークンの行の最大 |変化| = "
               f"{real_diff:g}")
    if n_pads:
        pad_diff = diff[pad[0]].max().item()
        text += say(f"; pad rows max |change| = {pad_diff:g}", f"、パッド行の最大 |変化| = {pad_diff:g}")
    if math.isnan(real_diff) and policy == "-inf" and junk == "none":
        text += say(". The -inf pad rows are NaN after layer 1, and in layer 2 a NaN value weighted 0 gives "
                    "0 x NaN = NaN",
                    "。-inf のパッド行は 1 層目の後で NaN になり、2 層目では重み 0 をかけた NaN のバリューが "
                    "0 × NaN = NaN になる")
    elif math.isnan(real_diff):
        text += say(". NaN reached the real rows: a pad value weighted 0 gives 0 x NaN = NaN",
                    "。NaN が実トークンの行に届いた：重み 0 をかけたパッドのバリューが 0 × NaN = NaN になる")
    zeroed = policy == "zero"
    caption = Bilingual("hatched: masked before softmax"
                        + ("    (the pad rows are zeroed after softmax, not masked)" if zeroed else ""),
                        "斜線：ソフトマックスの前にマスク"
                        + ("    （パッド行はマスクせず、ソフトマックスの後で 0 にする）" if zeroed else ""))
    return View(panels, text, caption=caption)


def pad_rows_explorer() -> Explorer:
    """Pad-row policy, junk in the pad rows and number of pads -> does anything reach the real tokens?"""
    controls = {
        "policy": widgets.Dropdown(options=[(say(label, POLICIES_JA[key]), key) for key, label in POLICIES.items()],
                                   value="leave", description=say("pad rows", "パッド行")),
        "junk": widgets.Dropdown(options=[(say(j, JUNK_JA[j]), j) for j in JUNK], value="random x1000",
                                 description=say("junk", "ゴミ値")),
        "n_pads": widgets.IntSlider(value=2, min=0, max=5, description=say("pads", "パッド")),
    }
    return explorer(controls, pad_rows_view, Bilingual(
        "Pad-row policy, junk in the pad rows and number of pads -> does anything reach the real tokens?",
        "パッド行の扱い、パッド行のゴミ値、パッドの数 → 実トークンに何かが届くか"))


EXPLORERS = (pad_rows_explorer,)


# --- the exercise checks ---


def _layer_output(answer: object, expected: torch.Tensor) -> torch.Tensor:
    """The learner's layer output, in the dtype of `expected`, or a Mistake that names what was stored instead."""
    shape = tuple(expected.shape)
    if isinstance(answer, tuple | list) and len(answer) == 2 and isinstance(answer[0], torch.Tensor):
        raise Mistake("attention_layer returns (output, weights): store the output only, e.g. answer, _ = ...",
                      "attention_layer は (output, weights) を返す。出力だけを格納すること（例：answer, _ = ...）")
    answer = as_tensor(answer, Mistake(f"store layer 2's output, shape {shape}",
                                       f"2 層目の出力（形状 {shape}）を格納すること"), expected.dtype)
    if tuple(answer.shape) != shape:
        raise Mistake(f"store layer 2's output, shape {shape}; got {tuple(answer.shape)}",
                      f"2 層目の出力（形状 {shape}）を格納すること。格納されていたのは {tuple(answer.shape)}")
    return answer


@exercise
def check_1(answer: object, h1: torch.Tensor, W2: Sequence[torch.Tensor], pad: torch.Tensor) -> None:
    """Exercise 1: layer 2's output for a copy of `h1` whose pad rows are zeros (the book's policy, key mask `pad`)."""
    h1 = arguments.floating(h1, "h1")
    pad = arguments.bool_mask(pad, "pad")
    rows = pad.unsqueeze(-1)
    zeroed = torch.where(rows, torch.zeros_like(h1), h1)
    expected = attention_layer(zeroed, W2, pad)[0]
    answer = _layer_output(answer, expected)

    def same(other: torch.Tensor) -> bool:
        return torch.allclose(answer, other, atol=1e-6, rtol=0)

    if same(expected):
        return
    if same(zeroed):
        raise Mistake("that is layer 2's input, h1 with zeroed pad rows: run the layer on it",
                      "それは 2 層目の入力（パッド行をゼロにした h1）である。それに層を適用すること")
    if same(attention_layer(h1, W2, pad)[0]):
        raise Mistake("that is layer 2 on the original h1: set the pad rows of the copy to zero first",
                      "それは元の h1 に 2 層目を適用したものである。先にコピーのパッド行をゼロにすること")
    if same(attention_layer(h1 * 0, W2, pad)[0]):
        raise Mistake("that zeroes every row of h1, the real ones too: zero only the pad rows (pad marks them)",
                      "それでは実トークンの行まで、h1 のすべての行がゼロになる。ゼロにするのはパッド行"
                      "（pad が示す行）だけにすること")
    if same(attention_layer(zeroed, toy.params()[1:], pad)[0]):
        raise Mistake("that used layer 1's weights W1: layer 2 has its own, W2",
                      "それは 1 層目の重み W1 を使っている。2 層目には 2 層目の重み W2 がある")
    if same(attention_layer(zeroed, W2, torch.zeros_like(pad))[0]):
        raise Mistake("the real rows changed: layer 2 must still get the key mask pad",
                      "実トークンの行が変わった。2 層目にもキーマスク pad を渡すこと")
    if same(attention_steps(zeroed @ W2[0], zeroed @ W2[1], zeroed @ W2[2], key_padding_mask=pad).output):
        raise Mistake("that is the attention output alone: attention_layer adds it to its input (the residual)",
                      "それはアテンションの出力だけである。attention_layer はそれを入力に足す（残差接続）")
    if not torch.allclose(answer[~pad], expected[~pad], atol=1e-6, rtol=0):
        raise Mistake("the real rows differ from the book's layer 2: run attention_layer(copy, W2, pad)",
                      "実トークンの行が書籍の 2 層目と異なる。attention_layer(copy, W2, pad) を実行すること")
    raise Mistake("the real rows are right, but the pad rows are not layer 2's output for zeroed pad rows",
                  "実トークンの行は正しいが、"
                  "パッド行が違う。パッド行をゼロにした入力に 2 層目を適用した出力になっていない")


@exercise
def check_2(answer: object) -> None:
    """Exercise 2: `answer` is masked_max(h, pad), max pooling over the real positions; tried on a seeded batch
    in which the pads are junk and one sentence has a single real token whose features are all negative."""
    if not callable(answer):
        raise Mistake("answer with a function: def masked_max(h, pad): ..., then masked_max = that function",
                      "関数で答えること。def masked_max(h, pad): ... と書いて、masked_max をその関数にする")
    g = torch.Generator().manual_seed(0)
    h = torch.randn(2, 5, 4, generator=g)
    h[1, 0] = -h[1, 0].abs() - 0.1                               # sentence 2's one real token: all features < 0
    h[0, 1, 0] = 100.0                                # above any junk: all positions' max != the pads' max
    pad = torch.tensor([[False, False, False, True, True], [False, True, True, True, True]])
    h = torch.where(pad.unsqueeze(-1), torch.randn(2, 5, 4, generator=g) * 10, h)   # junk at the pads
    expected = torch.stack([h[0, :3].max(0).values, h[1, 0]])
    try:
        got = answer(h.clone(), pad.clone())
    except RuntimeError as error:
        if "must match" in str(error) or "broadcast" in str(error):
            raise Mistake(f"shapes do not fit ({error}); pad is (N, S) and h is (N, S, E): give the mask a "
                          "feature dimension",
                          f"形状が合わない（{error}）。pad は (N, S)、h は (N, S, E) である。マスクに特徴量の"
                          "次元を加えること") from None
        raise
    if isinstance(got, tuple) and hasattr(got, "values"):
        raise Mistake(".max(dim) returns (values, indices): return the values",
                      ".max(dim) は (values, indices) を返す。values を返すこと")
    if not isinstance(got, torch.Tensor) or tuple(got.shape) != (2, 4):
        shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
        raise Mistake(f"the result should have shape (N, E) = (2, 4), one value per sentence and feature; got {shape}",
                      "結果の形状は、文と特徴量ごとに 1 つの値を持つ (N, E) = (2, 4) になるはずである。"
                      f"返ってきたのは {shape}")
    if torch.equal(got, expected):
        return
    if torch.equal(got, h.max(1).values):
        raise Mistake("that is the max over every position: the pads took part",
                      "それはすべての位置にわたる最大値である。パッドも加わっている")
    if torch.equal(got, h.masked_fill(~pad.unsqueeze(-1), float("-inf")).max(1).values):
        raise Mistake("that is the max over the pad positions: pad is True at the pads, not at the real tokens",
                      "それはパッド位置にわたる最大値である。pad が True なのはパッドで、実トークンではない")
    if torch.equal(got[0], expected[0]) and (got[1] == 0).any():
        raise Mistake("sentence 2's features are all negative, and a pad filled with 0 won the max: fill the pads "
                      "with a value that no real number can be below",
                      "2 つ目の文の特徴量はすべて負で、0 で埋めたパッドが最大値になった。どんな実数もそれより"
                      "小さくなれない値でパッドを埋めること")
    raise Mistake("not the largest value among each sentence's real tokens: check sentence 2, which has one real "
                  "token",
                  "各文の実トークンの中での最大値になっていない。実トークンが 1 つしかない 2 つ目の文を確かめること")


def _leaky_heads(x: torch.Tensor, x_junk: torch.Tensor, pad: torch.Tensor, params: Sequence[torch.Tensor],
                 heads: dict[str, Callable[..., torch.Tensor]]) -> set[str]:
    """The heads whose parameter gradients change when the pad embeddings are junk (x_junk instead of x)."""
    def grads(x_in: torch.Tensor, head: Callable[..., torch.Tensor]) -> list[torch.Tensor]:
        p = [w.detach().clone().requires_grad_() for w in params]
        h, _ = attention_layer(x_in, p[:3], pad)
        h, _ = attention_layer(h, p[3:6], pad)
        head(h, p[6]).backward()
        return [w.grad for w in p]

    return {name for name, head in heads.items()
            if any(not torch.equal(a, b) for a, b in zip(grads(x, head), grads(x_junk, head), strict=True))}


HEAD_HINTS = {  # letter -> the hint (English, Japanese) when the learner got that head wrong (left out or put in)
    "a": ("look again at (a): which token sits at the last position of 犬 猫 鳥 <pad> <pad>?",
          "(a) を見直すこと。犬 猫 鳥 <pad> <pad> の最後の位置にあるのはどのトークンか？"),
    "b": ("look again at (b): it reads 鳥, a real token; can anything from a pad reach a real row through the "
          "key mask (step 3)?",
          "(b) を見直すこと。これは実トークンの 鳥 を読む。キーマスクがあるのに、パッドから何かが実トークンの行に"
          "届くことはあるか（ステップ 3）？"),
    "c": ("look again at (c): it divides by the right count, but what does h.sum(1) add up?",
          "(c) を見直すこと。正しい個数で割っているが、h.sum(1) は何を足し合わせているか？"),
    "d": ("look again at (d): without ignore_index, what does the loss ask of the pad positions?",
          "(d) を見直すこと。ignore_index がないとき、損失はパッド位置に何を求めるか？"),
}


@exercise
def check_3(answer: object, x: torch.Tensor, x_junk: torch.Tensor, pad: torch.Tensor,
            params: Sequence[torch.Tensor], label: torch.Tensor, targets: torch.Tensor) -> None:
    """Exercise 3: the set of heads (a-d) whose parameter gradients change with junk at the pads.

    params: W_q, W_k, W_v of layer 1, then of layer 2, then the head's W_out (4, 3); label (N,) for the
    sentence heads; targets (N, S) for the token loss, with -100 at the pads."""
    pad = arguments.bool_mask(pad, "pad")
    real = ~pad
    pad_targets = targets.masked_fill(pad, toy.PAD_ID).flatten()          # (d): the pads' targets are pad_id
    heads = {"a": lambda h, W_out: F.cross_entropy(h[:, -1] @ W_out, label),
             "b": lambda h, W_out: F.cross_entropy(h[:, 2] @ W_out, label),
             "c": lambda h, W_out: F.cross_entropy((h.sum(1) / real.sum(1, keepdim=True)) @ W_out, label),
             "d": lambda h, W_out: F.cross_entropy((h @ W_out).flatten(0, 1), pad_targets)}
    leaky = _leaky_heads(x, x_junk, pad, params, heads)
    if isinstance(answer, str):
        answer = [c for c in answer.lower() if c.isalpha()]
    if isinstance(answer, dict) or not isinstance(answer, set | frozenset | list | tuple):
        raise Mistake('give a set of letters, e.g. {"a"} (or set() for none)',
                      '文字の集合で答えること（例：{"a"}。1 つもなければ set()）')
    letters = {str(a).strip().lower() for a in answer}
    unknown = letters - set(heads)
    if unknown:
        raise Mistake(f"the heads are a, b, c and d; got {sorted(unknown)}",
                      f"ヘッドは a、b、c、d の 4 つである。受け取った文字は {sorted(unknown)}")
    wrong = sorted(letters ^ leaky)
    if wrong:
        hint, hint_ja = HEAD_HINTS[wrong[0]]
        if len(wrong) > 1:
            hint += f" (and {len(wrong) - 1} more letter(s) to rethink)"
            hint_ja += f"（ほかにも見直すべき文字が {len(wrong) - 1} 個ある）"
        raise Mistake(hint, hint_ja)

# The texts chapter 03's notebook draws on its figures (titles, axis labels, legends), English as its code writes
# them, and their Japanese: `title=ch03.label("...")` draws either (helpers.language.labeller).
FIGURES_JA = {
    "layer 2 weights: pad keys get 0": "2 層目の重み：パッドのキーは 0",
    "layer 1 weights, {policy}": "1 層目の重み、{policy}",
    "leave": "パッド行はそのまま",
    "uniform": "パッド行もマスク",
    "zero": "パッド行を 0 に",
}
label = labeller(FIGURES_JA)
