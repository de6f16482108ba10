"""The book site (tools/site.py) in Chromium, opened from disk with every request other than file:// refused.

`make site` builds every chapter (about a minute); these tests build, with the same code, a small site that has
every kind of page in both editions: chapter 0 (the chapter map and the table of contents), chapter 2 (figures,
math, a static explorer), the cheat sheet, the glossary and the run page. Checked: it builds without a warning
other than links to the chapters left out; no page loads anything from the network or logs a console error;
every local link and anchor resolves; the static explorer moves inside its page; the language switch opens the
twin; search finds an English and a Japanese word; the pages fit a phone (375 px) and a desktop. Screenshots go
to test-artifacts/site/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from browserlib import ROOT, SITE_CHAPTERS, offline_page

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


@pytest.mark.browser
@pytest.mark.parametrize(("edition", "word", "expected"), [("en", "softmax", "02_softmax_on_masked_rows.html"),
                                                           ("ja", "埋め値", "glossary.html")])
def test_search_finds_a_word_offline(browser, built, edition, word, expected):
    out, _ = built
    with offline_page(browser, DESKTOP) as offline:
        page = offline.page
        page.goto(f"{(out / edition / 'search.html').as_uri()}?q={word}", wait_until="load")
        results = page.locator("#search-results ul.search li a")
        results.first.wait_for(timeout=15_000)
        found = [results.nth(k).get_attribute("href") for k in range(results.count())]
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
            for image in page.locator("article img").all():
                box = image.bounding_box()
                assert box is None or box["x"] + box["width"] <= viewport["width"] + 1, f"{name}: a figure overflows"
            page.screenshot(path=shots / f"{edition}-{name}-{viewport['width']}.png", full_page=True)
        if viewport is PHONE:   # the chapter navigation is one tap away
            page.locator("label.nav-overlay-icon").click()
            page.locator(".sidebar-drawer a.reference", has_text="2.").first.wait_for(state="visible")
            page.wait_for_timeout(500)   # the drawer slides in
            page.screenshot(path=shots / "ja-menu-375.png")
        assert not offline.errors and not offline.refused, (offline.errors, offline.refused)
