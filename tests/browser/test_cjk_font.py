"""犬 猫 鳥 render in the browser with NO Japanese font on the machine, thanks to helpers.cjk_font.

This test starts its own Chromium whose fontconfig sees only the DejaVu fonts (the suite's other tests add
IPAexGothic). It checks that the machine really draws the same empty box for 犬 and 猫 in a plain font, then
that the explorer's HTML and print_table's text (styled as JupyterLab styles output, with the custom.css
that `make lab` and Binder install) draw three distinct, non-empty glyphs.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
import torch
from browserlib import chromium_with_fonts, require_chromium

from helpers import cjk_font, print_table
from helpers.chapters.ch01_the_pad_question import pad_cells_view
from helpers.explorer import view_html

pytestmark = pytest.mark.browser
DEJAVU = Path("/usr/share/fonts/truetype/dejavu")

GLYPHS = """async (selector) => {
  const el = document.querySelector(selector);
  const font = "40px " + getComputedStyle(el).fontFamily;
  await document.fonts.load(font, "犬猫鳥");
  const draw = (ch, f) => {
    const canvas = document.createElement("canvas");
    canvas.width = canvas.height = 64;
    const ctx = canvas.getContext("2d");
    ctx.font = f;
    ctx.fillText(ch, 4, 48);
    const data = ctx.getImageData(0, 0, 64, 64).data;
    let inked = 0, hash = 0;
    for (let i = 3; i < data.length; i += 4) {
      if (data[i]) { inked++; hash = (hash * 31 + i * data[i]) % 1000000007; }
    }
    return { inked, hash, width: ctx.measureText(ch).width };
  };
  return {
    text: el.textContent,
    ours: ["犬", "猫", "鳥"].map(ch => draw(ch, font)),
    plain: ["犬", "猫", "鳥"].map(ch => draw(ch, "40px 'DejaVu Sans', sans-serif")),
  };
}"""


@pytest.fixture(scope="module")
def bare_chromium(playwright_driver, tmp_path_factory: pytest.TempPathFactory):
    """Chromium that sees only the DejaVu fonts: no CJK font at all."""
    require_chromium()
    if not DEJAVU.is_dir():
        pytest.skip(f"{DEJAVU} not found (Debian's fonts-dejavu-core)")
    tmp = tmp_path_factory.mktemp("bare-fonts")
    config = tmp / "fonts.conf"
    config.write_text(f"""<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig><dir>{DEJAVU}</dir><cachedir>{tmp / "cache"}</cachedir></fontconfig>
""")
    with chromium_with_fonts(playwright_driver, config) as chromium:
        yield chromium


PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><style>
:root { --jp-code-font-family-default: menlo, consolas, 'DejaVu Sans Mono', monospace; }
.jp-OutputArea-output pre { font-family: var(--jp-code-font-family); }
</style><style id="custom"></style></head><body></body></html>"""


def outputs_html() -> str:
    """What JupyterLab shows for a print_table call and an explorer: a <pre> and the explorer's HTML."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_table(torch.eye(3), ["犬", "猫", "鳥"], ["犬", "猫", "鳥"])
    table = out.getvalue().replace("&", "&amp;").replace("<", "&lt;")
    return (f'<div class="jp-OutputArea-output"><pre id="stream">{table}</pre></div>'
            f'<div id="explorer">{view_html(pad_cells_view(2))}</div>')


def test_glyphs_render_without_system_cjk_fonts(bare_chromium, artifacts):
    page = bare_chromium.new_page()
    try:
        # like JupyterLab with the custom.css of `make lab` / Binder: the page loads, then outputs appear
        page.set_content(PAGE, wait_until="load")
        page.evaluate("css => { document.getElementById('custom').textContent = css; return document.fonts.ready }",
                      cjk_font.page_css())
        page.wait_for_function(f"() => document.fonts.check(\"15px '{cjk_font.FAMILY}'\", '犬')")
        page.evaluate("html => { document.body.insertAdjacentHTML('beforeend', html); }", outputs_html())
        page.wait_for_timeout(300)
        page.evaluate("() => { [...document.querySelectorAll('#explorer th')]"
                      ".find(th => th.textContent === '犬').id = 'kanji'; }")
        for where, selector in [("explorer table", "#kanji"), ("print_table output", "#stream")]:
            result = page.evaluate(GLYPHS, selector)
            assert "犬" in result["text"], where
            plain = result["plain"]
            assert plain[0]["hash"] == plain[1]["hash"], "this browser has a Japanese font: the check proves nothing"
            ours = result["ours"]
            assert all(g["inked"] > 20 and g["width"] > 20 for g in ours), f"{where}: empty glyphs {ours}"
            assert len({g["hash"] for g in ours}) == 3, f"{where}: 犬 猫 鳥 draw the same box {ours}"
        assert page.evaluate(f"() => document.fonts.check(\"40px '{cjk_font.FAMILY}'\", '犬猫鳥')")
        page.screenshot(path=artifacts / "cjk-font-without-system-fonts.png", full_page=True)
    finally:
        page.close()


DECK_GLYPHS = """async (selector) => {
  const cell = [...document.querySelectorAll(selector)]
    .find(p => /[\\u3040-\\u30ff\\u4e00-\\u9fff]/.test(p.textContent));
  const chars = [...new Set(cell.textContent.match(/[\\u3040-\\u30ff\\u4e00-\\u9fff]/g))].slice(0, 6);
  const family = getComputedStyle(cell).fontFamily;
  await document.fonts.load("40px " + family, chars.join(""));
  const draw = (ch, font) => {
    const canvas = document.createElement("canvas");
    canvas.width = canvas.height = 64;
    const ctx = canvas.getContext("2d");
    ctx.font = font;
    ctx.fillText(ch, 4, 48);
    const data = ctx.getImageData(0, 0, 64, 64).data;
    let inked = 0, hash = 0;
    for (let i = 3; i < data.length; i += 4) if (data[i]) { inked++; hash = (hash * 31 + i * data[i]) % 1000000007; }
    return { ch, inked, hash };
  };
  return { family, ours: chars.map(ch => draw(ch, "40px " + family)),
           plain: chars.map(ch => draw(ch, "40px 'DejaVu Sans', sans-serif")) };
}"""


def test_a_japanese_deck_draws_its_glyphs_without_system_cjk_fonts(bare_chromium, artifacts, tmp_path: Path):
    """tools/slides.py embeds the font cut to the deck's characters: the Japanese text of a deck draws."""
    from tools import series, slides

    deck = slides.export(series.notebooks("ja") / "01_the_pad_question.ipynb", tmp_path, explorers=False)
    page = bare_chromium.new_page(viewport={"width": 1280, "height": 720})
    try:
        page.goto(deck.as_uri(), wait_until="load")
        page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=15_000)
        page.evaluate("() => document.fonts.ready")
        for selector in (".reveal .jp-MarkdownOutput p", ".reveal .jp-OutputArea-output pre"):  # prose, printed
            result = page.evaluate(DECK_GLYPHS, selector)
            assert cjk_font.FAMILY in result["family"], selector
            plain = result["plain"]
            assert len({g["hash"] for g in plain}) == 1, "this browser has a Japanese font: the check proves nothing"
            ours = result["ours"]
            assert len(ours) >= 3 and all(g["inked"] > 20 for g in ours), f"{selector}: empty glyphs {ours}"
            assert len({g["hash"] for g in ours}) == len(ours), f"{selector}: characters draw the same box: {ours}"
        page.screenshot(path=artifacts / "slides-ja-01-without-system-fonts.png")
    finally:
        page.close()


def test_the_japanese_prose_draws_in_jupyterlab_without_system_cjk_fonts(bare_chromium, artifacts):
    """The custom.css of `make lab` / Binder carries tools/lab_font.py's subset: a Japanese chapter's prose (not
    only its tables) draws as real glyphs, styled as JupyterLab styles rendered markdown."""
    import html

    import nbformat

    from tools import dev, series

    nb = nbformat.read(series.notebooks("ja") / "01_the_pad_question.ipynb", as_version=4)
    prose = next(c.source for c in nb.cells if c.cell_type == "markdown" and not c.source.startswith(("#", "**")))
    page = bare_chromium.new_page()
    try:
        page.set_content(PAGE.replace("</style><style", ".jp-RenderedMarkdown p { font-family: "
                                      "var(--jp-content-font-family); }\n</style><style"), wait_until="load")
        page.evaluate("css => { document.getElementById('custom').textContent = css; return document.fonts.ready }",
                      cjk_font.page_css(dev.LAB_FONT))
        page.evaluate("html => { document.body.insertAdjacentHTML('beforeend', html); }",
                      f'<div class="jp-RenderedMarkdown"><p>{html.escape(prose)}</p></div>')
        result = page.evaluate(DECK_GLYPHS, ".jp-RenderedMarkdown p")
        assert cjk_font.FAMILY in result["family"]
        assert len({g["hash"] for g in result["plain"]}) == 1, "this browser has a Japanese font: proves nothing"
        ours = result["ours"]
        assert len(ours) >= 6 and all(g["inked"] > 20 for g in ours), f"empty glyphs {ours}"
        assert len({g["hash"] for g in ours}) == len(ours), f"characters draw the same box: {ours}"
        page.screenshot(path=artifacts / "lab-ja-prose-without-system-fonts.png", full_page=True)
    finally:
        page.close()
