"""Static explorers: a chapter's explorers as one self-contained HTML file that works with no kernel.

The live explorer (helpers.explorer.Explorer) recomputes its View in Python at each move of a control. A static
explorer precomputes, in Python, what the live one shows for each setting of its controls, and writes one HTML
file whose controls (built from the live controls' options, ranges and descriptions) switch between those
precomputed views in the browser. No kernel, no CDN, no network: the CSS and JS are inline, and the views'
HTML is the live explorer's own (`render` sets the live widget's controls and reads its summary and tables).

- A control's values are all of its live values, unless the chapter's module keeps fewer for that explorer in its
  SUBGRIDS, beside its EXPLORERS (helpers.chapters.subgrids; a grid too big to precompute and ship): then the
  widget says, above its controls, which values it keeps.
- A refused setting (the view raised ValueError) shows the live explorer's "Not possible" message.
- The views are deduplicated: each view's HTML is cut into its pieces (the font style, each panel), every
  distinct piece (and summary) is stored once, and the whole payload is gzipped into the page, which unpacks it
  with the browser's own DecompressionStream (Chromium 80+, Firefox 113+, Safari 16.4+).
- Opened as `NN_<stem>.html?embed#explorer-N` (an iframe of the site, tools/site.py, or of a deck, tools/slides.py,
  which adds `&deck&room=H`), the page drops its title and margins, shows only explorer N, fits its view to the
  frame (compact cells when it is wider than the frame or taller than the room, the panels wrapped to the width,
  a table too wide on its own scrolling inside its panel; in a room still too short, the panels in one row that
  scrolls sideways) and posts its height to the parent page, which gives it to the frame. In a deck every text
  is DECK_TEXT_PX.
- Its heading is the explorer's own title (Explorer.title, in both languages), or its maker's docstring.
- BUDGET_BYTES: the most a chapter's file may weigh; `export_chapter` reports the size, and the tests hold
  every chapter to it.
"""

from __future__ import annotations

import base64
import gzip
import html
import itertools
import json
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import ipywidgets as widgets

from helpers import chapters, cjk_font, language
from helpers.explorer import Explorer
from helpers.language import listed, say

BUDGET_BYTES = 500_000     # one chapter's static explorer file, all its explorers together
DECK_TEXT_PX = 15          # a deck's explorer (?deck) draws every text at this size: at 1280 x 720 reveal.js
# scales the 960 x 700 slide by 0.99, so 14.8 px on the screen (the decks' floor is 14 px: tests/browser)
MAX_SETTINGS = 2_000       # settings precomputed per explorer: beyond this, its chapter's SUBGRIDS keeps fewer
# (each chapter's SUBGRIDS keeps it within MAX_SETTINGS and BUDGET_BYTES: tests/test_static_explorer.py)


# --- the controls, read from the live widgets ---

@dataclass(frozen=True)
class Axis:
    """One control of a static explorer: the live control's kind, description, values and labels, and which of
    its values the static one keeps (`kept`, indices into `values`; `start`: the live start value's index)."""

    name: str                    # the view function's keyword
    kind: str                    # "slider", "dropdown", "toggles" or "checkbox"
    description: str
    values: tuple                # every value of the live control, in its order
    labels: tuple[str, ...]      # how the live control shows each value
    kept: tuple[int, ...]        # indices of the values precomputed
    start: int                   # index (into values) of the control's start value; always kept

    @property
    def complete(self) -> bool:
        return len(self.kept) == len(self.values)

    def note(self) -> str:
        """What the static explorer keeps of this control, for the widget's note ('' if it keeps every value)."""
        if self.complete:
            return ""
        kept = ", ".join(self.labels[i] for i in self.kept)
        if len(self.kept) == 1:
            return say(f"{self.description} fixed at {kept}", f"{self.description} は {kept} に固定")
        return say(f"{self.description}: {kept} only (live: {len(self.values)} values)",
                   f"{self.description} は {kept} のみ（ノートブックでは {len(self.values)} 通り）")


def _slider_values(control: widgets.ValueWidget) -> tuple:
    low, high, step = control.min, control.max, control.step
    n = int(round((high - low) / step)) + 1
    if isinstance(control, widgets.IntSlider):
        return tuple(range(low, high + 1, step))
    return tuple(round(low + k * step, 12) for k in range(n))


def control_axis(name: str, control: widgets.ValueWidget, keep: Sequence | None = None) -> Axis:
    """The Axis of one live control; `keep`: the values to precompute (default: all). Raises TypeError for a
    control kind a static explorer cannot show, ValueError for a kept value the control does not have."""
    if isinstance(control, (widgets.Checkbox, widgets.ToggleButton)):
        kind, values, labels = "checkbox", (False, True), ("off", "on")
    elif isinstance(control, (widgets.IntSlider, widgets.FloatSlider)):
        kind, values = "slider", _slider_values(control)
        labels = tuple(format(v, control.readout_format) if isinstance(control, widgets.FloatSlider) else str(v)
                       for v in values)
    elif isinstance(control, (widgets.ToggleButtons, widgets.RadioButtons)):
        kind, values, labels = "toggles", tuple(control._options_values), tuple(control._options_labels)
    elif isinstance(control, (widgets.Dropdown, widgets.Select)):
        kind, values, labels = "dropdown", tuple(control._options_values), tuple(control._options_labels)
    else:
        raise TypeError(f"control {name!r}: a static explorer cannot show a {type(control).__name__}")
    if control.value not in values:
        raise ValueError(f"control {name!r}: its value {control.value!r} is not one of its steps {values!r}")
    start = values.index(control.value)
    if keep is None:
        kept = tuple(range(len(values)))
    else:
        missing = [v for v in keep if v not in values]
        if missing or not keep:
            raise ValueError(f"keep for control {name!r} must be some of {values!r}, got {tuple(keep)!r}")
        kept = tuple(sorted({values.index(v) for v in keep} | {start}))
    return Axis(name, kind, control.description or name, values, labels, kept, start)


def axes(box: Explorer, subgrid: Mapping[str, Sequence] | None = None) -> tuple[Axis, ...]:
    """The Axis of each of the explorer's controls, in the live row's order; `subgrid`: {control name: the values
    kept} (a chapter's SUBGRIDS entry), every value of the controls it does not name."""
    subgrid = dict(subgrid or {})
    unknown = set(subgrid) - set(box.controls)
    if unknown:
        raise ValueError(f"subgrid names controls the explorer does not have: {sorted(unknown)}")
    return tuple(control_axis(name, c, subgrid.get(name)) for name, c in box.controls.items())


def n_settings(found: Sequence[Axis]) -> int:
    """How many settings the static explorer precomputes (the product of the kept values' counts)."""
    n = 1
    for axis in found:
        n *= len(axis.kept)
    return n


def settings(found: Sequence[Axis]) -> Iterator[dict]:
    """Every precomputed setting ({control name: value}), in the payload's order (the last control fastest)."""
    for combo in itertools.product(*(axis.kept for axis in found)):
        yield {axis.name: axis.values[i] for axis, i in zip(found, combo, strict=True)}


def index_of(found: Sequence[Axis], setting: Mapping[str, object]) -> int:
    """The position of `setting` in `settings(found)` (as the page's script computes it from its controls);
    ValueError if the static explorer does not hold that setting."""
    index = 0
    for axis in found:
        value = setting[axis.name]
        at = [k for k, i in enumerate(axis.kept) if axis.values[i] == value and type(axis.values[i]) is type(value)]
        if not at:
            raise ValueError(f"the static explorer does not hold {axis.name}={value!r}")
        index = index * len(axis.kept) + at[0]
    return index


# --- the views: rendered by the live widget itself ---

def quiet(box: Explorer) -> Explorer:
    """Detach the explorer's own redraw from its controls, so that `render` sets them all and redraws once."""
    for control in box.controls.values():
        control.unobserve(box.refresh, names="value")
    return box


def render(box: Explorer, setting: Mapping[str, object]) -> tuple[str, str]:
    """(summary HTML, tables HTML) that the live explorer shows for `setting` (its own refresh(), so a refused
    setting gives its "Not possible" message and no tables). Call `quiet(box)` first for speed."""
    for name, value in setting.items():
        box.controls[name].value = value
    box.refresh()
    return box.summary.value, box.tables.value


# Cut a view's HTML before each panel and after its font style: pieces that recur across settings.
_CUTS = re.compile(r'(?=<div class="explorer-panel")|(?<=</style>)')


def pieces(tables: str) -> list[str]:
    """The view HTML cut into pieces; "".join(pieces(t)) == t."""
    parts = [p for p in _CUTS.split(tables) if p]
    assert "".join(parts) == tables
    return parts


@dataclass
class Payload:
    """One explorer's precomputed views, deduplicated: what the page's script reads."""

    title: str
    axes: tuple[Axis, ...]
    pieces: list[str] = field(default_factory=list)          # every distinct summary and view piece
    entries: list[list[int]] = field(default_factory=list)   # distinct views: [summary piece, view pieces...]
    grid: list[int] = field(default_factory=list)            # setting (mixed-radix index) -> entry
    seconds: float = 0.0

    def to_json(self) -> dict:
        return {"title": self.title, "note": note(self.axes, n_settings(self.axes)),
                "axes": [{"name": a.name, "kind": a.kind, "description": a.description,
                          "labels": [a.labels[i] for i in a.kept], "start": a.kept.index(a.start),
                          "fixed": len(a.kept) == 1 and len(a.values) > 1} for a in self.axes],
                "pieces": self.pieces, "entries": self.entries, "grid": self.grid}

    def view(self, index: int) -> tuple[str, str]:
        """(summary HTML, tables HTML) of the setting at `index` in `settings(self.axes)` order."""
        summary, *parts = self.entries[self.grid[index]]
        return self.pieces[summary], "".join(self.pieces[p] for p in parts)


def note(found: Sequence[Axis], n: int) -> str:
    """The line a static explorer shows above its controls: how much of the live grid it holds."""
    total = 1
    for axis in found:
        total *= len(axis.values)
    if n == total:
        return say(f"Static explorer: all {n} settings precomputed in Python; no kernel needed.",
                   f"静的エクスプローラ：{n} 通りの設定をすべて Python で計算済みなので、カーネルは要らない。")
    kept = listed((a.note() for a in found if a.note()), by="semicolon")
    return say(f"Static explorer: {n} of the live explorer's {total} settings precomputed ({kept}). "
               "Run the notebook for every value.",
               f"静的エクスプローラ：ノートブックのエクスプローラの {total} 通りの設定のうち {n} 通りを計算済み"
               f"（{kept}）。すべての値を試すにはノートブックを実行すること。")


def precompute(make: Callable[[], Explorer], subgrid: Mapping[str, Sequence] | None = None) -> Payload:
    """Build the live explorer, render every setting of its grid (or of `subgrid`, as in `axes`) and deduplicate
    the results."""
    start = time.perf_counter()
    box = quiet(make())
    found = axes(box, subgrid)
    doc = " ".join((make.__doc__ or make.__name__).strip().split("\n\n")[0].split())
    payload = Payload(box.title.said() if box.title else doc, found)
    piece_ids: dict[str, int] = {}
    entry_ids: dict[tuple[int, ...], int] = {}

    def piece(text: str) -> int:
        if text not in piece_ids:
            piece_ids[text] = len(payload.pieces)
            payload.pieces.append(text)
        return piece_ids[text]

    try:
        for setting in settings(found):
            summary, tables = render(box, setting)
            key = (piece(summary), *(piece(p) for p in pieces(tables)))
            if key not in entry_ids:
                entry_ids[key] = len(payload.entries)
                payload.entries.append(list(key))
            payload.grid.append(entry_ids[key])
    finally:
        box.close()
    payload.seconds = time.perf_counter() - start
    return payload


# --- the page ---

CSS = """
body{margin:1.5em;font-family:system-ui,sans-serif,'helpers-cjk';color:#222;background:#fff}
select,button,input{font-family:inherit}
.static-preload{position:absolute;left:-999px;top:0;visibility:hidden;font-family:'helpers-cjk'}
h1{font-size:1.3em;margin:0 0 0.8em}
.static-explorer{margin:0 0 2.5em}
.static-explorer h2{font-size:1.05em;font-weight:normal;margin:0 0 0.4em}
.static-note{font-size:0.85em;color:#555;background:#f4f4f4;border-left:3px solid #999;padding:0.3em 0.6em;
  margin:0 0 0.6em;max-width:60em}
.static-controls{display:flex;flex-flow:row wrap;gap:0.4em 1.4em;align-items:center;margin:0 0 0.5em}
.static-control{display:flex;align-items:center;gap:0.4em;font-size:14px}
.static-control .description{color:#333}
.static-control input[type=range]{width:10em}
.static-control .readout{min-width:1.5em;font-variant-numeric:tabular-nums}
.static-control select{font-size:14px;max-width:100%}
.static-control button{font-size:13px;padding:0.25em 0.8em;border:1px solid #bbb;background:#eee;cursor:pointer;
  margin:0;border-radius:0}
.static-control button.active{background:#cfe2f3;border-color:#4a86c5}
.static-control [disabled]{cursor:not-allowed;opacity:0.6}
.explorer-summary{margin:0.4em 0 0.6em;font-size:14px;max-width:70em}
.static-error{color:#d62728}
html.embedded body{margin:0.4em}
html.embedded h1{display:none}
html.embedded .static-explorer{margin-bottom:0}
/* A view never wider than its window: a panel's title wraps to its table's width, the panels wrap to the next
   line, and a table wider than the window on its own scrolls inside its panel (never cut). */
.explorer-panel{max-width:calc(100% - 1.5em);overflow-x:auto}
html.compact .explorer-panel{max-width:calc(100% - 0.8em)}
.static-control{max-width:100%;min-width:0;flex-wrap:wrap}
.static-control select{min-width:0;flex:0 1 auto}
.explorer-panel>div:first-child{contain:inline-size}
/* compact (set by fit() when the view is wider than its window, or taller than a deck's room): smaller cells,
   panels closer together; the text keeps its size */
html.compact .explorer-view td{min-width:2.1em!important;height:1.5em!important;padding:0 0.1em!important}
html.compact .explorer-panel{margin:0 0.8em 0.4em 0!important}
html.compact .explorer-view th{padding:0.05em 0.3em!important}
html.compact .explorer-view tr:first-child>th:first-child span{display:block;white-space:normal!important}
/* row (a deck's frame whose compact view is still taller than its room): the panels in one row, which scrolls
   sideways inside the view */
html.row .explorer-tables>.explorer-view{white-space:nowrap;overflow-x:auto}
html.row .explorer-panel{white-space:normal;max-width:none}
/* in a deck (?deck): no text below DECK_TEXT_PX, for the back of a room */
html.deck .static-explorer h2,html.deck .static-note,html.deck .static-control,html.deck .static-control *,
html.deck .explorer-summary,html.deck .explorer-view,html.deck .explorer-view *{font-size:DECK_TEXT_PX!important}
html.deck .static-explorer h2{margin-bottom:0.2em}
html.deck .static-note{margin-bottom:0.4em}
""".replace("DECK_TEXT_PX", f"{DECK_TEXT_PX}px")

# The page's script: unpack each explorer's payload (gzip, base64), build its controls, show the chosen view.
JS = r"""
(function () {
  "use strict";
  // page.html?embed#explorer-N (an iframe of the site or a deck): no page title, small margins, only explorer N,
  // and the page's height posted to the parent page, which sizes the iframe to it (tools/site.py, tools/slides.py).
  // &deck: a deck's frame (larger text, DECK_TEXT_PX); &room=H: the most height the frame can take, in px.
  const query = new URLSearchParams(location.search), doc = document.documentElement;
  const embedded = query.has("embed"), room = parseFloat(query.get("room")) || Infinity;
  if (embedded) doc.classList.add("embedded");
  if (query.has("deck")) doc.classList.add("deck");
  const want = location.hash.slice(1);
  if (embedded && want && document.getElementById(want)) document.querySelectorAll(".static-explorer").forEach(s => {
    if (s.id !== want) s.style.display = "none";
  });
  function height() {
    const body = document.body;
    return Math.ceil(body.getBoundingClientRect().bottom + parseFloat(getComputedStyle(body).marginBottom));
  }
  // The view reflows to its window: compact cells when it is wider than the window (a panel that scrolls inside
  // counts) or taller than the room; the panels wrap on their own; in a room still too short, they stand in one
  // row that scrolls sideways.
  function fit() {
    doc.classList.remove("compact", "row");
    const wide = () => doc.scrollWidth > doc.clientWidth + 1 ||
      [...document.querySelectorAll(".explorer-panel")].some(p => p.offsetParent && p.scrollWidth > p.clientWidth + 1);
    if (wide() || height() > room) doc.classList.add("compact");
    if (height() > room) doc.classList.add("row");
  }
  let posted = 0;
  function post() {
    const now = height();
    if (embedded && window.parent !== window && now !== posted) {
      posted = now;
      window.parent.postMessage({siteExplorerHeight: now}, "*");
    }
  }
  let width = innerWidth;
  addEventListener("resize", () => { if (innerWidth !== width) { width = innerWidth; fit(); } });
  // again when the body changes size: an iframe on a hidden slide is laid out only once it is shown
  new ResizeObserver(() => { fit(); post(); }).observe(document.body);
  async function unpack(text) {
    const bytes = Uint8Array.from(atob(text.trim()), c => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }
  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function build(root, data) {
    const at = data.axes.map(a => a.start);
    const summary = root.querySelector(".explorer-summary");
    const tables = root.querySelector(".explorer-tables");
    function show() {
      let index = 0;
      data.axes.forEach((a, k) => { index = index * a.labels.length + at[k]; });
      const [s, ...parts] = data.entries[data.grid[index]];
      summary.innerHTML = data.pieces[s];
      tables.innerHTML = parts.map(p => data.pieces[p]).join("");
      root.dataset.setting = at.join(",");
      fit();
    }
    const row = root.querySelector(".static-controls");
    data.axes.forEach((a, k) => {
      const box = el("label", {"class": "static-control", "data-name": a.name});
      box.appendChild(el("span", {"class": "description"}, a.description));
      const pick = i => { at[k] = i; show(); };
      if (a.kind === "slider") {
        const input = el("input", {type: "range", min: 0, max: a.labels.length - 1, step: 1, value: a.start});
        const readout = el("span", {"class": "readout"}, a.labels[a.start]);
        input.addEventListener("input", () => { readout.textContent = a.labels[+input.value]; pick(+input.value); });
        if (a.fixed) input.disabled = true;
        box.append(input, readout);
      } else if (a.kind === "dropdown") {
        const select = el("select");
        a.labels.forEach((label, i) => select.appendChild(el("option", {value: i}, label)));
        select.value = a.start;
        select.addEventListener("change", () => pick(+select.value));
        if (a.fixed) select.disabled = true;
        box.appendChild(select);
      } else if (a.kind === "toggles") {
        const group = el("span", {role: "group"});
        const buttons = a.labels.map((label, i) => {
          const b = el("button", {type: "button", "data-index": i}, label);
          b.addEventListener("click", () => {
            buttons.forEach((o, j) => {
              o.classList.toggle("active", j === i);
              o.setAttribute("aria-pressed", j === i);
            });
            pick(i);
          });
          b.classList.toggle("active", i === a.start);
          b.setAttribute("aria-pressed", i === a.start);
          if (a.fixed) b.disabled = true;
          group.appendChild(b);
          return b;
        });
        box.appendChild(group);
      } else {  // checkbox: labels are ["off", "on"], or the one kept value
        const input = el("input", {type: "checkbox"});
        const on = a.labels.indexOf("on");
        input.checked = a.labels[a.start] === "on";
        input.addEventListener("change", () => pick(input.checked ? on : 1 - on));
        if (a.fixed) input.disabled = true;
        box.insertBefore(input, box.firstChild);
      }
      row.appendChild(box);
    });
    show();
    root.classList.add("ready");
  }
  // The CJK web font must be loaded before any text is shaped, or Chromium may keep boxes (cjk_font.page_css).
  const preload = document.querySelector(".static-preload");
  const fonts = preload && document.fonts ? document.fonts.load("16px 'helpers-cjk'", preload.textContent)
    .catch(() => null) : Promise.resolve();
  document.querySelectorAll(".static-explorer").forEach(async root => {
    try {
      await fonts;
      build(root, await unpack(root.querySelector("script.static-data").textContent));
    } catch (error) {
      root.querySelector(".explorer-summary").innerHTML =
        '<span class="static-error">This static explorer could not start: ' + String(error) + '</span>';
    }
  });
})();
"""


def packed(payload: Payload) -> str:
    """The payload as the page stores it: JSON, gzipped (reproducibly: no timestamp), in base64."""
    data = json.dumps(payload.to_json(), ensure_ascii=False, separators=(",", ":")).encode()
    return base64.b64encode(gzip.compress(data, compresslevel=9, mtime=0)).decode("ascii")


def unpacked(text: str) -> dict:
    """What `packed` stored (for tests and tools)."""
    return json.loads(gzip.decompress(base64.b64decode(text)))


def loading_text() -> str:
    """What a static explorer shows until its script has unpacked the views."""
    return say("Loading the precomputed views…", "計算済みの表示を読み込み中…")


def page(title: str, payloads: Sequence[Payload]) -> str:
    """The whole HTML file: one section per explorer, its note, its controls, its summary and tables."""
    sections = []
    for k, p in enumerate(payloads):
        sections.append(
            f'<section class="static-explorer explorer" id="explorer-{k + 1}">'
            f"<h2>{html.escape(p.title)}</h2>"
            f'<div class="static-note">{html.escape(note(p.axes, n_settings(p.axes)))}</div>'
            f'<div class="static-controls"></div>'
            f'<div class="explorer-summary">{loading_text()}</div>'
            f'<div class="explorer-tables"></div>'
            f'<script type="application/octet-stream" class="static-data">{packed(p)}</script>'
            f"</section>")
    # The web font of the series' CJK characters and any in the labels and views (on machines without
    # Japanese fonts the dropdowns' 犬 猫 鳥 are boxes otherwise), loaded with the page.
    # (The sections' own text, titles and notes, counts too; their packed data is ASCII.)
    text = "".join(label for p in payloads for a in p.axes for label in (*a.labels, a.description)) + "".join(
        piece for p in payloads for piece in p.pieces) + title + "".join(sections)
    font = cjk_font.css(text)
    chars = font.split(" cut to ", 1)[1].split(" */", 1)[0]
    return (f"<!DOCTYPE html>\n<html lang=\"{language.current()}\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(title)}</title><style>{font}{CSS}</style></head><body>"
            f'<span class="static-preload" aria-hidden="true">{html.escape(chars)}</span>'
            f"<h1>{html.escape(title)}</h1>{''.join(sections)}<script>{JS}</script></body></html>\n")


@dataclass(frozen=True)
class Exported:
    """What export_chapter wrote, and its figures."""

    chapter: str
    path: Path
    bytes: int
    settings: int          # precomputed settings, all explorers
    distinct: int          # distinct views among them
    seconds: float         # precompute and write

    @property
    def within_budget(self) -> bool:
        return self.bytes <= BUDGET_BYTES


def page_title(heading: str) -> str:
    """The page's title, in the current language, for a chapter called `heading`."""
    return say(f"{heading}: static explorer", f"{heading}：静的エクスプローラ")


def export_chapter(chapter: str, out: Path, edition: str = "en", heading: str = "") -> Exported | None:
    """Write out/NN_<stem>.html holding the chapter's static explorers, speaking the edition's language ("en"
    or "ja": notes, summaries and titles); None if the chapter has none. `heading`: the chapter's name in that
    edition, for the page's title (tools/static_explorers.py reads it from the notebook); else "NN stem" from the
    module's name."""
    if edition not in language.LANGUAGES:
        raise ValueError(f"edition must be one of {list(language.LANGUAGES)}, got {edition!r}")
    makers = chapters.explorers(chapter)
    if not makers:
        return None
    start = time.perf_counter()
    stem = chapters.chapters()[chapter][2:]
    with language.speaking(edition):
        kept = chapters.subgrids(chapter)
        payloads = [precompute(make, kept.get(make)) for make in makers]
        text = page(page_title(heading or stem.replace("_", " ")), payloads)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{stem}.html"
    path.write_text(text, encoding="utf-8")
    return Exported(chapter, path, path.stat().st_size, sum(len(p.grid) for p in payloads),
                    sum(len(p.entries) for p in payloads), time.perf_counter() - start)


def read_payloads(path: Path) -> list[dict]:
    """The payloads stored in a written static explorer file, unpacked (for tests)."""
    found = re.findall(r'<script type="application/octet-stream" class="static-data">(.*?)</script>',
                       path.read_text(encoding="utf-8"), re.S)
    return [unpacked(text) for text in found]
