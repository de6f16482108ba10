"""One chapter's reveal.js deck (tools/slides.py) opened in Chromium from disk, offline: it starts, and every
figure fits the screen. tests/test_slides.py checks the export of every chapter."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from browserlib import VIEWPORT, chapter_notebooks

from tools import slides


@pytest.mark.browser
def test_a_deck_starts_offline_and_its_figure_fits(browser, artifacts, tmp_path: Path):
    """Open a deck from file:// with every http(s) request refused: reveal.js starts, the figure slide fits."""
    notebooks = chapter_notebooks()
    path = next((p for p in notebooks if not p.name.startswith("00")), notebooks[0])
    nb = nbformat.read(path, as_version=4)
    deck = slides.export(path, tmp_path)
    kinds = [cell.metadata["slideshow"]["slide_type"] for cell in slides.tag_cells(nb).cells]
    n_slides, n_subslides = kinds.count("slide"), kinds.count("slide") + kinds.count("subslide")
    context = browser.new_context(viewport=VIEWPORT)
    refused = []

    def refuse(route):
        refused.append(route.request.url)
        route.abort()

    context.route(re.compile(r"^(https?|wss?)://"), refuse)  # offline, whatever the machine has
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(deck.as_uri(), wait_until="load")
        page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=15_000)
        assert page.locator(".reveal.ready").count() == 1
        assert not errors, f"script errors: {errors}"
        assert not refused, f"the deck asked the network for {refused}"
        assert page.evaluate("() => Reveal.getHorizontalSlides().length") == n_slides
        assert page.locator(".reveal .slides > section > section").count() == n_subslides
        title = nb.cells[0].source.split("\n", 1)[0].lstrip("# ").strip()
        assert title.lower() in page.locator(".reveal .slides section.present").first.inner_text().lower()
        figures = page.locator(".reveal .slides section:not(.stack) img")
        assert figures.count() >= 1, "the deck shows the chapter's figures"
        page.evaluate("() => Reveal.configure({ transition: 'none' })")
        for i in range(figures.count()):  # each figure's slide, all fragments shown: the figure is in view
            figure = figures.nth(i)
            show = "img => { const at = Reveal.getIndices(img.closest('section')); Reveal.slide(at.h, at.v, 99); }"
            page.evaluate(show, figure.element_handle())
            page.wait_for_timeout(300)
            assert figure.evaluate("img => img.naturalWidth") > 0, "embedded PNGs decode"
            box = figure.bounding_box()
            assert box and box["height"] > 50, f"figure {i} is not on screen"
            assert box["y"] >= 0 and box["y"] + box["height"] <= VIEWPORT["height"], f"figure {i} at {box}"
            assert box["x"] >= 0 and box["x"] + box["width"] <= VIEWPORT["width"], f"figure {i} at {box}"
        wrap = page.evaluate("() => [...document.querySelectorAll('.reveal pre')]"
                             ".filter(pre => !pre.closest('.jp-OutputArea-output'))"
                             ".map(pre => getComputedStyle(pre).whiteSpace)")
        assert wrap and set(wrap) == {"pre-wrap"}, "long code lines wrap"
        # printed lines wrap too, except a table the template shrank to fit (test_deck_fit.py checks each slide)
        printed = page.evaluate("() => [...document.querySelectorAll('.reveal .jp-OutputArea-output pre')]"
                                ".map(pre => [getComputedStyle(pre).whiteSpace, pre.style.fontSize !== ''])")
        assert printed and all(space == "pre-wrap" or shrunk for space, shrunk in printed)
        page.screenshot(path=artifacts / f"slides-{path.stem}-figure.png")
        page.keyboard.press("ArrowRight")
        page.wait_for_timeout(900)
        assert page.evaluate("() => Reveal.getIndices()") != {"h": 0, "v": 0}
    finally:
        context.close()
