"""The cheat sheet prints on ONE A4 page, in both editions, with no text smaller than 8 pt.

Chromium opens the cheat sheet page of the small book site (conftest's small_site, the build the site tests use),
from disk with every other request refused, and prints it to PDF on A4 (the page's own @page size:
tools/site_theme/static/print.css). Checked: the PDF has exactly one page; and, in print media emulation, every
element that holds visible text has a computed font size of at least 8 pt (1 pt = 4/3 CSS px). The PDFs go to
test-artifacts/print/."""

from __future__ import annotations

import re

import pytest
from browserlib import ROOT, offline_page

from tools import site

A4 = {"width": 794, "height": 1123}   # CSS px at 96 dpi: 210 x 297 mm
MIN_PT = 8.0
PAGE_OBJECT = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")
PAGE_COUNT = re.compile(rb"/Type\s*/Pages\b[^>]*?/Count\s+(\d+)|/Count\s+(\d+)[^>]*?/Type\s*/Pages\b", re.S)

# The smallest computed font size of any element with visible text of its own, in pt, and that element's text.
SMALLEST_TEXT = """() => {
  let smallest = null;
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent.trim();
    const element = node.parentElement;
    if (!text || !element || !element.checkVisibility({visibilityProperty: true})) continue;
    if (!element.getClientRects().length) continue;
    const pt = parseFloat(getComputedStyle(element).fontSize) * 0.75;
    if (smallest === null || pt < smallest.pt) smallest = {pt: pt, text: text.slice(0, 60), tag: element.tagName};
  }
  return smallest;
}"""


def pdf_pages(pdf: bytes) -> int:
    """The number of pages of a PDF as Chromium writes it: its page objects, which its page tree's /Count repeats."""
    objects = len(PAGE_OBJECT.findall(pdf))
    counts = {int(a or b) for a, b in PAGE_COUNT.findall(pdf)}
    assert counts == {objects}, f"page objects {objects}, /Count {counts}: not a PDF this test can read"
    return objects


@pytest.fixture(scope="module")
def prints():
    path = ROOT / "test-artifacts" / "print"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.mark.browser
@pytest.mark.parametrize("edition", site.EDITIONS)
def test_the_cheat_sheet_prints_on_one_a4_page(browser, small_site, prints, edition):
    out, _ = small_site
    with offline_page(browser, A4) as offline:
        page = offline.page
        page.goto((out / edition / "cheatsheet.html").as_uri(), wait_until="load")
        page.evaluate("() => document.fonts.ready")
        page.emulate_media(media="print")
        assert page.locator(".print-one-page").count() == 1, "the page carries print.css's one-page mark"
        assert page.locator("#dead-rows").count() == 1, "the dead-row table's anchor (the chapters link to it)"
        smallest = page.evaluate(SMALLEST_TEXT)
        assert smallest is not None and smallest["pt"] >= MIN_PT, f"{edition}: text below {MIN_PT} pt: {smallest}"
        pdf = page.pdf(prefer_css_page_size=True, print_background=False)
        (prints / f"cheatsheet-{edition}.pdf").write_bytes(pdf)
        assert b"/MediaBox [0 0 595" in pdf or b"/MediaBox [0 0 594" in pdf, "A4: 595 x 842 pt"
        assert pdf_pages(pdf) == 1, f"{edition}: the cheat sheet prints on {pdf_pages(pdf)} pages"
        assert not offline.errors and not offline.refused, (offline.errors, offline.refused)


@pytest.mark.browser
def test_another_page_prints_without_the_one_page_layout(browser, small_site):
    """print.css's cheat-sheet layout (8 pt, two columns) applies only to the page marked for it."""
    out, _ = small_site
    with offline_page(browser, A4) as offline:
        page = offline.page
        page.goto((out / "en" / "reference.html").as_uri(), wait_until="load")
        page.emulate_media(media="print")
        assert page.locator(".print-one-page").count() == 0
        size = page.evaluate("() => parseFloat(getComputedStyle(document.querySelector('article p')).fontSize)")
        assert size * 0.75 > MIN_PT
        assert pdf_pages(page.pdf(prefer_css_page_size=True)) > 1, "the reference page is longer than one page"
