"""Every slide of every deck of both editions (tools/slides.py) fits a 1280x720 window with all its fragments shown,
in Chromium, opened from disk with every request other than file:// refused. Lists the slides that do not fit.

A slide fits when its box (after the template's own fitting: smaller fonts for wide printed tables, zoom for tall
slides) lies inside the window, it does not scroll, and no code block, output or table inside it is cut off at
its right edge. Also reports how far the template zoomed slides out (the smallest zoom is MIN_ZOOM)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from browserlib import chapter_notebooks

from tools import series, slides

WINDOW = {"width": 1280, "height": 720}
MIN_ZOOM = 0.6   # the template's floor (tools/slides_template/offline/index.html.j2)

WALK = """() => {
  Reveal.configure({ transition: 'none', backgroundTransition: 'none' });
  const over = [], zooms = [], W = window.innerWidth, H = window.innerHeight;
  for (const section of Reveal.getSlides()) {
    const at = Reveal.getIndices(section);
    Reveal.slide(at.h, at.v, 999);                       // every fragment shown
    const box = section.getBoundingClientRect();
    const cut = [...section.querySelectorAll("pre, table, .jp-OutputArea-output")]
      .filter(e => e.scrollWidth > e.clientWidth + 1).length;
    const scrolls = section.scrollHeight > section.clientHeight + 1;
    zooms.push(parseFloat(section.style.zoom || "1"));
    if (box.top < -1 || box.bottom > H + 1 || box.left < -1 || box.right > W + 1 || cut || scrolls)
      over.push(`${at.h}/${at.v || 0}: ${Math.round(box.top)}..${Math.round(box.bottom)} px` +
                (cut ? `, ${cut} block(s) cut` : "") + (scrolls ? ", scrolls" : "") +
                ` "${section.innerText.trim().slice(0, 50).replace(/\\s+/g, " ")}"`);
  }
  return {over, zooms};
}"""


@pytest.mark.slow      # exports every deck of the edition and walks its ~460 slides: ~20 s each
@pytest.mark.browser
@pytest.mark.parametrize("edition", ["en", "ja"])
def test_every_slide_fits_1280x720(browser, tmp_path: Path, edition: str):
    notebooks = chapter_notebooks()
    if edition == "ja":  # the Japanese decks (make slides EDITION=ja): the same cells, the text in Japanese
        notebooks = [series.twin(path) for path in notebooks]
    decks = [slides.export(path, tmp_path, explorers=False) for path in notebooks]
    context = browser.new_context(viewport=WINDOW)
    context.route(re.compile(r"^(?!file:)[a-z][a-z0-9+.-]*:"), lambda route: route.abort())
    page = context.new_page()
    overflowing, zooms = [], []
    try:
        for deck in decks:
            page.goto(deck.as_uri(), wait_until="load")
            page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=15_000)
            found = page.evaluate(WALK)
            overflowing += [f"{deck.name} {slide}" for slide in found["over"]]
            zooms += found["zooms"]
    finally:
        context.close()
    assert len(zooms) > 300, "every deck was walked"
    assert min(zooms) >= MIN_ZOOM - 1e-9
    assert not overflowing, f"{len(overflowing)} of {len(zooms)} slides do not fit:\n" + "\n".join(overflowing)
