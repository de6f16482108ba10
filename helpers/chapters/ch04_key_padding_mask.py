"""Chapter 4: nn.MultiheadAttention's key_padding_mask on the PAD=1000 experiment's batch, its explorer, and the
checks of its exercises (check_1, check_2, check_3)."""

from __future__ import annotations

import ipywidgets as widgets
import torch

from helpers import arguments
from helpers.exercises import Mistake, as_bool_tensor, as_int, as_tensor, exercise
from helpers.explorer import Explorer, Panel, View, explorer
from helpers.language import Bilingual, labeller, say

KPM_LENGTHS = (4, 3, 5)  # the chapter-4 batch: 1 2 3 4 | 5 6 7 | 8 9 10 11 12


def kpm_batch(pad: float = 1000) -> torch.Tensor:
    """The chapter-4 batch, shape (3, 5, 1): 1..4, 5..7 and 8..12, padded to length 5 with `pad`."""
    data = torch.full((3, 5), float(pad))
    start = 1
    for i, n in enumerate(KPM_LENGTHS):
        data[i, :n] = torch.arange(start, start + n, dtype=torch.float32)
        start += n
    return data.unsqueeze(-1)


def _kpm_module(seed: int) -> torch.nn.MultiheadAttention:
    """nn.MultiheadAttention(embed_dim=1, num_heads=1, batch_first=True) initialised from `seed`."""
    with torch.random.fork_rng(devices=[]):  # leave the caller's random state alone
        torch.manual_seed(seed)
        return torch.nn.MultiheadAttention(embed_dim=1, num_heads=1, batch_first=True)


def kpm_view(seed: int = 0, pad: float = 1000, masked: bool = True, item: int = 0) -> View:
    """Chapter 4's PAD experiment: the weights of one batch item, with or without key_padding_mask."""
    real = {float(v) for v in range(1, 13)}
    if float(pad) in real:
        raise ValueError(say(f"PAD={pad:g} is also a real value in the data (1 to 12): data == PAD would hide "
                             "a real token. Pick a PAD value that never occurs in real data.",
                             f"PAD={pad:g} はデータの実際の値（1 から 12）でもある。data == PAD では実トークンまで"
                             "隠れてしまう。実際のデータに決して現れない PAD の値を選ぶこと。"))
    data = kpm_batch(pad)
    kpm = (data == pad)[:, :, 0]
    mha = _kpm_module(seed)
    with torch.no_grad():
        _, weights = mha(data, data, data, key_padding_mask=kpm if masked else None)
    w_q, w_k, _ = mha.in_proj_weight.detach().flatten().tolist()
    n = KPM_LENGTHS[item]
    labels = [f"{v:g}" for v in data[item, :n, 0].tolist()] + ["PAD"] * (5 - n)
    panel = Panel(weights[item], labels, labels, masked=kpm[item] if masked else None,
                  title=Bilingual(f"item {item}, seed {seed}, PAD={pad:g}, mask {'on' if masked else 'off'}",
                                  f"サンプル {item}、シード {seed}、PAD={pad:g}、マスク{'あり' if masked else 'なし'}"))
    product, largest = w_q * w_k, w_q * w_k > 0
    sign = say(f"w_q·w_k = {product:+.3f}: a positive query favours the {'largest' if largest else 'smallest'} key",
               f"w_q·w_k = {product:+.3f}：正のクエリでは値が{'最も大きい' if largest else '最も小さい'}キーが勝つ")
    if n == 5:
        on_pad = say("item 2 has no pad key", "サンプル 2 にはパッドのキーがない")
    else:
        mean = weights[item, :n, n:].sum(-1).mean()
        on_pad = say(f"weight on the pad column(s), mean over real query rows = {mean:.3f}",
                     f"パッド列の重み（実トークンのクエリ行での平均）= {mean:.3f}")
        if (weights[item, :, n:] == 0).all():
            on_pad += say(" (exactly 0 in every row)", "（どの行でもちょうど 0）")
    return View((panel,), say(f"seed {seed} ({sign}); item {item}, mask {'on' if masked else 'off'}: {on_pad}",
                              f"シード {seed}（{sign}）。サンプル {item}、マスク{'あり' if masked else 'なし'}："
                              f"{on_pad}"))


def kpm_explorer() -> Explorer:
    """Seed, PAD value, mask on/off and batch item -> the weights heatmap of chapter 4's experiment."""
    pads = [("1000", 1000), ("100", 100), ("13", 13), ("0", 0), ("-1000", -1000),
            (say("7 (a real value!)", "7（実際の値！）"), 7)]
    controls = {
        "seed": widgets.IntSlider(value=0, min=0, max=9, description="seed"),
        "pad": widgets.Dropdown(options=pads, value=1000, description="PAD"),
        "masked": widgets.Checkbox(value=True, description="key_padding_mask"),
        "item": widgets.ToggleButtons(options=[0, 1, 2], value=0, description=say("batch item", "サンプル")),
    }
    return explorer(controls, kpm_view, Bilingual(
        "Seed, PAD value, mask on/off and batch item -> the weights heatmap of chapter 4's experiment.",
        "シード、PAD の値、マスクの有無、サンプル → 第 4 章の実験の重みのヒートマップ"))


EXPLORERS = (kpm_explorer,)


# --- the exercise checks (a wrong answer raises Mistake with a hint that never gives the answer) ---

def _module(mha: object) -> torch.nn.MultiheadAttention:
    return arguments.instance(mha, "mha", torch.nn.MultiheadAttention, "the chapter's nn.MultiheadAttention")


@exercise
def check_1(answer: object, ids: torch.Tensor, pad_id: int = 0) -> None:
    """Exercise 1: the bool key_padding_mask of `ids` (right-padded with `pad_id`): True at the padding."""
    ids = arguments.tensor(ids, "ids")
    pad_id = arguments.integer(pad_id, "pad_id")
    expected = ids == pad_id
    answer = as_bool_tensor(answer, Mistake("key_padding_mask should be a bool tensor (a comparison such as "
                                            "ids == ... gives one)",
                                            "key_padding_mask は bool テンソルにすること（ids == ... のような比較で"
                                            "得られる）"))
    if answer.shape != expected.shape:
        raise Mistake(f"one entry per key: shape (N, S) = {tuple(expected.shape)}, got {tuple(answer.shape)}",
                      f"キーごとに 1 つの値を持つ形状 (N, S) = {tuple(expected.shape)} になるはずだが、"
                      f"{tuple(answer.shape)} になっている")
    if torch.equal(answer, expected):
        return
    if torch.equal(answer, ~expected):
        raise Mistake("that is the opposite polarity: for key_padding_mask, True means 'ignore this key' (a pad)",
                      "極性が逆になっている。key_padding_mask では、True は「このキーを無視する」（パッドである）"
                      "という意味である")
    if torch.equal(answer, expected.flip(-1)):
        raise Mistake("that puts the pads at the start of each row; here they are at the end (right padding)",
                      "それは各行の先頭にパッドを置いている。ここではパッドは末尾にある（右パディング）")
    if answer[~expected].any():
        raise Mistake(f"a real token is masked: True only where the id is the pad id {pad_id}",
                      f"実トークンがマスクされている。True にするのは、ID がパッドの ID {pad_id} である位置だけである")
    raise Mistake("a pad is left visible: every pad position needs True",
                  "見えるままのパッドがある。パッド位置はすべて True にすること")


@exercise
def check_2(answer: object, mha: torch.nn.MultiheadAttention, data: torch.Tensor, kpm: torch.Tensor,
            pad: float = -500.0, item: int = 1) -> None:
    """Exercise 2: with the pad slots set to `pad`, the key index where item `item`'s pad queries put their weight."""
    mha, data, kpm = _module(mha), arguments.floating(data, "data"), arguments.tensor(kpm, "kpm")
    changed = data.clone()
    changed[kpm] = float(pad)
    with torch.no_grad():
        _, weights = mha(changed, changed, changed, key_padding_mask=kpm)
    pad_rows = weights[item, kpm[item]]                                      # (pads of the item, S)
    if not (pad_rows.amax(-1) > 0.99).all() or len(set(pad_rows.argmax(-1).tolist())) != 1:
        raise ValueError("check_2: the pad queries do not agree on one key; this check needs the chapter's data")
    winner = int(pad_rows[0].argmax())
    S = kpm.shape[-1]
    answer = as_int(answer, Mistake(f"answer with a key index: an int from 0 to {S - 1}",
                                    f"キーのインデックス（0 から {S - 1} までの int）で答えること"))
    if not 0 <= answer < S:
        raise Mistake(f"a key index of item {item} runs from 0 to {S - 1}, got {answer}",
                      f"サンプル {item} のキーのインデックスは 0 から {S - 1} までである。受け取った値は {answer}")
    if answer == winner:
        return
    if kpm[item, answer]:
        raise Mistake(f"key {answer} is a pad key of item {item}: the mask hides it, so its weight is exactly 0, "
                      f"whatever the pad value",
                      f"キー {answer} はサンプル {item} のパッドのキーである。マスクがそれを隠すので、パッドの値が"
                      "何であれ、その重みはちょうど 0 である")
    real = data[item, ~kpm[item], 0]
    if answer == int(real.argmax()):
        raise Mistake("that is where a positive query looks (the largest visible key); with the pads at "
                      f"{pad:g}, the pad query is negative",
                      "それは正のクエリが見る位置（見えるキーの中で値が最も大きいキー）である。パッドが "
                      f"{pad:g} なので、パッドのクエリは負である")
    raise Mistake("a query this large puts almost all its weight on one extreme visible key: reason from "
                  "step 7 which one, for a negative query",
                  "これほど大きなクエリは、見えるキーのうち値が最大か最小の 1 つに重みのほとんどすべてを置く。"
                  "負のクエリではそれがどのキーになるかを、ステップ 7 をもとに考えること")


@exercise
def check_3(answer: object, weights: torch.Tensor) -> None:
    """Exercise 3: the module's head-averaged table (N, L, S), computed from the per-head `weights` (N, H, L, S)."""
    weights = arguments.floating(weights, "weights")
    if weights.dim() != 4:
        raise ValueError(f"weights must be the per-head weights (N, H, L, S), got shape {tuple(weights.shape)}")
    N, H, L, S = weights.shape
    expected = weights.mean(dim=1)
    answer = as_tensor(answer, Mistake(f"the answer should be a tensor of shape (N, L, S) = {(N, L, S)}",
                                       f"答えは形状 (N, L, S) = {(N, L, S)} のテンソルにすること"), weights.dtype)
    if answer.shape != expected.shape:
        if answer.shape == (N, H, S) or answer.shape == (N, H, L):
            raise Mistake("that averages over the queries or the keys; the heads are dimension 1 of (N, H, L, S)",
                          "それはクエリかキーについて平均をとっている。ヘッドは (N, H, L, S) の次元 1 である")
        raise Mistake(f"shape (N, L, S) = {(N, L, S)}, got {tuple(answer.shape)}",
                      f"形状は (N, L, S) = {(N, L, S)} になるはずだが、{tuple(answer.shape)} になっている")
    if (answer - expected).abs().max() < 1e-6:
        return
    if any((answer - weights[:, h]).abs().max() < 1e-6 for h in range(H)):
        raise Mistake("that is one head's table; the module's table combines all the heads",
                      "それは 1 つのヘッドの表である。モジュールの表は、すべてのヘッドを合わせたものである")
    if (answer - weights.sum(dim=1)).abs().max() < 1e-6:
        raise Mistake("that is the sum over the heads: its rows no longer sum to 1",
                      "それはヘッドについての和である。その行の和はもう 1 にならない")
    raise Mistake("each cell should combine the heads' weights of the same item, query and key, equally",
                  "各セルは、同じサンプル・クエリ・キーに対する各ヘッドの重みを、等しい割合で合わせたものになるはずである")

# The texts chapter 04's notebook draws on its figures (titles, axis labels, legends), English as its code writes
# them, and their Japanese: `title=ch04.label("...")` draws either (helpers.language.labeller).
FIGURES_JA = {
    "item {n}, no mask": "サンプル {n}、マスクなし",
    "item {n}, key_padding_mask": "サンプル {n}、key_padding_mask",
    "seed 0: w_q·w_k > 0, no mask": "シード 0：w_q·w_k > 0、マスクなし",
    "seed 1: w_q·w_k < 0, no mask": "シード 1：w_q·w_k < 0、マスクなし",
    "item 1, head {h}": "サンプル 1、ヘッド {h}",
}
label = labeller(FIGURES_JA)
