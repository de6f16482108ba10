"""tools/slides.py: every chapter exports to a reveal.js deck (tests/browser/test_deck_offline.py opens one)."""

from __future__ import annotations

import re
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from helpers import chapters
from tools import series, slides


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
    figure = code("plt.plot([1, 2])\nplt.show()")
    figure.outputs = [nbformat.v4.new_output("display_data", data={"image/png": "iVBOR"})]
    long_figure = code("\n".join(["z = 1"] * (slides.FIGURE_CODE + 1)))
    long_figure.outputs = figure.outputs
    own = md("an explicit choice")
    own.metadata["slideshow"] = {"slide_type": "notes"}
    nb = nbformat.v4.new_notebook(cells=[
        md("# Title"), md("Goals."), code("x = 1"), md("Then this."), md("### Detail"), code(""),
        code("# NBVAL_IGNORE_OUTPUT\nexplorer()"), long_code, code("\n".join(["y = 1"] * 20)),
        figure, long_figure, md("## Exercise"),
        md("<details><summary>Solution</summary>\n\n`check(1)`\n</details>"), code("check(1)"), own,
        code("ch02.softmax_explorer()"), code("ch02.no_such_explorer()"),
    ])
    kinds = [cell.metadata["slideshow"]["slide_type"] for cell in slides.tag_cells(nb).cells]
    assert kinds == ["slide", "-", "fragment", "subslide", "subslide", "skip", "skip", "fragment", "skip",
                     "subslide", "subslide", "slide", "-", "skip", "notes", "subslide", "fragment"]
    tagged = slides.tag_cells(nb).cells
    assert tagged[7].metadata["tags"] == [slides.HIDE_INPUT] == tagged[10].metadata["tags"]
    assert "tags" not in tagged[9].metadata, "a short figure cell keeps its code"
    assert "slideshow" not in nb.cells[0].metadata, "tag_cells works on a copy"
    explorer = tagged[15]   # the live explorer's output gives way to the static explorer's iframe
    assert explorer.metadata["tags"] == [slides.HIDE_INPUT]
    assert [o["data"]["text/html"] for o in explorer.outputs] == [
        slides.explorer_output("02", 0)["data"]["text/html"]]
    assert (f'src="explorers/02_softmax_on_masked_rows.html?embed&amp;deck&amp;room={slides.EXPLORER_HEIGHT}'
            '#explorer-1"' in explorer.outputs[0].data["text/html"])


@pytest.mark.slow   # nbconvert on every chapter: in make test, not in make unit
@pytest.mark.parametrize("path", series.chapters(), ids=lambda p: p.stem)
def test_every_chapter_exports_a_deck(path: Path, tmp_path: Path):
    nb = nbformat.read(path, as_version=4)
    deck = slides.export(path, tmp_path, explorers=False)   # tools/static_explorers' own tests export those
    html = deck.read_text(encoding="utf-8")
    parser = Sections()
    parser.feed(html)
    assert (parser.slides, parser.subslides) == expected(nb)
    assert parser.slides >= 2, f"{path.name}: a deck of {parser.slides} slide(s)"
    assert "NBVAL_IGNORE_OUTPUT" not in html, "cells marked NBVAL_IGNORE_OUTPUT are skipped"
    frames = re.findall(r'<iframe class="deck-explorer"[^>]*? src="([^"?]+)\?embed&amp;deck&amp;room=\d+'
                        r'#explorer-(\d+)"', html)
    chapter = series.number(path)
    assert frames == [(slides.explorer_file(chapter), str(k + 1))
                      for k in range(len(chapters.explorers(chapter)))], "each explorer on its slide"
    assert "run this cell to see it live" not in html
    text = unescape(re.sub(r"<[^>]+>", "", html))
    for cell in nb.cells:  # every section heading is on a slide
        if cell.cell_type == "markdown" and re.match(r"#{1,2} ", cell.source):
            heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", cell.source.split("\n", 1)[0].lstrip("# "))
            title = re.sub(r"[*`]", "", heading).strip()   # a link's text, not its brackets; other brackets stay
            assert title[:30] in text, f"{path.name}: heading {title!r} missing from the deck"


def test_deck_loads_nothing_from_the_network_and_links_decks(tmp_path: Path):
    """Every script, style sheet and image is local (or inline); links between chapters open their decks."""
    path = series.chapters()[1]
    html = slides.export(path, tmp_path).read_text(encoding="utf-8")
    loads = re.findall(r"<(?:script|img|link|iframe)\b[^>]*?\b(?:src|href)=\"([^\"?#]+)[^\"]*\"", html)
    assert slides.explorer_file("01") in loads, "the static explorer's iframe"
    remote = [url for url in loads if re.match(r"(https?:)?//", url)]
    assert not remote, f"the deck loads {remote}"
    for url in loads:
        if not url.startswith("data:"):
            assert (tmp_path / url).is_file(), f"the deck loads {url}, which export() did not write"
    assert "require(" not in html and "MathJax" not in html.split("</head>")[1]
    links = re.findall(r"<a\b[^>]*href=\"([^\"]+)\"", html)
    assert any(link.endswith(".slides.html") for link in links), "chapter links point to the decks"
    assert not [link for link in links if ".ipynb" in link and not link.startswith("http")]
    assert slides.deck_links("[next](02_x.ipynb) [a](03_y.ipynb#step-2) [web](https://h/z.ipynb)") == (
        "[next](02_x.slides.html) [a](03_y.slides.html#step-2) [web](https://h/z.ipynb)")


def test_too_much_text_for_one_slide_starts_a_subslide():
    md = nbformat.v4.new_markdown_cell
    half = "word " * (slides.SLIDE_TEXT // 10)
    nb = nbformat.v4.new_notebook(cells=[md("# Title"), md(half), md(half), md(half + half), md("## Next"), md(half)])
    kinds = [cell.metadata["slideshow"]["slide_type"] for cell in slides.tag_cells(nb).cells]
    assert kinds == ["slide", "-", "subslide", "subslide", "slide", "-"]


def test_a_long_markdown_cell_is_cut_at_blank_lines():
    para = "word " * 100 + "end."
    fenced = "```\nx = 1\n\ny = 2\n```"
    source = "\n\n".join([para, "| a | b |\n|---|---|\n| 1 | 2 |", para, fenced, para, para])
    parts = slides.split_markdown(source, limit=1600)   # code and table lines count CODE_LINE each
    assert "\n\n".join(parts) == source, "nothing lost, cut only at blank lines"
    assert len(parts) == 2 and any(fenced in part for part in parts) and "| 1 | 2 |" in parts[0], "a fence stays whole"
    assert slides.split_markdown(para) == [para]
    html = "<details>\n\n" + "\n\n".join([para] * 6) + "\n</details>"
    assert slides.split_markdown(html, limit=500) == [html], "raw HTML blocks stay whole"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# T\n\n" + "\n\n".join([para] * 8))])
    kinds = [cell.metadata["slideshow"]["slide_type"] for cell in slides.tag_cells(nb).cells]
    assert kinds[0] == "slide" and len(kinds) > 1 and set(kinds[1:]) == {"subslide"}


def test_a_long_table_and_a_long_output_go_on_to_the_next_subslides():
    """A markdown table longer than TABLE_ROWS rows goes on under the same header; printed output longer than
    OUTPUT_LINES lines (wrapped at LINE_CHARS) goes on in copies of its cell with the input hidden; nothing is lost."""
    rows = [f"| {k} | row {k} |" for k in range(30)]
    source = "Before.\n\n| n | text |\n|---|---|\n" + "\n".join(rows) + "\n\nAfter."
    parts = slides.split_table(source, limit=12)
    assert len(parts) == 3 and parts[0].startswith("Before.") and parts[-1].endswith("After.")
    assert all(part.count("| n | text |") == 1 for part in parts)
    assert sum(part.count("| row ") for part in parts) == 30
    assert slides.split_table("no table here") == ["no table here"]
    printed = "".join(f"line {k}\n" for k in range(50)) + "x" * (3 * slides.LINE_CHARS) + "\n"
    code = nbformat.v4.new_code_cell("print(many)")
    code.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# T"), code])
    tagged = slides.tag_cells(nb).cells
    assert "".join(c.outputs[0].text for c in tagged[1:]) == printed
    assert all(slides.shown_lines(c.outputs[0].text) <= slides.OUTPUT_LINES for c in tagged[1:])
    assert len(tagged) == 4 and [c.metadata["slideshow"]["slide_type"] for c in tagged[2:]] == ["subslide"] * 2
    assert all(c.metadata["tags"] == [slides.HIDE_INPUT] for c in tagged[2:]) and "tags" not in tagged[1].metadata
    ignored = nbformat.v4.new_code_cell("# NBVAL_IGNORE_OUTPUT\nprint(many)")
    ignored.outputs = code.outputs
    assert len(slides.tag_cells(nbformat.v4.new_notebook(cells=[ignored])).cells) == 1, "a skipped cell stays whole"


def test_the_japanese_edition_exports_its_own_decks(tmp_path: Path):
    """make slides EDITION=ja: notebooks/ja/ into a folder of its own, <html lang="ja">, links and explorer there."""
    path = series.twin(series.chapters()[1])
    assert slides.main([str(path), "--edition", "ja", "--out", str(tmp_path)]) == 0
    html = series.deck(path, tmp_path).read_text(encoding="utf-8")
    assert '<html lang="ja">' in html
    assert (tmp_path / slides.explorer_file("01")).is_file() and (tmp_path / "katex" / "katex.min.js").is_file()
    assert f'src="{slides.explorer_file("01")}?embed&amp;deck&amp;room={slides.EXPLORER_HEIGHT}#explorer-1"' in html
    assert re.search(r'href="02_softmax_on_masked_rows\.slides\.html', html), "links open the Japanese decks"
