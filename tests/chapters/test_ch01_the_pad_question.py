"""Chapter 1's explorer (helpers.chapters.ch01_the_pad_question): which cells the book's mask sets to -1e9."""

import re

import pytest
import torch

from helpers.chapters import ch01_the_pad_question as ch01
from helpers.exercises import Mistake
from helpers.explorer import view_html
from helpers.language import speaking
from tests.chapters import accepts_every_form, japanese_hint, refuses_the_wrong_kind


def test_pad_cells_view_counts():
    view = ch01.pad_cells_view()
    assert view.summary.startswith("2 pad(s): 10 cells set to -1e9")
    assert "6 '?' cells" in view.summary
    (panel,) = view.panels
    assert panel.masked.expand(5, 5).sum() == 10 and panel.framed.sum() == 6 and panel.mark == "?"
    assert view_html(view).count('class="masked"') == 10 and view_html(view).count('class="framed"') == 6
    assert "20 cells set to -1e9" in ch01.pad_cells_view(4).summary
    assert "4 '?' cells" in ch01.pad_cells_view(4).summary
    with pytest.raises(ValueError, match="every token is <pad>"):
        ch01.pad_cells_view(5)


def test_pad_cells_explorer_updates_and_reports_errors():
    box = ch01.pad_cells_explorer()
    assert "10 cells set to -1e9" in box.summary.value
    box.controls["n_pads"].value = 1
    assert box.summary.value.startswith("1 pad(s): 5 cells set to -1e9")
    box.controls["n_pads"].value = 5
    assert box.summary.value.startswith("<b>Not possible:</b> every token is &lt;pad&gt;")


IDS = torch.tensor([[2, 3, 4, 1, 1], [5, 6, 1, 1, 1]])           # the exercises' batch: 犬 猫 鳥 + 2 pads, 魚 馬 + 3


def test_check_1_accepts_the_mask_and_names_each_mistake():
    ch01.check_1.solution((IDS != 1).unsqueeze(1), IDS)
    wrong = {
        "bool tensor": (IDS != 1).unsqueeze(1).int(),
        "shape should be": IDS != 1,
        "opposite polarity": (IDS == 1).unsqueeze(1),
        "second sentence": (torch.tensor([[2, 3, 4, 1, 1]] * 2) != 1).unsqueeze(1),
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch01.check_1(answer, IDS)


def test_check_2_accepts_the_counts_and_names_each_mistake():
    ch01.check_2.solution((25, 12), IDS)
    for hint, answer in {"two numbers": 25, "swapped": (12, 25), "counts pad tokens": (5, 12),
                         "every pad column": (10, 12), "pad rows x real columns": (25, 6)}.items():
        with pytest.raises(Mistake, match=hint):
            ch01.check_2(answer, IDS)


def test_check_3_accepts_rows_and_columns_filled_and_names_each_mistake():
    ids = IDS[:1]
    scores = torch.randn(1, 5, 5, generator=torch.Generator().manual_seed(0))
    real = ids != 1
    both = real.unsqueeze(2) & real.unsqueeze(1)
    ch01.check_3.solution(scores.masked_fill(~both, -1e9), scores, ids)
    wrong = {
        "shape": scores[0],
        "not with -inf": scores.masked_fill(~both, float("-inf")),
        "pad rows must be -1e9 too": scores.masked_fill(~real.unsqueeze(1), -1e9),
        "pad columns must be -1e9 too, not only the pad rows": scores.masked_fill(~real.unsqueeze(2), -1e9),
        "keep their scores": scores.masked_fill(~both, -1e9).masked_fill(both, 0.0),
        # the learner's reading (#39): a fill of finfo.min, and | for &, got "the pad rows must be -1e9 too"
        r"the right cells are filled, but with -3\.40282e\+38: fill with -1e9": scores.masked_fill(
            ~both, torch.finfo(torch.float32).min),
        "the right cells are filled, but with -10000: fill": scores.masked_fill(~both, -1e4),
        re.escape("OR its key is a pad, so combine the two real-token masks with &, not |"): scores.masked_fill(
            (real.unsqueeze(2) | real.unsqueeze(1)) == 0, -1e9),
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch01.check_3(answer, scores, ids)


# --- the Japanese edition: the same views and checks speak Japanese (helpers.language) ---


def test_pad_cells_view_speaks_japanese_in_the_japanese_edition():
    english = ch01.pad_cells_view().summary
    with speaking("ja"):
        summary = ch01.pad_cells_view().summary
        assert summary.startswith("パッド 2 個：10 個のセル（パッド列）が -1e9 になり、6 個の「?」のセル")
        assert summary.endswith("スコアを保つ")
        with pytest.raises(ValueError, match="すべてのトークンが <pad> で"):
            ch01.pad_cells_view(5)
        box = ch01.pad_cells_explorer()
        box.controls["n_pads"].value = 5
        assert box.summary.value.startswith("<b>この組み合わせは不可：</b>すべてのトークンが &lt;pad&gt; で")
    assert ch01.pad_cells_view().summary == english and english.startswith("2 pad(s): 10 cells set to -1e9")



def test_the_checks_hints_are_japanese_in_the_japanese_edition():
    wrong_1 = {
        "bool テンソルにすること": (IDS != 1).unsqueeze(1).int(),
        "サイズ 1 のクエリの次元": IDS != 1,
        "極性が逆": (IDS == 1).unsqueeze(1),
        "2 つ目の文も確かめること": (torch.tensor([[2, 3, 4, 1, 1]] * 2) != 1).unsqueeze(1),
    }
    for hint, answer in wrong_1.items():
        assert hint in japanese_hint(ch01.check_1, answer, IDS)
    wrong_2 = {"2 つの数の組で答えること": 25, "入れ替わっている": (12, 25), "パッドのトークンの数": (5, 12),
               "すべてのパッド列のセルを数える": (10, 12), "パッド行 × 実トークンの列": (25, 6)}
    for hint, answer in wrong_2.items():
        assert hint in japanese_hint(ch01.check_2, answer, IDS)
    ids = IDS[:1]
    scores = torch.randn(1, 5, 5, generator=torch.Generator().manual_seed(0))
    real = ids != 1
    both = real.unsqueeze(2) & real.unsqueeze(1)
    wrong_3 = {
        "形状は (1, 5, 5) になるはず": scores[0],
        "-inf ではなく": scores.masked_fill(~both, float("-inf")),
        "パッド列だけでなく、パッド行も -1e9 にすること": scores.masked_fill(~real.unsqueeze(1), -1e9),
        "パッド行だけでなく、パッド列も -1e9 にすること": scores.masked_fill(~real.unsqueeze(2), -1e9),
        "元のスコアをそのまま残すこと": scores.masked_fill(~both, -1e9).masked_fill(both, 0.0),
        "埋めるセルは合っているが、入っている値は -3.40282e+38 である": scores.masked_fill(
            ~both, torch.finfo(torch.float32).min),
        "| ではなく & で組み合わせる": scores.masked_fill((real.unsqueeze(2) | real.unsqueeze(1)) == 0, -1e9),
    }
    for hint, answer in wrong_3.items():
        assert hint in japanese_hint(ch01.check_3, answer, scores, ids)


# --- #32: every form of a right answer is accepted; a wrong kind is named in the hint ---

def test_the_checks_accept_every_form_of_the_answer_and_name_a_wrong_kind():
    mask = (IDS != 1).unsqueeze(1)
    accepts_every_form(ch01.check_1, mask, IDS)
    accepts_every_form(ch01.check_2, (25, 12), IDS)
    ids, scores = IDS[:1], torch.randn(1, 5, 5, generator=torch.Generator().manual_seed(0))
    both = (ids != 1).unsqueeze(2) & (ids != 1).unsqueeze(1)
    accepts_every_form(ch01.check_3, scores.masked_fill(~both, -1e9), scores, ids)
    refuses_the_wrong_kind(ch01.check_1, mask.int().numpy(), "a numpy int32 array of shape (2, 1, 5)",
                           "numpy の int32 配列（形状 (2, 1, 5)）", IDS)
    refuses_the_wrong_kind(ch01.check_2, (25, "12"), "a tuple of length 2 holding a str", "str を含む tuple（長さ 2）",
                           IDS)
    refuses_the_wrong_kind(ch01.check_2, [25, 12, 0], "a list of length 3", "list（長さ 3）", IDS)
    refuses_the_wrong_kind(ch01.check_3, both, "a torch.bool tensor of shape (1, 5, 5)",
                           "torch.bool のテンソル（形状 (1, 5, 5)）", scores, ids)
