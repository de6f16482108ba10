"""What the deck walk and the site test measure inside a static explorer's frame (helpers/static_explorer.py), and
the static explorers they load, shared with `make site`.

`measure(frame, scale)` runs in the explorer's own document (the iframe's): its content must fit the frame (no
scrolling either way, no element's right edge past the frame's, but inside a panel that scrolls sideways on
purpose) and, with `scale` (the frame's CSS px to screen px), its smallest text is reported in screen px."""

from __future__ import annotations

from pathlib import Path

from browserlib import ROOT

MIN_TEXT_PX = 14   # no text on a slide at 1280 x 720 smaller than this (tools/slides_template, DECK_TEXT_PX)

MEASURE = """(scale) => {
  const doc = document.documentElement, W = doc.clientWidth, H = window.innerHeight;
  const scrolls = e => { for (let a = e.parentElement; a; a = a.parentElement) {
      const o = getComputedStyle(a).overflowX; if (o === "auto" || o === "scroll") return true; } return false; };
  const past = [];
  for (const e of document.body.querySelectorAll("*")) {
    if (!e.getClientRects().length || scrolls(e)) continue;
    const r = e.getBoundingClientRect();
    if (r.right > W + 1) past.push(`${e.tagName.toLowerCase()}.${e.className} right ${Math.round(r.right)}`);
  }
  let least = Infinity, where = "";
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const e = n.parentElement;
    if (!n.textContent.trim() || !e || !e.getClientRects().length) continue;
    if (e.closest(".static-preload, script, style")) continue;
    const px = parseFloat(getComputedStyle(e).fontSize) * scale;
    if (px < least) { least = px; where = n.textContent.trim().slice(0, 30); }
  }
  return {width: doc.scrollWidth, height: doc.scrollHeight, frameWidth: W, frameHeight: H, past: past.slice(0, 3),
          text: Math.round(least * 10) / 10, where};
}"""


def explorers_built() -> Path:
    """Every chapter's static explorer in both editions, written (or kept, if made from the same code) where
    `make site` writes them: build/site/explorers/ (English) and build/site/explorers/ja/ (tools/site.py)."""
    from tools import site

    out = ROOT / "build" / "site"
    site.export_explorers(out)
    return out / site.EXPLORERS_DIR


def problems(found: dict, *, min_text: float | None = None) -> list[str]:
    """What is wrong in one frame's measure (MEASURE's result), as short phrases."""
    wrong = []
    if found["width"] > found["frameWidth"] + 1:
        wrong.append(f"{found['width']} px wide in a {found['frameWidth']} px frame")
    if found["height"] > found["frameHeight"] + 1:
        wrong.append(f"{found['height']} px tall in a {found['frameHeight']} px frame")
    if found["past"]:
        wrong.append(f"past the right edge: {found['past']}")
    if min_text is not None and found["text"] < min_text:
        wrong.append(f"text at {found['text']} px ({found['where']!r})")
    return wrong
