"""tools/slides.py: every chapter exports to a reveal.js deck, and one deck renders in Chromium (offline)."""

from __future__ import annotations

import importlib.util
import re
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from browserlib import ROOT, VIEWPORT, chapter_notebooks

spec = importlib.util.spec_from_file_location("slides", ROOT / "tools" / "slides.py")
slides = importlib.util.module_from_spec(spec)
spec.loader.exec_module(slides)


class Sections(HTMLParser):
    """Counts reveal.js slides (top-level <section>) and sub-slides (nested) inside div.slides."""

    def __init__(self) -> None:
        super().__init__()
        self.depth, self.inside, self.slides, self.subslides = 0, False, 0, 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "div" and ("class", "slides") in attrs:
            self.inside = True
        elif tag == "section" and self.inside:
            self.depth += 1
            self.slides += self.depth == 1
            self.subslides += self.depth == 2

    def handle_endtag(self, tag: str) -> None:
        if tag == "section" and self.inside:
            self.depth -= 1


def expected(nb: nbformat.NotebookNode) -> tuple[int, int]:
    """(slides, sub-slides) the tagged notebook should give: a slide holds at least one sub-slide."""
    kinds = [cell.metadata["slideshow"]["slide_type"] for cell in slides.tag_cells(nb).cells]
    return kinds.count("slide"), kinds.count("slide") + kinds.count("subslide")


def test_rules_on_a_small_notebook():
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    long_code = code("\n".join(f"x{i} = {i}" for i in range(slides.LONG_CODE + 1)))
    long_code.outputs = [nbformat.v4.new_output("stream", text="done\n")]
    own = md("an explicit choice")
    own.metadata["slideshow"] = {"slide_type": "notes"}
    nb = nbformat.v4.new_notebook(cells=[
        md("# Title"), md("Goals."), code("x = 1"), md("Then this."), md("### Detail"), code(""),
        code("# NBVAL_IGNORE_OUTPUT\nexplorer()"), long_code, code("\n".join(["y = 1"] * 20)),
        md("## Exercise"), md("<details><summary>Solution</summary>\n\n`check(1)`\n</details>"), code("check(1)"),
        own,
    ])
    kinds = [cell.metadata["slideshow"]["slide_type"] for cell in slides.tag_cells(nb).cells]
    assert kinds == ["slide", "-", "fragment", "subslide", "subslide", "skip", "skip", "fragment", "skip",
                     "slide", "-", "skip", "notes"]
    assert slides.tag_cells(nb).cells[7].metadata["tags"] == [slides.HIDE_INPUT]
    assert "slideshow" not in nb.cells[0].metadata, "tag_cells works on a copy"


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.stem)
def test_every_chapter_exports_a_deck(path: Path, tmp_path: Path):
    nb = nbformat.read(path, as_version=4)
    deck = slides.export(path, tmp_path)
    html = deck.read_text(encoding="utf-8")
    parser = Sections()
    parser.feed(html)
    assert (parser.slides, parser.subslides) == expected(nb)
    assert parser.slides >= 2, f"{path.name}: a deck of {parser.slides} slide(s)"
    assert "NBVAL_IGNORE_OUTPUT" not in html, "explorer cells are skipped"
    text = unescape(re.sub(r"<[^>]+>", "", html))
    for cell in nb.cells:  # every section heading is on a slide
        if cell.cell_type == "markdown" and re.match(r"#{1,2} ", cell.source):
            title = re.sub(r"[*`]|\[|\]\([^)]*\)", "", cell.source.split("\n", 1)[0].lstrip("# ")).strip()
            assert title[:30] in text, f"{path.name}: heading {title!r} missing from the deck"


@pytest.mark.browser
def test_a_deck_renders_in_chromium(browser, artifacts, tmp_path: Path):
    """Load a deck from file:// with the network cut (reveal.js comes from a CDN): its slides are in the DOM."""
    notebooks = chapter_notebooks()
    path = next((p for p in notebooks if not p.name.startswith("00")), notebooks[0])
    nb = nbformat.read(path, as_version=4)
    deck = slides.export(path, tmp_path)
    n_slides, n_subslides = expected(nb)
    context = browser.new_context(viewport=VIEWPORT)
    context.route(re.compile(r"^https?://"), lambda route: route.abort())  # offline, whatever the machine has
    page = context.new_page()
    try:
        page.goto(deck.as_uri(), wait_until="load")
        assert page.locator(".reveal .slides > section").count() == n_slides
        assert page.locator(".reveal .slides > section > section").count() == n_subslides
        title = nb.cells[0].source.split("\n", 1)[0].lstrip("# ").strip()
        first = page.locator(".reveal .slides > section").first
        assert title in first.inner_text(), f"the first slide shows {first.inner_text()[:200]!r}"
        figures = page.locator(".reveal .slides img")
        assert figures.count() >= 1, "the deck shows the chapter's figures"
        assert figures.first.evaluate("img => img.naturalWidth") > 0, "embedded PNGs decode"
        page.screenshot(path=artifacts / f"slides-{path.stem}.png")
    finally:
        context.close()
