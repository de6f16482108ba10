"""The book site (tools/site.py) in Chromium, opened from disk with every request other than file:// refused.

`make site` builds every chapter (about a minute); these tests build, with the same code, a small site that has
every kind of page in both editions: chapter 0 (the chapter map and the table of contents), chapter 2 (figures,
math, a static explorer), the cheat sheet, the glossary and the run page. Checked: it builds without a warning
other than links to the chapters left out; no page loads anything from the network or logs a console error;
every local link and anchor resolves; the static explorer moves inside its page; the language switch opens the
twin; search finds an English and a Japanese word, its results in reading order; the pages fit a phone (375 px)
and a desktop; "Back to top" covers no text; on a phone the language switch is in the header bar. The book
(tools/pdf.py, `make pdf`) prints from this site with make pdf's code, a few of its pages: A4, fonts embedded, the
title first. Screenshots go to test-artifacts/site/."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from browserlib import ROOT, SITE_CHAPTERS, offline_page
from framelib import MEASURE, explorers_built, problems

from tools import site

CHAPTERS = SITE_CHAPTERS
LEFT_OUT = re.compile(r"\b(0[13-9]|1\d)_\w+\.ipynb")   # links to the chapters the small site leaves out
PHONE = {"width": 375, "height": 812}
DESKTOP = {"width": 1366, "height": 900}
ASSET = re.compile(r"<(?:script|img|iframe|source|link(?![^>]*rel=\"canonical\"))[^>]*\b(?:src|href)=\"https?://")


@pytest.fixture(scope="module")
def built(small_site) -> tuple[Path, dict[str, list[str]]]:
    return small_site   # conftest's build of CHAPTERS, shared with test_print.py


@pytest.fixture(scope="module")
def shots() -> Path:
    path = ROOT / "test-artifacts" / "site"
    path.mkdir(parents=True, exist_ok=True)
    return path


def all_pages(out: Path) -> list[Path]:
    return sorted(out.glob("*.html")) + sorted(out.glob("*/*.html"))


@pytest.mark.browser
def test_the_small_site_builds_clean_and_links_resolve(built):
    out, warnings = built
    for edition in site.EDITIONS:
        assert [w for w in warnings[edition] if not LEFT_OUT.search(w)] == [], f"{edition}: Sphinx warned"
        assert sorted(p.stem for p in (out / edition).glob("*.html")) == sorted(
            [*site.pages(edition, CHAPTERS), "genindex", "index", "search"])
    broken = [(page, target) for page, target in site.broken_links(out) if not LEFT_OUT.search(target)]
    assert not broken, f"local links with no target: {broken}"
    for page in all_pages(out):
        assert not ASSET.search(page.read_text(encoding="utf-8")), f"{page.name} loads something from the web"


@pytest.mark.browser
def test_every_page_loads_offline_with_no_console_error(browser, built):
    out, _ = built
    with offline_page(browser, DESKTOP) as offline:
        for page in all_pages(out):
            offline.page.goto(page.as_uri(), wait_until="load")
        offline.page.goto((out / "en" / "02_softmax_on_masked_rows.html").as_uri(), wait_until="load")
        offline.page.wait_for_function("() => document.querySelector('.katex')", timeout=10_000)  # math typeset
        assert not offline.errors, f"console or script errors: {offline.errors}"
        assert not offline.refused, f"the site asked the network for {offline.refused}"


@pytest.mark.browser
def test_a_static_explorer_moves_on_its_page(browser, built, shots):
    out, _ = built
    with offline_page(browser, DESKTOP) as offline:
        page = offline.page
        page.goto((out / "en" / "02_softmax_on_masked_rows.html").as_uri(), wait_until="load")
        frame = page.locator("iframe.site-explorer")
        assert frame.count() == 1
        frame.scroll_into_view_if_needed()
        explorer = frame.content_frame
        explorer.locator(".static-explorer.ready").wait_for(timeout=15_000)
        summary, tables = explorer.locator(".explorer-summary"), explorer.locator(".explorer-tables")
        before = (summary.inner_text(), tables.inner_html())
        explorer.locator('[data-name="n_pads"] input[type=range]').fill("4")        # the slider
        moved = (summary.inner_text(), tables.inner_html())
        assert moved[0] != before[0] and moved[1] != before[1], "moving the slider changes the summary and table"
        explorer.locator('[data-name="fill"] select').select_option(label="-inf")   # the dropdown
        assert tables.inner_html() != moved[1]
        assert explorer.locator("h1").is_hidden(), "embedded: no title of its own"
        page.wait_for_function("() => document.querySelector('iframe.site-explorer').style.height !== '32em'")
        box = frame.bounding_box()
        inner = explorer.locator("body").evaluate("body => body.getBoundingClientRect().height")
        assert box["height"] >= inner, "the iframe takes its content's height (no scrolling inside)"
        frame.screenshot(path=shots / "explorer-02-en.png")
        assert not offline.errors and not offline.refused, (offline.errors, offline.refused)


@pytest.mark.browser
def test_the_language_switch_opens_the_twin(browser, built):
    out, _ = built
    with offline_page(browser, DESKTOP) as offline:
        page = offline.page
        for name in ("02_softmax_on_masked_rows", "glossary", "search"):
            page.goto((out / "en" / f"{name}.html").as_uri(), wait_until="load")
            page.locator("article ~ * a.site-twin, .content-icon-container a.site-twin").first.click()
            page.wait_for_load_state("load")
            assert page.url.endswith(f"/ja/{name}.html") and page.locator("html").get_attribute("lang") == "ja"
            page.locator(".sidebar-language a.site-twin").click()   # and back, from the sidebar
            page.wait_for_load_state("load")
            assert page.url.endswith(f"/en/{name}.html")
        assert not offline.errors and not offline.refused, (offline.errors, offline.refused)


def search(page, edition_dir: Path, word: str) -> list[str]:
    """The hrefs of the site's search results for `word`, once the search has finished. Sphinx adds the results
    one by one, 5 ms apart, and only after the last does it replace the title "Searching" and its pulsing dots (a
    span) with "Search Results" (the summary line is no sign: the Japanese catalogue leaves it empty); reading the
    list earlier sees part of it."""
    page.goto(f"{(edition_dir / 'search.html').as_uri()}?q={word}", wait_until="load")
    page.wait_for_function("() => { const title = document.querySelector('#search-results h2');"
                           " return title && !title.querySelector('span'); }", timeout=15_000)
    results = page.locator("#search-results ul.search > li > a")
    return [results.nth(k).get_attribute("href") for k in range(results.count())]


@pytest.mark.browser
@pytest.mark.parametrize(("edition", "word", "expected"), [("en", "softmax", "02_softmax_on_masked_rows.html"),
                                                           ("ja", "埋め値", "glossary.html")])
def test_search_finds_a_word_offline(browser, built, edition, word, expected):
    out, _ = built
    with offline_page(browser, DESKTOP) as offline:
        page = offline.page
        found = search(page, out / edition, word)
        assert any(href.split("?")[0].split("#")[0].endswith(expected) for href in found), found
        assert not offline.errors and not offline.refused, (offline.errors, offline.refused)


@pytest.mark.browser
@pytest.mark.parametrize(("viewport", "shown"), [
    (PHONE, [("en", "00_start_here"), ("ja", "02_softmax_on_masked_rows"), ("ja", "cheatsheet")]),
    (DESKTOP, [("en", "02_softmax_on_masked_rows"), ("en", "cheatsheet")])], ids=["phone", "desktop"])
def test_pages_fit_the_screen(browser, built, shots, viewport, shown):
    out, _ = built
    with offline_page(browser, viewport) as offline:
        page = offline.page
        for edition, name in shown:
            page.goto((out / edition / f"{name}.html").as_uri(), wait_until="load")
            page.wait_for_timeout(300)   # the explorer's iframe takes its height
            width = page.evaluate("() => document.documentElement.scrollWidth")
            assert width <= viewport["width"], f"{edition}/{name}: the page is {width} px wide (scrolls sideways)"
            for image in page.locator("article img:not(.site-wide-figure)").all():   # a wide one scrolls inside
                box = image.bounding_box()
                assert box is None or box["x"] + box["width"] <= viewport["width"] + 1, f"{name}: a figure overflows"
            page.screenshot(path=shots / f"{edition}-{name}-{viewport['width']}.png", full_page=True)
        if viewport is PHONE:   # the chapter navigation is one tap away
            page.locator("label.nav-overlay-icon").click()
            page.locator(".sidebar-drawer a.reference", has_text="2.").first.wait_for(state="visible")
            page.wait_for_timeout(500)   # the drawer slides in
            page.screenshot(path=shots / "ja-menu-375.png")
        assert not offline.errors and not offline.refused, (offline.errors, offline.refused)


@pytest.mark.browser
def test_search_results_in_reading_order(browser, built):
    """A word in the text of every page (no title has it) scores the same everywhere: its results come in reading
    order (the sidebar's), not by title as strings ("2. Softmax..." before chapter 0's "Attention masks...")."""
    out, _ = built
    with offline_page(browser, DESKTOP) as offline:
        page = offline.page
        found = [href.split("?")[0].split("#")[0].removesuffix(".html") for href in search(page, out / "en", "torch")]
        assert found == [name for name in site.pages("en", CHAPTERS) if name in found], found
        assert found[:2] == [site.ROOT_DOC, "02_softmax_on_masked_rows"], found
        assert not offline.errors and not offline.refused, (offline.errors, offline.refused)


COVERED_TEXT = """(button) => {
  // every visible piece of text on the page (clipped by its scrolling ancestors) that the button's box overlaps
  const box = button.getBoundingClientRect();
  const hits = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.textContent.trim() || button.contains(node)) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    for (const rect of range.getClientRects()) {
      let [left, top, right, bottom] = [rect.left, rect.top, rect.right, rect.bottom];
      for (let up = node.parentElement; up; up = up.parentElement) {
        const style = getComputedStyle(up);
        if (style.visibility === "hidden") { right = left; break; }
        if (style.overflowX !== "visible" || style.overflowY !== "visible") {
          const clip = up.getBoundingClientRect();
          left = Math.max(left, clip.left); right = Math.min(right, clip.right);
          top = Math.max(top, clip.top); bottom = Math.min(bottom, clip.bottom);
        }
      }
      if (left < Math.min(right, box.right) && Math.max(left, box.left) < right &&
          Math.max(top, box.top) < Math.min(bottom, box.bottom)) hits.push(node.textContent.trim().slice(0, 40));
    }
  }
  return hits;
}"""


MIN_FIGURE = 220   # px: no figure shown shorter (or its own height): a panel of a wide one ~150 px (site frames.js)
FIGURES = """() => [...document.querySelectorAll("article div.cell_output img")].map(img => {
  const box = img.getBoundingClientRect(), out = img.closest("div.cell_output").getBoundingClientRect();
  return {height: box.height, natural: img.naturalHeight, outRight: out.right, src: img.src.slice(-40)};
})"""


def harness(folder: Path, edition: str, width: float, explorers: Path) -> Path:
    """A page holding, in iframes as wide as the site's text column (`width` px), every chapter's static explorer
    of the edition as the site embeds it (?embed#explorer-N), sized by the site's own script (site.js)."""
    from helpers import chapters

    source = explorers if edition == "en" else explorers / edition
    frames = "".join(
        f'<iframe class="site-explorer" title="{name}" src="{(source / (name[2:] + ".html")).as_uri()}'
        f'?embed#explorer-{k + 1}" style="display:block;width:{width}px;height:32em;border:1px solid #ccc"></iframe>'
        for chapter, name in chapters.chapters().items() for k in range(len(chapters.explorers(chapter))))
    script = (site.THEME / "static" / "site.js").read_text(encoding="utf-8")
    page = folder / f"frames-{edition}-{int(width)}.html"
    page.write_text(f"<!DOCTYPE html><html><body style='margin:0'>{frames}<script>{script}</script></body></html>",
                    encoding="utf-8")
    assert source.is_dir(), source
    return page


@pytest.mark.browser
@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_back_to_top_covers_no_text(browser, built, viewport):
    """Furo's "Back to top" button shows when the reader scrolls up: on a desktop it sits under the page's table
    of contents, over no text; on a phone (no such column) it is not shown."""
    out, _ = built
    with offline_page(browser, viewport) as offline:
        page = offline.page
        page.goto((out / "en" / "02_softmax_on_masked_rows.html").as_uri(), wait_until="load")
        page.mouse.wheel(0, 4000)
        page.wait_for_timeout(300)
        page.mouse.wheel(0, -400)   # scrolling up shows it (Furo's script)
        page.wait_for_function("() => document.documentElement.classList.contains('show-back-to-top')", timeout=5_000)
        button = page.locator(".back-to-top")
        if viewport is PHONE:
            assert button.is_hidden()
        else:
            assert button.is_visible()
            assert button.evaluate(COVERED_TEXT) == []
            button.click()
            page.wait_for_function("() => window.scrollY < 10", timeout=5_000)
        assert not offline.errors and not offline.refused, (offline.errors, offline.refused)


@pytest.mark.browser
@pytest.mark.parametrize("edition", site.EDITIONS)
def test_the_language_switch_is_in_a_phones_header(browser, built, edition):
    """On a phone the first language link is the one in the header bar, which stays in view as the page scrolls
    (the sidebar's is in the closed drawer)."""
    out, _ = built
    other = "ja" if edition == "en" else "en"
    with offline_page(browser, PHONE) as offline:
        page = offline.page
        page.goto((out / edition / "02_softmax_on_masked_rows.html").as_uri(), wait_until="load")
        first = page.locator("a.site-twin").first
        assert first.is_visible() and first.evaluate("a => Boolean(a.closest('.mobile-header'))")
        page.mouse.wheel(0, 3000)
        page.wait_for_timeout(300)
        box = first.bounding_box()
        assert box and 0 <= box["y"] and box["x"] + box["width"] <= PHONE["width"], box
        first.click()
        page.wait_for_load_state("load")
        assert page.url.endswith(f"/{other}/02_softmax_on_masked_rows.html")
        assert not offline.errors and not offline.refused, (offline.errors, offline.refused)


# The book (tools/pdf.py, `make pdf`) printed from this small site, with make pdf's code: a few of its pages only
# (each sheet costs Chromium about a third of a second; both whole books take minutes).
BOOK = {"en": [site.ROOT_DOC, "02_softmax_on_masked_rows", "cheatsheet"], "ja": [site.ROOT_DOC, "cheatsheet"]}
BOOK_SHEETS = {"en": range(16, 41), "ja": range(6, 21)}   # A4 sheets; measured: en 25, ja 9


def _flat(text: str) -> str:
    return "".join(text.split())


def _heading(edition: str, name: str) -> str:
    """A page's title as printed: its first heading (a chapter's first cell, a page's first line)."""
    folder = site.EDITIONS[edition]
    if (folder / f"{name}.md").exists():
        source = (folder / f"{name}.md").read_text(encoding="utf-8")
    else:
        source = nbformat.read(folder / f"{name}.ipynb", as_version=4).cells[0].source
    return source.splitlines()[0].lstrip("# ")


@pytest.mark.browser
@pytest.mark.parametrize("edition", site.EDITIONS)
def test_the_book_as_a_pdf(browser, built, tmp_path, edition):
    from tools import pdf

    out, _ = built
    path = pdf.print_edition(browser, out, edition, tmp_path, BOOK[edition])
    assert path == tmp_path / pdf.pdf_name(edition)
    book = pdf.read(path)
    assert len(book.sizes) in BOOK_SHEETS[edition], f"{len(book.sizes)} pages"
    assert all(pdf.is_a4(size) for size in book.sizes), sorted(set(book.sizes))
    assert book.fonts and all(font.embedded for font in book.fonts), [f.name for f in book.fonts if not f.embedded]
    title = _flat(site.TITLES[edition])
    assert book.title == site.TITLES[edition]
    assert title in _flat(book.texts[0]) and title in _flat(book.texts[1]), "the title page, then chapter 0"
    text = [_flat(page) for page in book.texts]
    assert not any("Skiptocontent" in page or "Backtotop" in page for page in text), "the site's navigation"
    starts = [next(k for k, page in enumerate(text) if page.startswith(_flat(heading)))
              for heading in [_heading(edition, name) for name in BOOK[edition][1:]]]
    assert 1 < starts[0] and starts == sorted(starts), "each page on sheets of its own, in reading order"
    if edition == "ja":   # a font with Japanese glyphs (the site's web font), and Japanese text that reads back
        assert any(sum("\u3040" <= c <= "\u9fff" for c in font.chars) >= 100 for font in book.fonts)
        assert "パディングマスク" in "".join(text)
    else:                 # chapter 2's figures and its explorer's first view (a picture in place of the iframe)
        assert book.images >= 3
        assert _flat(pdf.WORDS["en"]["explorer"]) in "".join(text)


@pytest.mark.browser
@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_every_explorer_and_figure_fits_the_sites_frames(browser, built, shots, viewport, tmp_path):
    """Each static explorer's document fits its iframe on a phone and a desktop, in both editions (no scrolling
    inside, nothing past the frame's right edge: wide tables reflow, or scroll inside their panel), measured from
    inside: chapter 2's on its page, every chapter's in a frame as wide as that page's; on a phone, no figure is
    shown shorter than MIN_FIGURE px (or its own height), and a wider one scrolls inside its output."""
    out, _ = built
    explorers = explorers_built()
    wrong = []
    with offline_page(browser, viewport) as offline:
        page = offline.page
        page.goto((out / "en" / "02_softmax_on_masked_rows.html").as_uri(), wait_until="load")
        frame = page.locator("iframe.site-explorer")
        frame.scroll_into_view_if_needed()
        frame.content_frame.locator(".static-explorer.ready").wait_for(timeout=15_000)
        page.wait_for_function("() => document.querySelector('iframe.site-explorer').style.height !== '32em'")
        page.wait_for_timeout(200)
        width = frame.evaluate("f => f.clientWidth")
        wrong += [f"02 on its page: {p}" for p in problems(frame.element_handle().content_frame().evaluate(MEASURE, 1))]
        frame.screenshot(path=shots / f"explorer-02-en-{viewport['width']}.png")
        if viewport is PHONE:
            for figure in page.evaluate(FIGURES):
                least = min(MIN_FIGURE, figure["natural"]) - 1
                assert figure["height"] >= least, f"a figure {figure['height']:.0f} px tall on a phone: {figure}"
                assert figure["outRight"] <= viewport["width"] + 1, f"a figure's output overflows: {figure}"
        for edition in site.EDITIONS:
            page.goto(harness(tmp_path, edition, width, explorers).as_uri(), wait_until="load")
            handles = page.locator("iframe.site-explorer").element_handles()
            assert len(handles) >= 15, "every chapter's explorer"
            for handle in handles:   # Chromium renders a frame out of view only once it scrolls into view
                handle.scroll_into_view_if_needed()
                handle.content_frame().wait_for_selector(".static-explorer.ready", timeout=15_000)
                page.wait_for_function("f => f.style.height !== '32em'", arg=handle, timeout=10_000)
                page.wait_for_timeout(100)
                found = problems(handle.content_frame().evaluate(MEASURE, 1))
                wrong += [f"{edition} {handle.get_attribute('title')}: {p}" for p in found]
            if viewport is PHONE and edition == "ja":
                page.locator("iframe.site-explorer").nth(10).screenshot(path=shots / "explorer-11-ja-375.png")
        assert not offline.errors and not offline.refused, (offline.errors, offline.refused)
    assert not wrong, f"{len(wrong)} explorer frames do not fit ({viewport['width']} px):\n" + "\n".join(wrong)
    assert width <= viewport["width"]
