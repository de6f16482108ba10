"""Chapter 1's explorer (helpers.chapters.ch01_the_pad_question): which cells the book's mask sets to -1e9."""

import pytest
import torch

from helpers.chapters import ch01_the_pad_question as ch01
from helpers.exercises import Mistake
from helpers.explorer import view_html


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
        "keep their scores": scores.masked_fill(~both, -1e9).masked_fill(both, 0.0),
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch01.check_3(answer, scores, ids)
