"""The explorer: the two trained classifiers on one sentence, padded, with or without the key mask."""

from __future__ import annotations

import functools
import html

import ipywidgets as widgets
import torch

from helpers.chapters.ch08_a_trained_classifier.data import (
    GLOSS,
    PAD_ID,
    POSITIVE,
    encode,
    label_of,
)
from helpers.chapters.ch08_a_trained_classifier.model import Classifier
from helpers.chapters.ch08_a_trained_classifier.training import (
    trained,
)
from helpers.explorer import Explorer, Panel, View, explorer
from helpers.language import Bilingual, labeller, listed, say
from helpers.training import deterministic

# Test sentences to pick from (without <cls>): short and long, negated or not, one clause or two.
SENTENCES = (
    "犬 が 好き",
    "猫 が 嫌い じゃない",
    "鳥 と 魚 が とても 好き じゃない",
    "馬 が 嫌い けど 犬 が 好き",
    "犬 が 好き けど 馬 が 嫌い",
    "魚 が とても 嫌い じゃない けど 鳥 と 猫 が 好き じゃない",
    "鳥 と 猫 が 好き じゃない けど 魚 が とても 嫌い じゃない",
    "犬 と 猫 と 鳥 が とても 好き じゃない けど 魚 と 馬 と 猫 が とても 嫌い",
)
MASK_MODES = ("as trained", "on for both", "off for both")  # the key mask at inference
MASK_MODES_JA = {"as trained": "学習時のまま", "on for both": "両方でオン", "off for both": "両方でオフ"}
PAD_MAX = 32


def sentence_label(sentence: str) -> str:
    """The dropdown's label: the sentence, its English gloss and its true label (the Japanese edition: the
    sentence and its label, no gloss)."""
    tokens = sentence.split()
    gloss = " ".join(GLOSS[t] for t in tokens)
    positive = label_of(tokens) == POSITIVE
    feeling = "positive" if positive else "negative"
    return say(f"{sentence}  ({gloss}: {feeling})", f"{sentence}（{'肯定' if positive else '否定'}）")


def _run(model: Classifier, tokens: list[str], pad_to: int, masked: bool) -> tuple[float, torch.Tensor]:
    """P(positive) and the <cls> rows (2, pad_to) of the two blocks, the mask on or off."""
    ids = encode([tokens], pad_to)
    mask = ids != PAD_ID if masked else torch.ones_like(ids, dtype=torch.bool)
    with torch.no_grad(), deterministic():  # one thread: 2 threads on a busy 2-core machine are 10x slower
        logits, weights = model(ids, mask=mask)
    return logits.softmax(-1)[0, POSITIVE].item(), torch.stack([w[0, 0] for w in weights])


@functools.cache
def _unpadded(sentence: str, masked_model: bool) -> float:
    """P(positive) of a trained model on the sentence alone (no pads), as trained: the reference."""
    tokens = ["<cls>", *sentence.split()]
    return _run(trained(masked_model).model, tokens, len(tokens), masked_model)[0]


def classifier_view(sentence: str = SENTENCES[1], pad_to: int = 20, mask: str = "as trained") -> View:
    """Both trained models on `sentence` padded to `pad_to`: one table of the <cls> attention rows, and a summary."""
    if mask not in MASK_MODES:
        raise ValueError(f"mask must be one of {list(MASK_MODES)}, got {mask!r}")
    tokens = ["<cls>", *sentence.split()]
    if not isinstance(pad_to, int) or not len(tokens) <= pad_to <= PAD_MAX:
        raise ValueError(say(f"this sentence has {len(tokens)} tokens with <cls>: pad it to a length from "
                             f"{len(tokens)} to {PAD_MAX}, not {pad_to}",
                             f"この文は <cls> を含めて {len(tokens)} トークンある。パディングする長さは "
                             f"{len(tokens)} から {PAD_MAX} までで、{pad_to} にはできない"))
    label = label_of(tokens)
    cols = tokens + ["<pad>"] * (pad_to - len(tokens))
    pad = torch.tensor([c == "<pad>" for c in cols])
    rows, matrices, hidden, parts, alert = [], [], [], [], False
    for name, masked_model in (("masked", True), ("unmasked", False)):
        model = trained(masked_model).model
        use_mask = masked_model if mask == "as trained" else mask == "on for both"
        p, cls_rows = _run(model, tokens, pad_to, use_mask)
        p_alone = _unpadded(sentence, masked_model)
        verdict = "positive" if p > 0.5 else "negative"
        moved = (p > 0.5) != (p_alone > 0.5)
        alert |= (p > 0.5) != bool(label)
        model_ja = "マスクありのモデル" if masked_model else "マスクなしのモデル"
        parts.append(say(f"{name} model ({'with' if use_mask else 'without'} mask): {verdict}, P(positive) {p:.2f} "
                         f"({'CHANGED from' if moved else 'same as'} its unpadded {p_alone:.2f})",
                         f"{model_ja}（推論時はマスク{'あり' if use_mask else 'なし'}）は"
                         f"{'肯定' if p > 0.5 else '否定'}、"
                         f"肯定の確率 {p:.2f}（パディングなしでは {p_alone:.2f}。"
                         f"{'予測が変わった' if moved else '予測は変わらない'}）"))
        short = say(name, "マスクあり" if masked_model else "マスクなし")
        rows += [f"{short} · {say('block', 'ブロック')} {b}" for b in (1, 2)]
        matrices.append(cls_rows)
        hidden += [pad if use_mask else torch.zeros_like(pad)] * 2
    truth = say("positive", "肯定") if label else say("negative", "否定")
    panel = Panel(torch.cat(matrices), rows, cols, masked=torch.stack(hidden), alert=alert,
                  title=Bilingual(f"<cls> attention, padded to {pad_to}, mask {mask}",
                                  f"<cls> のアテンション、長さ {pad_to} までパディング、マスクは{MASK_MODES_JA[mask]}"),
                  ylabel="")
    models = listed(parts, by="sentence")
    summary = say(f"pad to {pad_to}, mask {mask}: {models}. True label: {truth}",
                  f"長さ {pad_to} までパディング、マスクは{MASK_MODES_JA[mask]}。{models}。正解ラベル：{truth}")
    return View((panel,), summary,
                caption=Bilingual("each row: the <cls> query's weights over the keys    hatched: masked pad keys "
                                  "(weight 0)",
                                  "各行：<cls> のクエリがキーに置く重み    斜線：マスクしたパッドのキー（重み 0）"))


def classifier_explorer() -> Explorer:
    """Sentence, pad length and the mask at inference -> both trained models' predictions and <cls> attention."""
    controls = {
        "sentence": widgets.Dropdown(options=[(sentence_label(s), s) for s in SENTENCES], value=SENTENCES[1],
                                     description=say("sentence", "文"), layout=widgets.Layout(width="46em")),
        "pad_to": widgets.IntSlider(value=20, min=4, max=PAD_MAX, description=say("pad to", "長さ")),
        "mask": widgets.ToggleButtons(options=[(say(m, MASK_MODES_JA[m]), m) for m in MASK_MODES], value="as trained",
                                      description=say("mask", "マスク")),
    }
    return explorer(controls, classifier_view, Bilingual(
        "Sentence, pad length and the mask at inference -> both trained models' predictions and <cls> attention.",
        '文、パディングの長さ、推論時のマスク → 学習済みの 2 つのモデルの予測と <cls> のアテンション'))


def highlight_html(tokens: list[str], weights: torch.Tensor, title: str = "") -> str:
    """Tokens on a red background as dark as their weight (the book's attention highlight); the weight on hover.

    Unlike the book, the colour is not rescaled to the row's maximum: a weight of 0 is white, 1 full red.
    """
    spans = []
    for token, w in zip(tokens, weights.tolist(), strict=True):
        shade = int(255 * (1 - w))
        spans.append(f'<span title="{w:.3f}" style="background:rgb(255,{shade},{shade});padding:0 0.15em;'
                     f'margin-right:0.15em">{html.escape(token)}</span>')
    head = f"<b>{html.escape(title)}</b><br>" if title else ""
    return f'<div style="font-size:15px;line-height:1.8">{head}{"".join(spans)}</div>'


EXPLORERS = (classifier_explorer,)

# The texts chapter 08's notebook draws on its figures (titles, axis labels, legends), English as its code writes
# them, and their Japanese: `title=ch08.label("...")` draws either (helpers.language.labeller).
FIGURES_JA = {
    "masked": "マスクあり",
    "unmasked": "マスクなし",
    "{name}: test": "{name}：テスト",
    "{name}: training batches": "{name}：学習バッチ",
    "bag-of-words ceiling": "バッグ・オブ・ワーズの上限",
    "batch": "バッチ",
    "cross-entropy": "交差エントロピー",
    "training loss": "学習の損失",
    "epoch": "エポック",
    "accuracy": "正解率",
    "unmasked (trained at 20)": "マスクなし（長さ 20 で学習）",
    "alone": "単独",
    "pad to": "パディング後の長さ",
    "test accuracy": "テストの正解率",
    "accuracy vs pad length": "パディングの長さと正解率",
    "masked model, block 2: {sentence}": "マスクありのモデル、ブロック 2：{sentence}",
    "unmasked model, block 2: {sentence}": "マスクなしのモデル、ブロック 2：{sentence}",
}
label = labeller(FIGURES_JA)
