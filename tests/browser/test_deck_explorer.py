"""A deck's static explorer (tools/slides.py puts it in an iframe on its own sub-slide) moves in Chromium, opened
from disk with every request other than file:// refused, and the deck logs no console error."""

from __future__ import annotations

from pathlib import Path

import pytest
from browserlib import offline_page

from tools import series, slides

DECK_VIEWPORT = {"width": 1280, "height": 720}   # a projector


@pytest.mark.browser
def test_a_decks_explorer_moves_offline(browser, artifacts, tmp_path: Path):
    deck = slides.export(series.notebooks() / "02_softmax_on_masked_rows.ipynb", tmp_path)
    with offline_page(browser, DECK_VIEWPORT) as offline:
        page, errors, refused = offline.page, offline.errors, offline.refused
        page.goto(deck.as_uri(), wait_until="load")
        page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=15_000)
        page.evaluate("() => Reveal.configure({ transition: 'none' })")
        frames = page.locator("iframe.deck-explorer")
        assert frames.count() == 1, "chapter 2's explorer is on a slide"
        page.evaluate("f => { const at = Reveal.getIndices(f.closest('section')); Reveal.slide(at.h, at.v, 99); }",
                      frames.first.element_handle())
        box = frames.first.bounding_box()
        assert box and box["y"] >= 0 and box["y"] + box["height"] <= DECK_VIEWPORT["height"], box
        explorer = frames.first.content_frame
        explorer.locator(".static-explorer.ready").wait_for(timeout=15_000)
        summary = explorer.locator(".explorer-summary")
        before = summary.inner_text()
        assert before and "could not start" not in before
        explorer.locator('[data-name="n_pads"] input[type=range]').fill("4")      # the slider moves
        assert summary.inner_text() != before, "moving the slider changes the summary"
        moved = summary.inner_text()
        explorer.locator('[data-name="fill"] select').select_option(label="-inf")  # so does the dropdown
        assert summary.inner_text() != moved
        assert explorer.locator("h1").is_hidden(), "embedded: no page title inside the slide"
        page.screenshot(path=artifacts / "slides-02-explorer.png")
        assert not errors, f"console errors: {errors}"
        assert not refused, f"the deck asked the network for {refused}"
