"""Chapter 1's code: its explorer (which cells of the book's masked score table are set to -1e9, which stay '?')
and its exercise checks."""

from __future__ import annotations

import ipywidgets as widgets
import torch

from helpers import arguments, toy
from helpers.exercises import Mistake, as_bool_tensor, as_numbers, as_tensor, exercise, wrong_kind
from helpers.explorer import Explorer, Panel, View, explorer
from helpers.language import Bilingual, labeller, say


def pad_cells_view(n_pads: int = 2) -> View:
    """The book's masked score table for 5 tokens with `n_pads` pads: -1e9 cells hatched, '?' cells framed."""
    tokens = toy.tokens(n_pads)
    if n_pads == len(tokens):
        raise ValueError(say("every token is <pad>: no real word is left to look at. "
                             "A batch never holds an empty sentence; keep at least one word.",
                             "すべてのトークンが <pad> で、見るべき単語が 1 つも残らない。"
                             "バッチに空の文が入ることはないので、単語を少なくとも 1 つ残すこと。"))
    ids, _, q, k, _ = toy.qkv(tokens)
    mask = (ids != toy.PAD_ID).unsqueeze(1)                       # the book's mask, (1, 1, S), True = real key
    scores = q @ k.transpose(-2, -1) / toy.D_MODEL ** 0.5
    masked_scores = scores.masked_fill(mask == 0, -1e9)[0]
    unsure = toy.question_cells(tokens)
    panel = Panel(masked_scores, tokens, tokens,
                  title=Bilingual("scores after masked_fill(-1e9)", "masked_fill(-1e9) 後のスコア"),
                  masked=(mask == 0)[0], framed=unsure, mark="?")
    changed = int((masked_scores != scores[0]).sum())
    n_unsure = int(unsure.sum())
    return View((panel,), say(f"{n_pads} pad(s): {changed} cells set to -1e9 (the pad columns), "
                              f"{n_unsure} '?' cells (pad query rows x real key columns) keep their scores",
                              f"パッド {n_pads} 個：{changed} 個のセル（パッド列）が -1e9 になり、"
                              f"{n_unsure} 個の「?」のセル（パッドのクエリの行 × 実トークンのキーの列）は"
                              "スコアを保つ"),
                caption=Bilingual("hatched: set to -1e9    orange ?: pad query x real key, left as it was",
                                  "斜線：-1e9 にしたセル    オレンジの ?：パッドのクエリ × 実トークンのキー"
                                  "（元のまま）"))


def pad_cells_explorer() -> Explorer:
    """Number of pads -> which cells the book's mask sets to -1e9 and which stay '?'."""
    controls = {"n_pads": widgets.IntSlider(value=2, min=0, max=5, description=say("pads", "パッド"))}
    return explorer(controls, pad_cells_view, Bilingual(
        "Number of pads -> which cells the book's mask sets to -1e9 and which stay '?'.",
        "パッドの数 → 書籍のマスクが -1e9 にするセルと「?」のまま残るセル"))


EXPLORERS = (pad_cells_explorer,)


def _token_ids(ids: object) -> torch.Tensor:
    """The exercise's token ids, checked: an integer tensor (N, S)."""
    ids = arguments.tensor(ids, "ids")
    if ids.dtype.is_floating_point or ids.dtype == torch.bool or ids.dim() != 2:
        raise ValueError(f"ids must be an integer tensor of token ids, shape (N, S), "
                         f"got {ids.dtype} with shape {tuple(ids.shape)}")
    return ids


@exercise
def check_1(answer: object, ids: torch.Tensor) -> None:
    """Exercise 1: the book's mask for the batch `ids`: bool, True = real token, shape (N, 1, S)."""
    ids = _token_ids(ids)
    is_word = (ids != toy.PAD_ID) & (ids != toy.VOCAB["<unk>"])        # (N, S), from the vocabulary
    answer = as_bool_tensor(answer, Mistake("the mask should be a bool tensor (a comparison such as ids != pad_id "
                                            "gives one)",
                                            "マスクは bool テンソルにすること（ids != pad_id のような比較で得られる）"))
    if answer.dim() != 3 or answer.shape[0] != ids.shape[0] or answer.shape[1:] != (1, ids.shape[1]):
        raise Mistake(f"the shape should be (N, 1, S), with a size-1 query dimension in the middle; "
                      f"got {tuple(answer.shape)}",
                      f"形状は (N, 1, S) になるはずである（真ん中がサイズ 1 のクエリの次元）。"
                      f"書いた答えの形状は {tuple(answer.shape)} になっている")
    if torch.equal(answer[:, 0], ~is_word):
        raise Mistake("that is the opposite polarity: True must mark the real tokens",
                      "極性が逆になっている。True で示すのは実トークンのほうである")
    if not torch.equal(answer[:, 0], is_word):
        raise Mistake("True must mark exactly the real tokens of each sentence: check the second sentence too",
                      "True は各文の実トークンにだけ、過不足なく立てること。2 つ目の文も確かめること")


@exercise
def check_2(answer: object, ids: torch.Tensor) -> None:
    """Exercise 2: (cells masked_fill sets to -1e9, '?' cells left) in the whole batch `ids`."""
    ids = _token_ids(ids)
    real = ids != toy.PAD_ID                                           # (N, S)
    filled = int((~real).sum()) * ids.shape[1]                         # each pad column has S cells, one per query
    unsure = int(((~real).unsqueeze(2) & real.unsqueeze(1)).sum())     # pad query x real key
    two = Mistake("give two numbers: (number_filled, number_of_question_cells)",
                  "(number_filled, number_of_question_cells) の 2 つの数の組で答えること")
    counts = as_numbers(answer, two)
    if len(counts) != 2:
        raise wrong_kind(two, answer)
    if counts == (unsure, filled):
        raise Mistake("the two numbers are swapped: the filled cells come first",
                      "2 つの数が入れ替わっている。-1e9 で埋めたセルの数が先である")
    if counts[0] != filled:
        if counts[0] == int((~real).sum()):
            raise Mistake("that counts pad tokens; each pad column has one cell per query row",
                          "それはパッドのトークンの数である。各パッド列には、クエリの行ごとに 1 つずつセルがある")
        raise Mistake("count the cells of every pad column, in both sentences",
                      "両方の文で、すべてのパッド列のセルを数えること")
    if counts[1] != unsure:
        raise Mistake("the '?' cells are pad rows x real columns, in each sentence: count both",
                      "「?」のセルは、それぞれの文のパッド行 × 実トークンの列である。両方の文で数えること")


@exercise
def check_3(answer: object, scores: torch.Tensor, ids: torch.Tensor) -> None:
    """Exercise 3: `scores` with every cell whose query or key is a pad set to -1e9 (pad rows and pad columns)."""
    scores = arguments.floating(scores, "scores")
    ids = _token_ids(ids)
    real = ids != toy.PAD_ID
    both = real.unsqueeze(2) & real.unsqueeze(1)                       # (N, S, S)
    answer = as_tensor(answer, Mistake(f"the answer should be the masked scores, shape {tuple(scores.shape)}",
                                       f"答えはマスク後のスコアで、形状は {tuple(scores.shape)} になるはずである"),
                       scores.dtype)
    if answer.shape != scores.shape:
        raise Mistake(f"the answer should be the masked scores, shape {tuple(scores.shape)}; "
                      f"got {tuple(answer.shape)}",
                      f"答えはマスク後のスコアで、形状は {tuple(scores.shape)} になるはずである。"
                      f"書いた答えは {tuple(answer.shape)} になっている")
    if answer.isinf().any():
        raise Mistake("fill with -1e9, as the book does, not with -inf",
                      "-inf ではなく、書籍と同じく -1e9 で埋めること")
    pads_only = ~real.unsqueeze(2) & ~real.unsqueeze(1)                # pad query AND pad key: what `|` leaves
    if (pads_only.any() and torch.equal(answer[~pads_only], scores[~pads_only])
            and not torch.equal(answer[pads_only], scores[pads_only])):
        raise Mistake("only the cells whose query and key are both pads were filled: a cell is filled if its query "
                      "OR its key is a pad, so combine the two real-token masks with &, not |",
                      "埋まったのは、クエリとキーがどちらもパッドのセルだけである。クエリかキーのどちらかがパッドなら"
                      "そのセルは埋めるので、実トークンを表す 2 つのマスクを | ではなく & で組み合わせること")
    filled = answer[~both]
    if (filled.numel() and torch.equal(answer[both], scores[both]) and (filled == filled.flatten()[0]).all()
            and filled.flatten()[0] != -1e9):
        raise Mistake(f"the right cells are filled, but with {filled.flatten()[0].item():g}: fill with -1e9, as "
                      "the book does",
                      f"埋めるセルは合っているが、入っている値は {filled.flatten()[0].item():g} である。書籍と同じく "
                      "-1e9 で埋めること")
    if not torch.equal(answer[both], scores[both]):
        raise Mistake("the cells where query and key are both real words must keep their scores",
                      "クエリとキーがどちらも実トークンのセルでは、元のスコアをそのまま残すこと")
    if not (answer[~real.unsqueeze(2).expand_as(both)] == -1e9).all():
        raise Mistake("the pad rows must be -1e9 too, not only the pad columns",
                      "パッド列だけでなく、パッド行も -1e9 にすること")
    if not (answer[~both] == -1e9).all():
        raise Mistake("the pad columns must be -1e9 too, not only the pad rows",
                      "パッド行だけでなく、パッド列も -1e9 にすること")

# The texts chapter 01's notebook draws on its figures (titles, axis labels, legends), English as its code writes
# them, and their Japanese: `title=ch01.label("...")` draws either (helpers.language.labeller).
FIGURES_JA = {
    "scores = q·k^T / √d, nothing masked": "スコア = q·k^T / √d（マスクなし）",
}
label = labeller(FIGURES_JA)
