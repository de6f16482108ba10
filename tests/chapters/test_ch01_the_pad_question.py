"""Chapter 1's explorer (helpers.chapters.ch01_the_pad_question): which cells the book's mask sets to -1e9."""

import pytest

from helpers.chapters import ch01_the_pad_question as ch01
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
