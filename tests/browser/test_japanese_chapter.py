"""One chapter of the Japanese edition in JupyterLab in Chromium: its explorer runs and responds, no error,
and the Japanese text is really drawn (its glyphs have width), not shown as empty boxes or left out."""

from __future__ import annotations

import nbformat
import pytest
from browserlib import NOTEBOOKS
from test_notebooks import Move, cells_to_run, check_move, error_outputs, notebook_open, run_cells

pytestmark = pytest.mark.browser

CHAPTER = "ja/01_the_pad_question.ipynb"
HEADING = "パッドの疑問"  # in the title cell of the Japanese chapter 1
# EXPECTED["01"][0] of test_notebooks, as the Japanese edition's explorer says it (helpers.language)
MOVE = Move("pads", presses=1, before="パッド 2 個：10 個のセル（パッド列）が -1e9 になり",
            after="パッド 3 個：15 個のセル（パッド列）が -1e9 になり、6 個の「?」のセル", masked=15)

# Width of the heading's text, and of the same number of a glyph no font has (U+E000, private use): a font
# that draws the Japanese gives a width different from the fallback's, and never zero.
GLYPH_WIDTHS = """text => {
    const canvas = document.createElement('canvas').getContext('2d');
    const heading = [...document.querySelectorAll('.jp-RenderedMarkdown h1')].find(h => h.innerText.includes(text));
    if (!heading) return null;
    canvas.font = getComputedStyle(heading).font;
    return [canvas.measureText(text).width, canvas.measureText('\\uE000'.repeat(text.length)).width,
            heading.getBoundingClientRect().width];
}"""


def test_japanese_chapter_runs_and_shows_japanese(lab, lab_page, chapters_kernel, artifacts):
    page, nb = lab_page, nbformat.read(NOTEBOOKS / CHAPTER, as_version=4)
    with notebook_open(page, lab, CHAPTER, nb, chapters_kernel) as page_errors:
        run_cells(page, CHAPTER, cells_to_run(nb))
        errors = error_outputs(page)
        assert not errors, f"{CHAPTER}: error output after running its explorer:\n" + "\n---\n".join(errors)
        widths = page.evaluate(GLYPH_WIDTHS, HEADING)
        assert widths is not None, f"{CHAPTER}: no rendered heading contains {HEADING!r}"
        text, missing, box = widths
        assert text > 0 and box > 0, f"{CHAPTER}: the Japanese heading has no width: {widths}"
        assert abs(text - missing) > 0.5, f"{CHAPTER}: the heading is drawn as missing-glyph boxes: {widths}"
        explorer = page.locator(".jp-NotebookPanel .explorer").first
        explorer.locator(".explorer-tables table").first.wait_for(timeout=15_000)
        explorer.scroll_into_view_if_needed()
        check_move(page, CHAPTER, explorer, MOVE)
        assert not page_errors, f"{CHAPTER}: errors in the page:\n" + "\n".join(page_errors)
        page.screenshot(path=artifacts / "ja_01_the_pad_question.png")
