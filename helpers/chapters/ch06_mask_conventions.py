"""Chapter 6's code: its explorer (one mask written in each convention, passed to each API, converted or not)
and its exercise checks."""

from __future__ import annotations

import functools

import ipywidgets as widgets
import torch

from helpers import arguments
from helpers.checks import AttnCallError, check_no_future_leak, check_padding_invariance
from helpers.exercises import Mistake, as_bool_tensor, exercise
from helpers.explorer import RED, Explorer, Panel, View, explorer
from helpers.language import Bilingual, listed, say
from helpers.masks import causal_mask, from_hf_attention_mask, hf_attention_mask, to_additive_mask, to_sdpa_mask
from helpers.toy import is_pad

TOKENS = {"none": ["犬", "猫", "鳥", "魚", "馬"], "right": ["犬", "猫", "鳥", "<pad>", "<pad>"],
          "left": ["<pad>", "<pad>", "犬", "猫", "鳥"]}
CONVENTIONS = ("MHA bool (True = blocked)", "SDPA bool (True = may attend)", "HF 0/1 (1 = keep)",
               "HF 0/1 cast to float", "additive float (0 / -inf)")
APIS = ("nn.MultiheadAttention", "F.scaled_dot_product_attention", "masked_fill(mask, -inf) + softmax")
SHORT = {  # the names in a panel's title
    "MHA bool (True = blocked)": "MHA bool", "SDPA bool (True = may attend)": "SDPA bool",
    "HF 0/1 (1 = keep)": "HF 0/1", "HF 0/1 cast to float": "HF 0/1 cast to float",
    "additive float (0 / -inf)": "additive float", "nn.MultiheadAttention": "MultiheadAttention",
    "F.scaled_dot_product_attention": "scaled_dot_product_attention",
    "masked_fill(mask, -inf) + softmax": "masked_fill",
}
LABELS_JA = {  # each option's label in the Japanese edition (an API's name stays as it is)
    "MHA bool (True = blocked)": "MHA の bool（True = 遮断）", "SDPA bool (True = may attend)":
    "SDPA の bool（True = 参照してよい）", "HF 0/1 (1 = keep)": "HF の 0/1（1 = 残す）",
    "HF 0/1 cast to float": "HF の 0/1 を float にキャスト", "additive float (0 / -inf)": "加算する float（0 / -inf）",
    "masked_fill(mask, -inf) + softmax": "masked_fill(mask, -inf) + ソフトマックス",
    "none": "なし", "right": "右", "left": "左",
}
SHORT_JA = {"HF 0/1 cast to float": "HF の 0/1 を float にキャスト", "additive float (0 / -inf)": "加算する float"}


def _label(value: str) -> str:
    """An option's label in the current language."""
    return say(value, LABELS_JA.get(value, value))


def _short(value: str) -> str:
    """The name of an option in the Japanese panel title."""
    return SHORT_JA.get(value, SHORT[value])


def intended(padding: str) -> torch.Tensor:
    """The constraint every convention expresses: (5, 5) bool, True = blocked (causal, plus the pad keys)."""
    if padding not in TOKENS:
        raise ValueError(f"padding must be one of {list(TOKENS)}, got {padding!r}")
    pad = is_pad(TOKENS[padding])
    return causal_mask(5) | pad                     # (L, S): pad keys blocked in every row


def express(blocked: torch.Tensor, convention: str) -> torch.Tensor:
    """The same constraint written in one convention."""
    if convention == "MHA bool (True = blocked)":
        return blocked
    if convention == "SDPA bool (True = may attend)":
        return to_sdpa_mask(blocked)
    if convention == "HF 0/1 (1 = keep)":
        return (~blocked).long()
    if convention == "HF 0/1 cast to float":
        return (~blocked).float()
    if convention == "additive float (0 / -inf)":
        return to_additive_mask(blocked, fill="-inf")
    raise ValueError(f"convention must be one of {list(CONVENTIONS)}, got {convention!r}")


def convert_mask(mask: torch.Tensor, convention: str, api: str) -> torch.Tensor:
    """The fix: read `mask` in its own convention (True = blocked), then write it in the API's."""
    if convention == "HF 0/1 cast to float":
        raise ValueError(say("a float 0/1 mask is ambiguous (additive? keep-flags?): "
                             "from_hf_attention_mask refuses it; keep HF masks as integers",
                             "float の 0/1 マスクは曖昧である（加算型か、残すかどうかのフラグか？）。"
                             "from_hf_attention_mask はこれを拒否する。HF のマスクは整数のまま扱うこと"))
    if convention == "MHA bool (True = blocked)":
        blocked = mask
    elif convention == "SDPA bool (True = may attend)":
        blocked = to_sdpa_mask(mask)
    elif convention == "HF 0/1 (1 = keep)":
        blocked = from_hf_attention_mask(mask)
    elif convention == "additive float (0 / -inf)":
        blocked = mask != 0
    else:
        raise ValueError(f"convention must be one of {list(CONVENTIONS)}, got {convention!r}")
    return to_sdpa_mask(blocked) if api == "F.scaled_dot_product_attention" else blocked


@functools.cache  # built once, on first use
def _setup() -> tuple[torch.Tensor, torch.nn.MultiheadAttention]:
    """Five fixed 4-d token vectors and a 1-head MHA whose projections are the identity (scores = x x^T / 2)."""
    x = torch.randn(5, 4, generator=torch.Generator().manual_seed(6))
    mha = torch.nn.MultiheadAttention(4, 1, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.eye(4).repeat(3, 1))
        mha.in_proj_bias.zero_()
        mha.out_proj.weight.copy_(torch.eye(4))
        mha.out_proj.bias.zero_()
    return x, mha.eval()


def api_weights(mask: torch.Tensor, api: str) -> torch.Tensor:
    """The (5, 5) weights `api` computes when given `mask`; ValueError (with torch's words) if it refuses it."""
    x, mha = _setup()
    F = torch.nn.functional
    try:
        with torch.no_grad():
            if api == "nn.MultiheadAttention":
                return mha(x[None], x[None], x[None], attn_mask=mask, need_weights=True)[1][0]
            if api == "F.scaled_dot_product_attention":  # values = identity rows, so the output IS the weights
                return F.scaled_dot_product_attention(x[None], x[None], torch.eye(5)[None], attn_mask=mask)[0]
            if api == "masked_fill(mask, -inf) + softmax":
                return (x @ x.T / 2).masked_fill(mask, float("-inf")).softmax(-1)
    except (RuntimeError, AssertionError) as error:
        dtype = str(mask.dtype).removeprefix("torch.")
        raise ValueError(say(f"{api} rejects a {dtype} mask: {error}",
                             f"{api} は {dtype} のマスクを受け付けない：{error}")) from None
    raise ValueError(f"api must be one of {list(APIS)}, got {api!r}")


def mask_convention_view(convention: str = "MHA bool (True = blocked)", api: str = "F.scaled_dot_product_attention",
                         convert: bool = False, padding: str = "right") -> View:
    """Causal + padding constraint, written in `convention`, passed to `api` (converted first if `convert`).

    Hatched cells should be blocked; a red frame marks weight on such a cell (a leak).
    """
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {list(CONVENTIONS)}, got {convention!r}")
    blocked = intended(padding)
    mask = express(blocked, convention)
    weights = api_weights(convert_mask(mask, convention, api) if convert else mask, api)

    used = weights.nan_to_num(0.0) > 1e-6
    future = causal_mask(5)
    pad_keys = blocked & ~future
    dead = blocked.all(-1)
    problems, details = [], []  # what is wrong (the panel's title), and the same with numbers (the summary)
    if (used & future).any():
        problems.append(Bilingual("LEAKS the future", "未来が漏れている"))
        top = f"{weights[future].nan_to_num(0).max():.2f}"
        details.append(say(f"LEAKS the future (up to {top})", f"未来が漏れている（最大 {top}）"))
    if (used & pad_keys).any():
        problems.append(Bilingual("reads pad keys", "パッドのキーを読んでいる"))
        top = f"{weights[pad_keys].nan_to_num(0).max():.2f}"
        details.append(say(f"reads pad keys (up to {top})", f"パッドのキーを読んでいる（最大 {top}）"))
    if (~used & ~blocked).any():
        problems.append(Bilingual("hides allowed keys", "許されたキーを隠している"))
        details.append(say("hides allowed keys", "許されたキーを隠している"))
    statements = list(details) or [say("correct: weight only on allowed keys", "正しい：重みは許されたキーにだけある")]
    if dead.any():
        rows = weights[dead]
        value = "NaN" if rows.isnan().all() else "0" if (rows == 0).all() else say("finite", "有限の値")
        n = int(dead.sum())
        statements.append(say(f"{n} rows with no visible key -> {value}", f"見えるキーのない行が {n} 行 → {value}"))
    nan_rows = weights.isnan().all(-1) & ~dead
    if nan_rows.any():  # the API read the mask so that these rows see nothing
        n = int(nan_rows.sum())
        statements.append(say(f"{n} NaN row{'s' if n > 1 else ''} (no visible key as the API read the mask)",
                              f"NaN の行が {n} 行（API が読んだマスクでは見えるキーがない）"))
    verdict = listed(statements, by="sentence")

    tokens = TOKENS[padding]
    status = Bilingual("WRONG: " + ", ".join(p.en for p in problems), "誤り：" + "、".join(p.ja for p in problems)) \
        if problems else Bilingual("OK", "OK")
    if weights.isnan().any():
        status = Bilingual(status.en + "\nNaN rows are the lesson: no visible key",
                           status.ja + "\nNaN の行から学ぶこと：見えるキーがない")
    title = Bilingual(f"{SHORT[convention]} mask → {SHORT[api]}{' (converted)' if convert else ''}\n{status.en}",
                      f"{_short(convention)} のマスク → {_short(api)}{'（変換あり）' if convert else ''}\n{status.ja}")
    panel = Panel(weights, tokens, tokens, masked=blocked, framed=used & blocked, frame_color=RED,
                  alert=bool(problems), title=title)
    side = {"none": "なし", "right": "右", "left": "左"}[padding]
    summary = say(f"{convention} -> {api}{' (converted)' if convert else ''}, {padding} padding: {verdict}",
                  f"{_label(convention)} → {_label(api)}{'（変換あり）' if convert else ''}、パディング：{side}。"
                  f"{verdict}")
    return View((panel,), summary,
                caption=Bilingual("hatched: should be blocked    red frame: weight on a blocked key",
                                  "斜線：遮断すべきセル    赤枠：遮断されたキーに重み"))


LABEL = {"description_width": "5.5em"}  # room for "passed to"; each drop-down 30em wide for its longest option


def mask_convention_explorer() -> Explorer:
    """Mask convention x API x conversion x padding side -> the weights the API really computes."""
    controls = {
        "convention": widgets.Dropdown(options=[(_label(c), c) for c in CONVENTIONS], value=CONVENTIONS[0],
                                       description=say("mask", "マスク"), layout=widgets.Layout(width="30em"),
                                       style=LABEL),
        "api": widgets.Dropdown(options=[(_label(a), a) for a in APIS], value=APIS[1],
                                description=say("passed to", "渡す先"), layout=widgets.Layout(width="30em"),
                                style=LABEL),
        "convert": widgets.Checkbox(value=False, description=say("convert with helpers.masks", "helpers.masks で変換")),
        "padding": widgets.ToggleButtons(options=[(_label(p), p) for p in TOKENS], value="right",
                                         description=say("padding", "パディング")),
    }
    return explorer(controls, mask_convention_view, Bilingual(
        "Mask convention x API x conversion x padding side -> the weights the API really computes.",
        "マスクの規約 × API × 変換 × パディングの側 → その API が実際に計算する重み"))


EXPLORERS = (mask_convention_explorer,)


# --- the exercise checks ---

@exercise
def check_1(answer: object, hf_batch: torch.Tensor) -> None:
    """Exercise 1: the SDPA bool mask (N, 1, L, S), True = may attend, for a causal model and the HF mask hf_batch."""
    hf_batch = hf_attention_mask(hf_batch, "hf_batch")
    N, S = hf_batch.shape
    pad_keys = from_hf_attention_mask(hf_batch)[:, None, :].expand(N, S, S)     # (N, L, S), True = pad key
    future = causal_mask(S).expand(N, S, S)                                      # True = a later key
    expected = ~(pad_keys | future)                                              # True = may attend
    answer = as_bool_tensor(answer, Mistake("the mask should be a bool tensor (True = may attend)",
                                            "マスクは bool テンソル（True = 参照してよい）にすること"))
    if tuple(answer.shape) != (N, 1, S, S):
        raise Mistake(f"the shape should be (N, 1, L, S), with a size-1 head dimension; got {tuple(answer.shape)}",
                      f"形状は (N, 1, L, S) で、ヘッドの次元は大きさ 1 になるはずである。"
                      f"書いた答えの形状は {tuple(answer.shape)} になっている")
    got = answer[:, 0]
    if torch.equal(got, ~expected):
        raise Mistake("that is MHA's polarity (True = blocked): SDPA reads True as 'may attend'",
                      "これは MHA の極性（True = 遮断）である。SDPA は True を「参照してよい」と読む")
    if torch.equal(got, ~pad_keys | ~future):
        raise Mistake("each flipped mask is right, but 'may attend' masks combine with &: a key must pass both",
                      "反転したマスクはそれぞれ正しいが、「参照してよい」のマスクどうしは & で結合する。"
                      "キーは両方の条件を満たさなければならない")
    if torch.equal(got, ~pad_keys):
        raise Mistake("a query may not see a later key: the causal part is missing",
                      "クエリは自分より後ろのキーを参照してはならない。因果の部分が抜けている")
    if torch.equal(got, ~future):
        raise Mistake("the pad keys must be hidden too: the padding part is missing",
                      "パッドのキーも隠さなければならない。パディングの部分が抜けている")
    if (got & ~expected).any():
        raise Mistake("some query may attend to a key it must not see (a pad, or a later token)",
                      "参照してはならないキー（パッド、または後ろのトークン）を参照できるクエリがある")
    if not torch.equal(got, expected):
        raise Mistake("some query cannot see a key it may attend to (an earlier or its own real token)",
                      "参照してよいキー（前にある実トークン、または自分自身）を見られないクエリがある")


@exercise
def check_2(answer: object, embed_dim: int) -> None:
    """Exercise 2: an adapter (x, key_padding_mask, attn_mask) -> output around hf_style_attention, for both checks."""
    embed_dim = arguments.integer(embed_dim, "embed_dim", minimum=1)
    if not callable(answer):
        raise Mistake(f"answer_2 should be a function (x, key_padding_mask, attn_mask) -> output, "
                      f"got {type(answer).__name__}",
                      f"answer_2 は、(x, key_padding_mask, attn_mask) を受け取って output を返す関数にすること。"
                      f"渡されたのは {type(answer).__name__} である")
    try:
        if not check_padding_invariance(answer, embed_dim=embed_dim).passed:
            raise Mistake("without attn_mask, new values at the pads changed a real token's output: is the padding "
                          "mask passed, in Hugging Face's polarity (1 = keep)?",
                          "attn_mask なしで、パッド位置に新しい値を入れると"
                          "実トークンの出力が変わった。パディングマスクを "
                          "Hugging Face の極性（1 = 残す）で渡しているか？")
        if not check_no_future_leak(answer, embed_dim=embed_dim).passed:
            raise Mistake("with the causal attn_mask, a later token changed an earlier output: "
                          "turn attn_mask into the flag is_causal",
                          "因果の attn_mask を渡すと、後ろのトークンが前の位置の出力を変えた。"
                          "attn_mask をフラグ is_causal に置き換えること")
        if not check_padding_invariance(answer, embed_dim=embed_dim, causal=True).passed:
            raise Mistake("with the causal attn_mask and left padding, the pads changed real outputs: "
                          "the padding mask is still needed when attn_mask is given (step 4)",
                          "因果の attn_mask と左パディングで、パッドが実トークンの出力を変えた。"
                          "attn_mask があるときもパディングマスクは必要である（ステップ 4）")
    except (AttnCallError, TypeError, ValueError) as error:
        if "Boolean value of Tensor" in str(error):   # torch's words for `if attn_mask:`, e.g. is_causal=attn_mask
            raise Mistake("your adapter used a tensor where a bool is needed: is_causal is a flag, True or False, "
                          "not the mask itself (a tensor of many values is neither); which bool says whether a "
                          "causal attn_mask was given?",
                          "書いたアダプタは、bool が必要なところでテンソルを使っている。is_causal は True か "
                          "False のフラグであり、マスクそのものではない（多数の値を持つテンソルはどちらでもない）。"
                          "因果の attn_mask が渡されたかどうかを表す bool は何か？") from None
        first_line = str(error).splitlines()[0]
        raise Mistake(f"the checks could not run your adapter: {first_line}",
                      f"検査が、書いたアダプタを実行できなかった（{first_line}）") from None
    x = torch.randn(2, 5, embed_dim, generator=torch.Generator().manual_seed(0))
    no_pads = torch.zeros(2, 5, dtype=torch.bool)
    with torch.no_grad():
        if torch.allclose(answer(x, no_pads, None), answer(x, no_pads, causal_mask(5))):
            raise Mistake("with attn_mask=None every token must see every real key, the later ones too: "
                          "is_causal only when attn_mask is given",
                          "attn_mask=None のときは、どのトークンも後ろのものを含めてすべての実トークンのキーを"
                          "見なければならない。is_causal にするのは attn_mask があるときだけである")
