"""Chapter 5's explorer (attn_mask and causality: which outputs an edit of one token can reach) and the checks of
its exercises (check_1, check_2, check_3)."""

from __future__ import annotations

import functools

import ipywidgets as widgets
import torch

from helpers import arguments
from helpers.exercises import Mistake, as_bool_tensor, as_numbers, exercise
from helpers.explorer import Explorer, Panel, View, explorer
from helpers.language import Bilingual, labeller, say
from helpers.masks import causal_mask, key_padding_mask
from helpers.toy import is_pad

CAUSAL_SEQUENCES = {  # in the drop-down's order
    "right-padded": ["犬", "猫", "鳥", "<pad>", "<pad>"],
    "no padding": ["犬", "猫", "鳥", "魚", "馬"],
    "left-padded": ["<pad>", "<pad>", "犬", "猫", "鳥"],
}
SEQUENCES_JA = {"right-padded": "右パディング", "no padding": "パディングなし", "left-padded": "左パディング"}


@functools.cache  # the explorer's toy: built on first use, then reused
def _causal_toy(seed: int = 0) -> tuple[torch.nn.MultiheadAttention, dict[str, torch.Tensor]]:
    """Chapter 5's seeded nn.MultiheadAttention(4, 2 heads) and a 4-number vector for each token."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        mha = torch.nn.MultiheadAttention(embed_dim=4, num_heads=2, batch_first=True)
        names = ["犬", "猫", "鳥", "魚", "馬", "<pad>"]
        table = dict(zip(names, torch.randn(len(names), 4), strict=True))
    return mha, table


def causal_view(sequence: str = "right-padded", causal: bool = True, padding: bool = True, edit: int = 1) -> View:
    """Weights of one sequence under the chosen masks, and which outputs move when token `edit` changes."""
    if sequence not in CAUSAL_SEQUENCES:
        raise ValueError(f"sequence must be one of {list(CAUSAL_SEQUENCES)}, got {sequence!r}")
    tokens = CAUSAL_SEQUENCES[sequence]
    L = len(tokens)
    if not 0 <= edit < L:
        raise ValueError(f"edit must be a position from 0 to {L - 1}, got {edit}")
    pad = is_pad(tokens)[None]                                            # (1, S)
    attn_mask = causal_mask(L) if causal else None
    key_padding_mask = pad if padding else None
    hidden = torch.zeros(L, L, dtype=torch.bool)
    if causal:
        hidden |= attn_mask
    if padding:
        hidden |= pad
    blind = hidden.all(-1).nonzero().flatten().tolist()
    if blind:
        query, token = blind[0], tokens[blind[0]]
        raise ValueError(say(f"query {query} ({token}) would see no key at all: every key it may look at "
                             "is padding or in its future, and nn.MultiheadAttention returns NaN for such a row. "
                             "For training, pad on the right (or switch one of the masks off); batched generation "
                             "pads on the left and must handle such rows (chapter 7).",
                             f"クエリ {query}（{token}）には見えるキーが 1 つもなくなる。参照してよいキーがすべて"
                             "パディングか未来にあり、そのような行に対して nn.MultiheadAttention は NaN を返す。"
                             "学習では右側にパディングする（あるいはマスクのどちらかをオフにする）。バッチ生成では"
                             "左側にパディングするので、そのような行を扱わなければならない（第 7 章）。"))
    mha, table = _causal_toy()
    x = torch.stack([table[t] for t in tokens])[None]                     # (1, L, 4)
    edited = x.clone()
    edited[0, edit] += 1.0
    with torch.no_grad():
        output, weights = mha(x, x, x, key_padding_mask=key_padding_mask, attn_mask=attn_mask)
        output2, _ = mha(edited, edited, edited, key_padding_mask=key_padding_mask, attn_mask=attn_mask)
    same = (output2 == output)[0].all(-1)                                  # (L,) exactly unchanged

    masks = " + ".join(m for m, on in (("causal", causal), ("key padding", padding)) if on) or "no mask"
    rows = [f"{t} {say('same', '同じ') if s else say('CHANGED', '変化')}"
            for t, s in zip(tokens, same.tolist(), strict=True)]
    moved = [i for i in range(L) if not same[i]]
    kept = [i for i in range(L) if same[i]]
    masks_ja = " + ".join(m for m, on in (("因果マスク", causal), ("パディングマスク", padding)) if on) or "マスクなし"
    panel = Panel(weights[0], rows, tokens, masked=hidden, ylabel=Bilingual("query (its output)", "クエリ（その出力）"),
                  red_rows=tuple(moved), red_cols=(edit,),
                  title=Bilingual(f"{masks}: weights (mean of 2 heads)\nrows: does that output change if "
                                  f"{tokens[edit]} (key {edit}) is edited?",
                                  f"{masks_ja}：重み（2 ヘッドの平均）\n行：{tokens[edit]}（キー {edit}）を"
                                  "編集すると、その出力は変わるか"))
    changes_ja = f"位置 {moved} の出力が変わる" if moved else "どの出力も変わらない"
    summary = say(f"{sequence}, {masks}: editing token {edit} ({tokens[edit]}) changes the outputs at positions "
                  f"{moved or 'none'}; exactly unchanged: {kept or 'none'}",
                  f"{SEQUENCES_JA[sequence]}、{masks_ja}：トークン {edit}（{tokens[edit]}）を編集すると、"
                  f"{changes_ja}。まったく変わらない位置：{kept or 'なし'}")
    return View((panel,), summary)


def causal_explorer() -> Explorer:
    """Masks on/off, a sequence and a token to edit -> the weights, and which outputs that edit changes."""
    controls = {
        "sequence": widgets.Dropdown(options=[(say(s, SEQUENCES_JA[s]), s) for s in CAUSAL_SEQUENCES],
                                     value="right-padded", description=say("sequence", "系列")),
        "causal": widgets.Checkbox(value=True, description=say("causal attn_mask", "因果マスク（attn_mask）")),
        "padding": widgets.Checkbox(value=True, description="key_padding_mask"),
        "edit": widgets.IntSlider(value=1, min=0, max=4, description=say("edit token", "編集するトークン")),
    }
    return explorer(controls, causal_view, Bilingual(
        "Masks on/off, a sequence and a token to edit -> the weights, and which outputs that edit changes.",
        "マスクの有無、系列、編集するトークン → 重みと、その編集で変わる出力"))


EXPLORERS = (causal_explorer,)


# --- the exercise checks (a wrong answer raises Mistake with a hint that never gives the answer) ---

def _module(mha: object) -> torch.nn.MultiheadAttention:
    return arguments.instance(mha, "mha", torch.nn.MultiheadAttention, "the chapter's nn.MultiheadAttention")


def _window(L: int, width: int) -> torch.Tensor:
    """Bool (L, L), True = not allowed: later keys, and keys `width` or more steps back."""
    return causal_mask(L) | torch.ones(L, L, dtype=torch.bool).tril(-width)


@exercise
def check_1(answer: object, mha: torch.nn.MultiheadAttention, x: torch.Tensor, width: int = 2) -> None:
    """Exercise 1: a bool attn_mask (L, L) for a causal sliding window of `width` (itself and width - 1 before)."""
    mha, x = _module(mha), arguments.floating(x, "x")
    L = x.shape[1]
    expected = _window(L, width)
    answer = as_bool_tensor(answer, Mistake("attn_mask should be a bool tensor, True = not allowed (a float mask is "
                                            "added to the scores)",
                                            "attn_mask は bool テンソルにすること。True = 許されない（float のマスクは"
                                            "スコアに加算される）"))
    if answer.shape != expected.shape:
        raise Mistake(f"shape (L, S) = {tuple(expected.shape)}, got {tuple(answer.shape)}",
                      f"形状は (L, S) = {tuple(expected.shape)} になるはずだが、{tuple(answer.shape)} になっている")
    if torch.equal(answer, ~expected):
        raise Mistake("that is the opposite polarity: True must mean 'not allowed'",
                      "極性が逆になっている。True は「許されない」という意味にすること")
    if (~answer).triu(1).any():
        raise Mistake("a query may see a later key: the window must stay causal",
                      "後ろのキーを見られるクエリがある。ウィンドウも因果的でなければならない")
    if (answer.diagonal()).any():
        raise Mistake("a query must be allowed to see itself", "クエリは自分自身を見られるようにすること")
    if torch.equal(answer, causal_mask(L)):
        raise Mistake("that is the plain causal mask: the window must also hide keys further back",
                      "それはただの因果マスクである。ウィンドウは、もっと前のキーも隠さなければならない")
    if not torch.equal(answer, expected):
        if (~answer & expected).any():
            raise Mistake("the window is too wide: some query sees a key too far back",
                          "ウィンドウが広すぎる。前にさかのぼりすぎたキーを見ているクエリがある")
        raise Mistake("the window is too narrow: some query misses the key just before it",
                      "ウィンドウが狭すぎる。直前のキーを見られないクエリがある")
    with torch.no_grad():
        _, weights = mha(x, x, x, attn_mask=answer)
    allowed = (~expected).float()
    if not torch.equal(weights[0], allowed / allowed.sum(-1, keepdim=True)):     # identical tokens: equal weights
        raise ValueError("check_1: the window's weights are not equal on identical tokens; this check needs the "
                         "chapter's all-ones input")


@exercise
def check_2(answer: object, mha: torch.nn.MultiheadAttention, batch: torch.Tensor,
            lengths: tuple[int, ...] = (5, 2), item: int = 1, query: int = 4) -> None:
    """Exercise 2: item `item`'s weight row for `query` under the causal mask and the padding of `lengths`."""
    mha, batch = _module(mha), arguments.floating(batch, "batch")
    L = batch.shape[1]
    with torch.no_grad():
        _, weights = mha(batch, batch, batch, attn_mask=causal_mask(L), key_padding_mask=key_padding_mask(lengths, L))
    expected = weights[item, query]
    answer = as_numbers(answer, Mistake(f"give a list of {L} numbers, one weight per key",
                                        f"{L} 個の数のリストで答えること（キーごとに 1 つの重み）"))
    if len(answer) != L:
        raise Mistake(f"one weight per key: {L} numbers, got {len(answer)}",
                      f"キーごとに 1 つの重み、つまり {L} 個の数が必要だが、{len(answer)} 個になっている")
    got = torch.tensor(answer, dtype=torch.float32)
    if (got - expected).abs().max() < 1e-6:
        return
    if abs(float(got.sum()) - 1) > 1e-3:
        raise Mistake("the weights of a row sum to 1", "1 行の重みの和は 1 である")
    if (got - 1 / L).abs().max() < 1e-6:
        raise Mistake("a uniform row over every key ignores both masks",
                      "すべてのキーにわたって一様な行は、両方のマスクを無視している")
    if (got > 1e-6).tolist()[lengths[item]:] != [False] * (L - lengths[item]):
        raise Mistake(f"a key that is a pad in this batch still has weight: check again which keys of item {item} "
                      "are pads",
                      f"このバッチでパッドになっているキーに、まだ重みがある。サンプル {item} のどのキーがパッドかを"
                      "確かめ直すこと")
    raise Mistake(f"which keys may query {query} see under both masks? The visible keys have equal scores here",
                  f"両方のマスクのもとで、クエリ {query} が参照してよいキーはどれか。"
                  "ここでは見えるキーのスコアはすべて等しい")


@exercise
def check_3(answer: object, per_item: torch.Tensor, mha: torch.nn.MultiheadAttention, seq: torch.Tensor,
            reference: torch.Tensor) -> None:
    """Exercise 3: `per_item` (N, L, S) expanded to the (N * num_heads, L, S) attn_mask of `mha`, batch-major."""
    mha = _module(mha)
    per_item = arguments.bool_mask(per_item, "per_item")
    N, L, S = per_item.shape
    H = mha.num_heads
    expected = per_item.repeat_interleave(H, dim=0)
    answer = as_bool_tensor(answer, Mistake("keep the bool type of per_item: a bool tensor",
                                            "per_item と同じく bool テンソルにすること"))
    if answer.shape != expected.shape:
        raise Mistake(f"shape (N*num_heads, L, S) = {tuple(expected.shape)}, got {tuple(answer.shape)}",
                      f"形状は (N*num_heads, L, S) = {tuple(expected.shape)} になるはずだが、"
                      f"{tuple(answer.shape)} になっている")
    if not torch.equal(answer, expected):
        if torch.equal(answer, per_item.repeat(H, 1, 1)):
            raise Mistake("that is head-major order (all items for head 0, then head 1, ...): the module reads "
                          "slice n*num_heads + h as item n's mask",
                          "それはヘッド優先の順序（ヘッド 0 の全サンプル、次にヘッド 1 の全サンプル…）である。"
                          "モジュールはスライス n*num_heads + h をサンプル n のマスクとして読む")
        raise Mistake("slice n*num_heads + h must be item n's mask, for every head h",
                      "どのヘッド h についても、スライス n*num_heads + h がサンプル n のマスクでなければならない")
    with torch.no_grad():
        out, _ = mha(seq, seq, seq, attn_mask=answer)
    if not torch.equal(out, reference):
        raise ValueError("check_3: the right mask did not reproduce `reference`; pass the chapter's seq and reference")

# The texts chapter 05's notebook draws on its figures (titles, axis labels, legends), English as its code writes
# them, and their Japanese: `title=ch05.label("...")` draws either (helpers.language.labeller).
FIGURES_JA = {
    "all ones, causal attn_mask": "すべて 1、因果の attn_mask",
    "item {i}: causal + key padding": "サンプル {i}：因果 + キーのパディング",
    "no mask: |change| of each output": "マスクなし：各出力の変化の大きさ",
    "causal mask: hatched = exactly unchanged": "因果マスク：斜線 = まったく変わらない",
    "output position": "出力の位置",
    "edited token": "編集したトークン",
    "edit {t}": "編集 {t}",
    "out {i}": "出力 {i}",
}
label = labeller(FIGURES_JA)
