"""A deck's math (TeX in the chapters' markdown) renders offline with the KaTeX that tools/slides.py copies next to
the decks (vendored in tools/vendor/katex-*), in Chromium, every request other than file:// refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from browserlib import offline_page

from tools import series, slides


@pytest.mark.browser
def test_a_decks_math_renders_offline(browser, artifacts, tmp_path: Path):
    deck = slides.export(series.notebooks() / "04_key_padding_mask.ipynb", tmp_path)
    with offline_page(browser, {"width": 1280, "height": 720}) as offline:
        page, errors, refused = offline.page, offline.errors, offline.refused
        loaded = offline.loaded
        page.goto(deck.as_uri(), wait_until="load")
        page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=15_000)
        page.evaluate("() => Reveal.configure({ transition: 'none' })")
        math = page.locator(".reveal .jp-MarkdownOutput .katex")
        assert math.count() >= 20, "chapter 4's inline TeX is typeset"
        assert page.locator(".katex-error").count() == 0
        text = page.evaluate("() => [...document.querySelectorAll('.reveal .jp-MarkdownOutput')]"
                             ".map(cell => { const c = cell.cloneNode(true);"
                             " c.querySelectorAll('.katex, code, pre').forEach(e => e.remove());"
                             " return c.textContent; })"
                             ".join(' ')")
        assert "$" not in text and "\\frac" not in text, "no TeX source left in the text"
        page.evaluate("m => { const at = Reveal.getIndices(m.closest('section')); Reveal.slide(at.h, at.v, 99); }",
                      math.first.element_handle())
        page.evaluate("() => document.fonts.ready")
        assert page.evaluate("() => document.fonts.check('16px KaTeX_Main')"), "KaTeX's own font is loaded"
        assert any("/katex/fonts/" in url for url in loaded), "from the copy next to the deck"
        page.screenshot(path=artifacts / "slides-04-math.png")
        assert not errors, f"console errors: {errors}"
        assert not refused, f"the deck asked the network for {refused}"
