"""One chapter of the Japanese edition in JupyterLab in Chromium: its explorer runs and responds in Japanese, no
error, the Japanese text is really drawn (its glyphs have width), not shown as empty boxes or left out, and a
wrong answer to an exercise gets its hint in Japanese."""

from __future__ import annotations

import nbformat
import pytest
from browserlib import NOTEBOOKS
from test_notebooks import (
    RUN_CELLS,
    RUN_TIMEOUT_MS,
    Move,
    cells_to_run,
    check_move,
    error_outputs,
    notebook_open,
    run_cells,
    wait_kernel_idle,
)

from helpers.chapters import ch01_the_pad_question as ch01
from helpers.explorer import REFUSED_JA
from helpers.language import speaking

pytestmark = pytest.mark.browser

CHAPTER = "ja/01_the_pad_question.ipynb"
HEADING = "パッドの疑問"  # in the title cell of the Japanese chapter 1

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


REFUSED = REFUSED_JA.replace("<b>", "").replace("</b>", "")  # as the page shows it (innerText)
EXERCISE_CELLS = ("c31", "c32")  # chapter 1's exercise 1: the answer cell and its check cell
WRONG_ANSWER = "ids_batch = torch.tensor([[2, 3, 4, 1, 1], [5, 6, 1, 1, 1]])\nanswer_1 = ids_batch == 1"
HINT = "✗ まだ正解ではない："  # how a wrong answer's one line starts in the Japanese edition

SET_SOURCE = """([index, source]) => {
    const notebook = window.jupyterapp.shell.currentWidget.content;
    notebook.model.cells.get(index).sharedModel.setSource(source);
}"""


def japanese_moves() -> list[Move]:
    """The moves of chapter 1's explorer (pads 2 -> 3 -> 5, refused -> 0), with the slider's label and the
    summaries the Japanese edition shows: what the explorer says when the helpers speak Japanese."""
    with speaking("ja"):
        summary = {n: ch01.pad_cells_view(n).summary for n in (0, 2, 3)}
        with pytest.raises(ValueError) as refused:
            ch01.pad_cells_view(5)
        box = ch01.pad_cells_explorer()
        label = box.controls["n_pads"].description       # the slider's label, as the Japanese edition shows it
        box.close()
    assert all(any(ord(c) > 0x3000 for c in text) for text in (*summary.values(), label)), (summary, label)
    return [Move(label, presses=1, before=summary[2], after=summary[3], masked=15),
            Move(label, presses=2, after=REFUSED + str(refused.value), refused=True),
            Move(label, presses=-5, after=summary[0], masked=0)]


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
        for move in japanese_moves():
            check_move(page, CHAPTER, explorer, move, refused_prefix=REFUSED)
        ids = [cell.id for cell in nb.cells]
        answer, check = (ids.index(i) for i in EXERCISE_CELLS)
        page.evaluate(SET_SOURCE, [answer, WRONG_ANSWER])
        run_cells(page, CHAPTER, [answer])
        page.evaluate(RUN_CELLS, [check])  # the check raises Mistake: that is what is tested
        wait_kernel_idle(page, RUN_TIMEOUT_MS)
        said = page.locator(".jp-NotebookPanel .jp-Cell").nth(check).locator(".jp-OutputArea-output").inner_text()
        assert said.startswith(HINT) and len(said.strip().splitlines()) == 1, f"{CHAPTER}: a wrong answer gave {said!r}"
        assert any(ord(c) > 0x3000 for c in said[len(HINT):]), f"{CHAPTER}: the hint is not in Japanese: {said!r}"
        assert not page_errors, f"{CHAPTER}: errors in the page:\n" + "\n".join(page_errors)
        page.screenshot(path=artifacts / "ja_01_the_pad_question.png")
