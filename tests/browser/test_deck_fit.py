"""Every slide of every deck of both editions (tools/slides.py) fits a 1280x720 window with all its fragments shown,
in Chromium, opened from disk with every request other than file:// refused. Lists the slides that do not fit.

A slide fits when its box (after the template's own fitting: smaller fonts for wide printed tables, zoom for tall
slides) lies inside the window, it does not scroll, and no code block, output or table inside it is cut off at
its right edge. No text on it is smaller than framelib.MIN_TEXT_PX on the screen (KaTeX's math keeps its own
sizes: its sub- and superscripts are 0.7 of the text). Each explorer slide's frame is measured from inside its
document, with the decks' static explorers (framelib.explorers_built): its view fits the frame (no scrolling, nothing
past its right edge) and its text is at least MIN_TEXT_PX on the screen. Also reports how far the template zoomed
slides out (the smallest zoom is MIN_ZOOM)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from browserlib import chapter_notebooks
from framelib import MEASURE, MIN_TEXT_PX, explorers_built, problems

from helpers import chapters
from tools import series, slides

WINDOW = {"width": 1280, "height": 720}
MIN_ZOOM = 0.6   # the template's floor (tools/slides_template/offline/index.html.j2)

WALK = """(minText) => {
  Reveal.configure({ transition: 'none', backgroundTransition: 'none' });
  const over = [], small = [], zooms = [], W = window.innerWidth, H = window.innerHeight;
  for (const section of Reveal.getSlides()) {
    const at = Reveal.getIndices(section);
    Reveal.slide(at.h, at.v, 999);                       // every fragment shown
    const box = section.getBoundingClientRect();
    const cut = [...section.querySelectorAll("pre, table, .jp-OutputArea-output")]
      .filter(e => e.scrollWidth > e.clientWidth + 1).length;
    const scrolls = section.scrollHeight > section.clientHeight + 1;
    zooms.push(parseFloat(section.style.zoom || "1"));
    const name = `${at.h}/${at.v || 0}`, text = `"${section.innerText.trim().slice(0, 50).replace(/\\s+/g, " ")}"`;
    if (box.top < -1 || box.bottom > H + 1 || box.left < -1 || box.right > W + 1 || cut || scrolls)
      over.push(`${name}: ${Math.round(box.top)}..${Math.round(box.bottom)} px` +
                (cut ? `, ${cut} block(s) cut` : "") + (scrolls ? ", scrolls" : "") + ` ${text}`);
    // the text's size on the screen: its font size times the scale of reveal.js and the slide's zoom
    let least = Infinity, where = "";
    const walker = document.createTreeWalker(section, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const e = n.parentElement;
      if (!n.textContent.trim() || !e || !e.offsetWidth || e.closest(".katex")) continue;
      const px = parseFloat(getComputedStyle(e).fontSize) * e.getBoundingClientRect().width / e.offsetWidth;
      if (px < least) { least = px; where = n.textContent.trim().slice(0, 40); }
    }
    if (least < minText) small.push(`${name}: ${least.toFixed(1)} px "${where}"`);
  }
  return {over, small, zooms};
}"""


@pytest.fixture(scope="module")
def explorers() -> Path:
    return explorers_built()


def measure_explorers(page) -> list[str]:
    """Each explorer frame of the open deck, shown on its slide and measured from inside its document."""
    found = []
    frames = page.locator("iframe.deck-explorer")
    for k in range(frames.count()):
        handle = frames.nth(k).element_handle()
        page.evaluate("f => { const at = Reveal.getIndices(f.closest('section')); Reveal.slide(at.h, at.v, 999); }",
                      handle)
        frame = handle.content_frame()
        frame.wait_for_selector(".static-explorer.ready", timeout=15_000)
        try:   # the deck gives the frame its content's height (the page posts it)
            frame.wait_for_function("() => document.documentElement.scrollHeight <= innerHeight + 1", timeout=3_000)
        except Exception:   # noqa: BLE001 - measured below, and reported
            pass
        scale = handle.evaluate("f => f.getBoundingClientRect().width / f.clientWidth")
        wrong = problems(frame.evaluate(MEASURE, scale), min_text=MIN_TEXT_PX)
        if wrong:
            found.append(f"explorer {k + 1}: " + "; ".join(wrong))
    return found


# exports every deck of the edition, walks its ~380 slides and its explorer frames: 85-110 s each on a busy
# 2-core machine (the frames ~8 s of it)
@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("edition", ["en", "ja"])
def test_every_slide_fits_1280x720(browser, explorers, tmp_path: Path, edition: str):
    notebooks = chapter_notebooks()
    if edition == "ja":  # the Japanese decks (make slides EDITION=ja): the same cells, the text in Japanese
        notebooks = [series.twin(path) for path in notebooks]
    decks = [slides.export(path, tmp_path, explorers=False) for path in notebooks]
    shutil.copytree(series.edition_folder(explorers, edition), tmp_path / slides.EXPLORERS_DIR,
                    ignore=shutil.ignore_patterns("ja", ".made-from"))   # the edition's static explorers
    context = browser.new_context(viewport=WINDOW)
    context.route(re.compile(r"^(?!file:)[a-z][a-z0-9+.-]*:"), lambda route: route.abort())
    page = context.new_page()
    overflowing, small, cut, zooms, measured = [], [], [], [], 0
    try:
        for deck in decks:
            page.goto(deck.as_uri(), wait_until="load")
            page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=15_000)
            found = page.evaluate(WALK, MIN_TEXT_PX)
            overflowing += [f"{deck.name} {slide}" for slide in found["over"]]
            small += [f"{deck.name} {slide}" for slide in found["small"]]
            zooms += found["zooms"]
            measured += page.locator("iframe.deck-explorer").count()
            cut += [f"{deck.name} {problem}" for problem in measure_explorers(page)]
    finally:
        context.close()
    assert len(zooms) > 300, "every deck was walked"
    assert measured >= sum(1 for path in notebooks if chapters.explorers(series.number(path))), measured
    assert min(zooms) >= MIN_ZOOM - 1e-9
    assert not overflowing, f"{len(overflowing)} of {len(zooms)} slides do not fit:\n" + "\n".join(overflowing)
    assert not small, f"{len(small)} slides hold text below {MIN_TEXT_PX} px:\n" + "\n".join(small)
    assert not cut, f"{len(cut)} explorer frames do not fit, or draw small text:\n" + "\n".join(cut)
