"""Chapter 17: the explorer and the exercise check (helpers/chapters/ch17_the_bug_gallery.py)."""

import pytest
import torch

from helpers.chapters import ch17_the_bug_gallery as ch17
from helpers.exercises import Mistake
from helpers.masks import causal_mask
from tests.chapters import accepts_every_form, japanese_hint, refuses_the_wrong_kind


def test_example_mask_is_the_causal_mask():
    assert torch.equal(ch17.example_mask(4), causal_mask(4))


def test_the_explorer_shows_its_view_and_moves():
    box = ch17.example_explorer()
    try:
        assert box.summary.value == "4 tokens: 6 cells blocked"
        box.controls["n"].value = 5
        assert box.summary.value == "5 tokens: 10 cells blocked"
    finally:
        box.close()
    with pytest.raises(ValueError, match="n must be from 1 to 8"):
        ch17.example_view(0)


def test_check_1():
    accepts_every_form(ch17.check_1, 6, 4)
    with pytest.raises(Mistake, match="above the diagonal"):
        ch17.check_1(5, 4)
    assert "対角線" in japanese_hint(ch17.check_1, 5, 4)
    refuses_the_wrong_kind(ch17.check_1, "6", "a str", "str", 4)
