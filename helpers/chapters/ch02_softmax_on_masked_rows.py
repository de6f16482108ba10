"""Chapter 2's code: its explorer (softmax on masked rows, for a fill value, a dtype and a choice for the pad rows)
and its exercise checks."""

from __future__ import annotations

import ipywidgets as widgets
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from helpers import arguments, toy
from helpers.attention import attention_steps
from helpers.exercises import Mistake, as_number, exercise
from helpers.explorer import Explorer, Panel, View, explorer
from helpers.language import Bilingual, labeller, say

FILLS = {"-1e9": -1e9, "-1e4": -1e4, "finfo.min": "min", "-inf": "-inf"}  # label -> attention_steps fill
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def softmax_view(n_pads: int = 2, fill: str = "-1e9", dtype: str = "float32", mask_pad_rows: bool = False) -> View:
    """Masked scores and softmax weights of the toy, for a fill value, a dtype and a pad-row choice."""
    tokens = toy.tokens(n_pads)
    if n_pads == len(tokens):
        raise ValueError(say("every token is <pad>: every row would be fully masked and no word is left. "
                             "Keep at least one word.",
                             "すべてのトークンが <pad> で、どの行も完全にマスクされ、単語が 1 つも残らない。"
                             "単語を少なくとも 1 つ残すこと。"))
    if fill not in FILLS or dtype not in DTYPES:
        raise ValueError(f"fill must be one of {list(FILLS)} and dtype one of {list(DTYPES)}, got {fill!r}, {dtype!r}")
    _, _, q, k, v = (t[0] for t in toy.qkv(tokens))
    q, k, v = (t.to(DTYPES[dtype]) for t in (q, k, v))
    pad = toy.is_pad(tokens)
    pad_rows = pad[:, None] if mask_pad_rows else None
    lowest = torch.finfo(DTYPES[dtype]).min
    if isinstance(FILLS[fill], float) and FILLS[fill] < lowest:   # -1e9 in float16: masked_fill raises there
        raise ValueError(say(f"fill {fill} does not fit in {dtype} (its most negative number, finfo.min, is "
                             f"{lowest:g}): choose fill finfo.min. In PyTorch, masked_fill({fill}) on a {dtype} "
                             "tensor raises an overflow error.",
                             f"埋め値 {fill} は {dtype} に収まらない（{dtype} で最も小さい数 finfo.min は "
                             f"{lowest:g}）。埋め値には finfo.min を選ぶこと。PyTorch では、{dtype} のテンソルに "
                             f"masked_fill({fill}) を適用するとオーバーフローのエラーになる。"))
    steps = attention_steps(q, k, v, key_padding_mask=pad, attn_mask=pad_rows, fill=FILLS[fill])
    hidden = pad[None, :] | (pad[:, None] if mask_pad_rows else False)
    nan_rows = bool(steps.weights.isnan().any())
    panels = (Panel(steps.masked_scores, tokens, tokens,
                    title=Bilingual(f"scores, {dtype}, fill {fill}", f"スコア、{dtype}、埋め値 {fill}"),
                    masked=hidden),
              Panel(steps.weights, tokens, tokens, ylabel="", alert=nan_rows, masked=hidden,
                    title=Bilingual("weights: NaN rows!", "重み：NaN の行がある！") if nan_rows
                    else Bilingual("weights = softmax(row)", "重み = 行ごとのソフトマックス")))

    real_rows = steps.weights[~pad]
    pad_rows_w = steps.weights[pad]
    if not n_pads:
        rows_text = say("no pad rows", "パッド行はない")
    elif pad_rows_w.isnan().all():
        rows_text = say("pad rows are NaN on purpose: a row of -inf gives -inf - (-inf) = NaN",
                        "パッド行はわざと NaN にしてある：-inf だけの行では -inf - (-inf) = NaN になる")
    elif (pad_rows_w == pad_rows_w[0, 0]).all():
        weight, n = pad_rows_w[0, 0].item(), len(tokens)
        rows_text = say(f"pad rows: every weight {weight:.4f} (1/{n}: a constant row is uniform)",
                        f"パッド行：どの重みも {weight:.4f}（1/{n}。定数の行は一様になる）")
    else:
        rows_text = say("pad rows: ordinary distributions over the real words",
                        "パッド行：単語に対する普通の確率分布")
    if n_pads:
        largest = real_rows[:, pad].max().item()
        keys_text = say(f"real rows give the pad keys weight {largest:g}",
                        f"実トークンの行がパッドのキーに置く重みは {largest:g}")
    else:
        keys_text = say("no pad keys", "パッドのキーはない")
    return View(panels, say(f"{dtype}, fill {fill}, {n_pads} pad(s), pad rows {'masked' if mask_pad_rows else 'kept'}: "
                            f"{keys_text}; {rows_text}",
                            f"{dtype}、埋め値 {fill}、パッド {n_pads} 個、パッド行は"
                            f"{'マスク済み' if mask_pad_rows else 'そのまま'}：{keys_text}。{rows_text}"))


def softmax_explorer() -> Explorer:
    """Pads, fill value, dtype and pad-row masking -> the masked scores and the weights, live."""
    label = {"style": {"description_width": "initial"}}          # each label as wide as its text, beside its control
    controls = {
        "n_pads": widgets.IntSlider(value=2, min=0, max=5, description=say("pads", "パッド"), **label,
                                    layout=widgets.Layout(width="18em")),
        "fill": widgets.Dropdown(options=list(FILLS), value="-1e9", description=say("fill", "埋め値"), **label,
                                 layout=widgets.Layout(width="11em")),
        "dtype": widgets.Dropdown(options=list(DTYPES), value="float32", description="dtype", **label,
                                  layout=widgets.Layout(width="11em")),
        "mask_pad_rows": widgets.Checkbox(value=False, description=say("mask pad rows too", "パッド行もマスクする"),
                                          indent=False, **label,
                                          layout=widgets.Layout(width="auto")),
    }
    for control in controls.values():                                 # the same gap between every two controls
        control.layout.margin = "2px 1.5em 2px 0"
    return explorer(controls, softmax_view, Bilingual(
        "Pads, fill value, dtype and pad-row masking -> the masked scores and the weights, live.",
        "パッド、埋め値、dtype、パッド行のマスク → マスクしたスコアと重み"))


EXPLORERS = (softmax_explorer,)


# --- the exercise checks ---

SOFTMAX_OPS = {"_softmax", "_log_softmax", "_safe_softmax", "_masked_softmax", "softmax", "log_softmax"}


class _NoSoftmax(TorchDispatchMode):
    """Refuse every softmax kernel, however it is reached (torch.softmax, F.softmax, Tensor.softmax, nn.Softmax,
    torch._softmax, torch.ops.aten._softmax, log_softmax, SDPA...): all of them end in one of SOFTMAX_OPS."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # torch's signature
        if func.overloadpacket.__name__ in SOFTMAX_OPS:
            name = func.overloadpacket.__name__
            raise Mistake("by hand, please: the task forbids torch.softmax and every other softmax "
                          f"(your function called {name})",
                          "計算は自分で書くこと。この問題では torch.softmax も、ほかのソフトマックスの関数も使えない"
                          f"（書いた関数が {name} を呼び出した）")
        return func(*args, **(kwargs or {}))


def _by_hand(fn: object, row: torch.Tensor) -> torch.Tensor:
    """fn(row), run with every softmax kernel switched off."""
    with _NoSoftmax():
        return fn(row)


@exercise
def check_1(answer: object, row: torch.Tensor) -> None:
    """Exercise 1: `answer` is a function softmax_by_hand(row) for a 1-D row; tried on `row`, on a row of large
    scores (exp(1000) overflows unless the row max is subtracted first) and on a row whose first cell is masked and
    whose max comes later (a shift by the first cell overflows there)."""
    row = arguments.floating(row, "row")
    if not callable(answer):
        raise Mistake("answer with a function: def softmax_by_hand(row): ..., then softmax_by_hand = that function",
                      "関数で答えること。def softmax_by_hand(row): ... と書いて、softmax_by_hand をその関数にする")
    rows = {ROW_NAMES[0]: row,                                   # (English name, Japanese name) -> the row
            ROW_NAMES[1]: torch.tensor([1000.0, 998.0, -1e9, 999.0, -1e9], dtype=row.dtype),
            ROW_NAMES[2]: torch.tensor([-1e9, 1.0, 3.0, -1e9, 2.0], dtype=row.dtype)}
    for (name, name_ja), r in rows.items():
        got = _by_hand(answer, r.clone())
        want = torch.softmax(r, -1)
        if not isinstance(got, torch.Tensor) or got.shape != r.shape:
            shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
            raise Mistake(f"return a tensor shaped like the row, {tuple(r.shape)}; got {shape}",
                          f"行と同じ形状 {tuple(r.shape)} のテンソルを返すこと。返ってきたのは {shape}")
        if got.dtype != r.dtype:
            raise Mistake(f"keep the row's dtype ({r.dtype}); got {got.dtype}",
                          f"行の dtype（{r.dtype}）を保つこと。返ってきた dtype は {got.dtype}")
        if got.isnan().all():
            raise Mistake(f"every weight is NaN on {name}: every exp there underflowed to 0, and 0 / 0 is NaN. "
                          "Your shift pushed even that row's largest score far below 0 (step 3)",
                          f"{name_ja}で、すべての重みが NaN になった。そこではどの exp も 0 にアンダーフローし、"
                          "0 / 0 は NaN である。シフトによって、その行の最大のスコアまで 0 よりはるかに下へ"
                          "押し下げている（ステップ 3）")
        if got.isnan().any():
            raise Mistake(f"NaN on {name}: after your shift some cell is still far above 0, its exp overflows to "
                          "inf, and inf / inf is NaN. Which number must the shift subtract (step 2)?",
                          f"{name_ja}で NaN になった。シフトの後も 0 よりはるかに大きいセルが残り、その exp が "
                          "inf にオーバーフローして、inf / inf が NaN になる。シフトではどの数を引くべきか"
                          "（ステップ 2）？")
        sigmoid_model = torch.sigmoid(r) / torch.sigmoid(r).sum()
        if torch.allclose(got, sigmoid_model, atol=1e-6, rtol=0) and not torch.allclose(got, want, atol=1e-6, rtol=0):
            raise Mistake("that is the author's sigmoid model (step 9), not softmax: use exp",
                          "それは著者のシグモイドのモデル（ステップ 9）で、ソフトマックスではない。exp を使うこと")
        if torch.allclose(got.exp(), want, atol=1e-6, rtol=0):
            raise Mistake("those are log-weights (a log-softmax): return the weights themselves",
                          "それは重みの対数（log-softmax）である。重みそのものを返すこと")
        if not torch.allclose(got.sum(), torch.ones((), dtype=r.dtype), atol=1e-5):
            raise Mistake("the weights do not sum to 1: divide each exp by the sum of the row's exps",
                          "重みの和が 1 にならない。各 exp を、その行の exp の和で割ること")
        if not torch.allclose(got, want, atol=1e-4, rtol=0):       # 1e-4: float32 rounding of other recipes
            raise Mistake("the weights sum to 1 but are not softmax's: subtract the same number, the row's max, "
                          "from every cell, then exp, then divide",
                          "重みの和は 1 だが、ソフトマックスの重みではない。すべてのセルから同じ数（行の最大値）を"
                          "引き、exp をとり、それから和で割ること")
        if not (got[r == -1e9] == 0).all():
            raise Mistake("the masked cells (-1e9) must get exactly 0.0: add nothing to the exps or their sum",
                          "マスクされたセル（-1e9）の重みはちょうど 0.0 にすること。exp にもその和にも何も足さないこと")


@exercise
def check_2(answer: object, tokens: list[str]) -> None:
    """Exercise 2: the weight of every cell of a pad row of `tokens`, pad rows masked too with -1e9."""
    ids, _, q, k, v = toy.qkv(tokens)
    pad = ids == toy.PAD_ID
    weights = attention_steps(q, k, v, key_padding_mask=pad, attn_mask=pad.unsqueeze(2)).weights[0]
    rows = weights[pad[0]]
    if not (rows == rows[0, 0]).all():
        raise AssertionError("chapter 2's check 2: the masked pad rows should be uniform")  # a bug here, not yours
    expected, n_real, n_pads = rows[0, 0].item(), int((~pad).sum()), int(pad.sum())
    answer = as_number(answer, Mistake("give one number, e.g. answer_2 = 0.7",
                                       "数を 1 つ答えること（例：answer_2 = 0.7）"))
    if answer != answer:
        raise Mistake("NaN comes from a row of -inf (step 10); this row is filled with -1e9, a finite number",
                      "NaN になるのは -inf だけの行である（ステップ 10）。この行は有限の数 -1e9 で埋めてある")
    if abs(answer - expected) < 1e-6:
        return
    if answer == 0:
        raise Mistake("a softmax row always sums to 1, so its cells cannot all be 0",
                      "ソフトマックスの行の和は常に 1 なので、セルがすべて 0 になることはない")
    if abs(answer - 1 / n_real) < 1e-6:
        raise Mistake("that shares the row among the real words only; but a masked pad row hides the words' "
                      "cells too: which cells does it have, and how do they differ?",
                      "それは行の重みを単語のセルだけで分け合った値である。しかしマスクしたパッド行では、単語の"
                      "セルも隠される。その行にはどんなセルがあり、それらは互いにどう違うか？")
    if abs(answer - 1 / n_pads) < 1e-6:
        raise Mistake("that shares the row among the pad keys only; the words' cells are filled with -1e9 too",
                      "それは行の重みをパッドのキーだけで分け合った値である。単語のセルも -1e9 で埋められている")
    raise Mistake("every cell of a masked pad row holds the same number: what does softmax make of a constant row "
                  "(step 8)?",
                  "マスクしたパッド行では、どのセルも同じ数である。定数の行のソフトマックスはどうなるか"
                  "（ステップ 8）？")


ROW_NAMES = (  # check 1's rows, as its hints name them: (English, Japanese)
    ("the exercise's row", "確認問題の行"),
    ("a row of large scores (about 1000)", "大きなスコア（1000 前後）の行"),
    ("a row whose first cell is masked (-1e9) and whose largest score comes later",
     "先頭のセルがマスクされ（-1e9）、最大のスコアがそれより後ろにある行"),
)

FLOAT16_ROWS = {  # real float16 scores (then two masked keys) on which a fixed fill fails, and the hint for each
    "about -20000": ([-20000.0, -20005.0, -20010.0],
                     ("in a row whose real scores are about -20000, the masked keys kept a weight: a fixed number "
                      "works only while every real score stays far above it",
                      "実トークンのスコアが -20000 前後の行で、マスクしたキーに重みが残った。固定の数が使えるのは、"
                      "実トークンのスコアがどれもその数よりはるかに大きいあいだだけである")),
    "about -60000": ([-60000.0, -60010.0, -60020.0],
                     ("in a row whose real scores are about -60000 (still float16 numbers), the masked keys kept a "
                      "weight: float16 holds scores that low, so the fill must sit far below them",
                      "実トークンのスコアが -60000 前後（これも float16 の数である）の行で、マスクしたキーに重みが"
                      "残った。float16 はそこまで低いスコアも表せるので、埋め値はそれよりはるかに下になければ"
                      "ならない")),
    "at -65472": ([-65472.0, -65472.0, -65472.0],
                  ("in a row whose real scores are -65472, the masked keys kept a weight: float16 can hold real "
                   "scores this low",
                   "実トークンのスコアが -65472 の行で、マスクしたキーに重みが残った。float16 はこれほど低い"
                   "実トークンのスコアも表せる")),
}


@exercise
def check_3(answer: object, row: torch.Tensor, key_is_pad: torch.Tensor) -> None:
    """Exercise 3: a float16 fill value that masked_fill accepts, that gives masked keys exactly 0 in every float16
    row whose real scores are not all at the bottom of float16's range (tried: `row` with the pad keys
    `key_is_pad`, and rows of very negative scores down to -65472, the float16 number just above finfo.min: only a
    fill that float16 stores as finfo.min passes there), and that keeps a fully masked row finite."""
    row = arguments.floating(row, "row")
    key_is_pad = arguments.bool_mask(key_is_pad, "key_is_pad")
    answer = as_number(answer, Mistake("give one number, the fill value itself",
                                       "数を 1 つ、埋め値そのものを答えること"))
    if answer != answer:
        raise Mistake("NaN is no fill: every row it touches becomes NaN",
                      "NaN は埋め値にならない。NaN が入った行はすべて NaN になる")
    try:
        filled = row.half().masked_fill(key_is_pad, answer)
    except RuntimeError:
        raise Mistake(f"masked_fill refuses {answer:g} in float16: that number lies outside float16's range "
                      "(step 11)",
                      f"float16 では masked_fill が {answer:g} を受け付けない。その数は float16 の範囲の外にある"
                      "（ステップ 11）") from None
    if answer >= 0:
        raise Mistake("a fill must be very negative, far below every real score",
                      "埋め値は大きな負の数にすること。どの実トークンのスコアよりも、はるかに小さくなければならない")
    full_row = torch.full((5,), answer, dtype=torch.float16)
    if torch.softmax(full_row, -1).isnan().any():
        raise Mistake("a fully masked row became NaN: -inf - (-inf) is NaN (step 10); pick a finite number",
                      "完全にマスクされた行が NaN になった。-inf - (-inf) は NaN である（ステップ 10）。"
                      "有限の数を選ぶこと")
    if not (torch.softmax(filled, -1)[key_is_pad] == 0).all():
        raise Mistake("in the exercise's row the masked keys kept a weight: the fill is not far enough below its "
                      "scores (step 3)",
                      "確認問題の行で、マスクしたキーに重みが残った。埋め値がその行のスコアより十分に小さくない"
                      "（ステップ 3）")
    for scores, (hint, hint_ja) in FLOAT16_ROWS.values():
        hard = torch.tensor([*scores, 0.0, 0.0], dtype=torch.float16)
        masked = torch.tensor([False, False, False, True, True])
        if not (torch.softmax(hard.masked_fill(masked, answer), -1)[masked] == 0).all():
            raise Mistake(hint, hint_ja)

# The texts chapter 02's notebook draws on its figures (titles, axis labels, legends), English as its code writes
# them, and their Japanese: `title=ch02.label("...")` draws either (helpers.language.labeller).
FIGURES_JA = {
    "weights = softmax(masked scores)": "重み = softmax(マスクしたスコア)",
}
label = labeller(FIGURES_JA)
