"""Explorers: what they show (View, Panel), its two renderers, and the widget that wires controls to it.

Every chapter's explorer (in helpers/chapters/chNN_*.py) is built from these.

An explorer's view function computes a `View`: one or more `Panel`s (annotated tables, as show_weights
draws them) and a one-line summary of the numbers. `draw_view` turns it into a matplotlib figure for the
static cell before each explorer; `view_html` turns it into HTML tables for the live explorer, because an
HTML table updates in a few ms where a matplotlib redraw of 25 labelled cells takes 50-150 ms.
Both use the same colours (plots.cell_colors): what you see in the figure is what the explorer shows.

`explorer(controls, view)` builds the widget (an `Explorer`):
- `controls` maps a keyword name of `view` to an ipywidgets control;
- each change of a control calls `view(**values)` and shows its tables (`.explorer-tables`) and its summary
  (`.explorer-summary`, which the browser tests read);
- a ValueError from `view` (an impossible combination, e.g. every token padded) is shown as a message
  inside the widget: no traceback, no NaN table.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.colors import is_color_like, to_hex
from matplotlib.figure import Figure

from helpers import cjk_font
from helpers.language import Bilingual, said, say
from helpers.plots import KEY, QUERY, STYLE, as_hidden, cell_colors, format_cell, show_weights

RED = "#d62728"  # matplotlib's tab:red: labels and frames that flag a problem


@dataclass(frozen=True, eq=False)
class Panel:
    """One annotated (L, S) table: show_weights' arguments, plus frames and red labels."""

    matrix: torch.Tensor                  # (L, S)
    rows: Sequence[str]
    cols: Sequence[str]
    title: str | Bilingual = ""           # title and axis labels: a Bilingual is drawn in the current language
    masked: torch.Tensor | None = None    # bool, broadcastable to (L, S), True = hatched
    fmt: str = ".2f"
    framed: torch.Tensor | None = None    # bool, broadcastable to (L, S): cells outlined in frame_color
    frame_color: str = "#e66100"          # any matplotlib colour
    mark: str = ""                        # a sign in the corner of each framed cell, e.g. "?"
    red_rows: tuple[int, ...] = ()        # row labels drawn in red
    red_cols: tuple[int, ...] = ()        # column labels drawn in red
    xlabel: str | Bilingual = KEY
    ylabel: str | Bilingual = QUERY
    alert: bool = False                   # title in red: something is wrong
    vmin: float | None = None             # fixed ends of the colour scale (e.g. 0 and 1 for weights);
    vmax: float | None = None             # None: scaled to the panel's finite unmasked cells

    def __post_init__(self) -> None:
        if not isinstance(self.matrix, torch.Tensor) or self.matrix.dim() != 2:
            raise TypeError(f"matrix must be a 2-D torch.Tensor (L, S), got {type(self.matrix).__name__} "
                            f"{tuple(getattr(self.matrix, 'shape', ()))}")
        L, S = self.matrix.shape
        if len(self.rows) != L or len(self.cols) != S:
            raise ValueError(f"rows and cols must have {L} and {S} labels for a {L}x{S} matrix, "
                             f"got {len(self.rows)} and {len(self.cols)}")
        as_hidden(self.masked, (L, S), "masked")   # each raises a clear error if not bool or not broadcastable
        as_hidden(self.framed, (L, S), "framed")
        for name, indices, n in (("red_rows", self.red_rows, L), ("red_cols", self.red_cols, S)):
            if not isinstance(indices, tuple) or not all(type(i) is int and 0 <= i < n for i in indices):
                raise ValueError(f"{name} must be a tuple of ints from 0 to {n - 1}, got {indices!r}")
        for name in ("title", "xlabel", "ylabel"):
            if not isinstance(getattr(self, name), (str, Bilingual)):
                raise TypeError(f"{name} must be a str or a helpers.language.Bilingual, "
                                f"got {type(getattr(self, name)).__name__}")
        if not is_color_like(self.frame_color):
            raise ValueError(f"frame_color must be a matplotlib colour, got {self.frame_color!r}")
        try:
            format(0.5, self.fmt)
        except (ValueError, TypeError):
            raise ValueError(f"fmt must be a format spec for a float, like '.2f', got {self.fmt!r}") from None


@dataclass(frozen=True, eq=False)
class View:
    """Everything one explorer update shows: the tables, a one-line summary and a legend line."""

    panels: tuple[Panel, ...]
    summary: str
    caption: str | Bilingual = ""      # a legend line; a Bilingual is drawn in the current language


def _panels(views: tuple[View, ...]) -> list[Panel]:
    panels = [p for v in views for p in v.panels]
    if not panels:
        raise ValueError("views must hold at least one panel")
    return panels


def _caption(views: tuple[View, ...]) -> str:
    """The views' legend lines, each once."""
    return "    ".join(dict.fromkeys(said(v.caption) for v in views if said(v.caption)))


def draw_view(*views: View) -> Figure:
    """The panels of `views` side by side in one matplotlib figure (captions below)."""
    panels = _panels(views)
    with plt.rc_context(STYLE):
        return _draw_panels(panels, _caption(views))


def _draw_panels(panels: list[Panel], caption: str) -> Figure:
    widths = [1.0 + 0.9 * len(p.cols) for p in panels]
    lines = max((said(p.title).count("\n") + 1 for p in panels if said(p.title)), default=0)
    height = 1.0 + 0.75 * max(len(p.rows) for p in panels) + 0.3 * lines
    fig, axes = plt.subplots(1, len(panels), figsize=(sum(widths) + 0.4 * (len(panels) - 1), height),
                             width_ratios=widths, squeeze=False, layout="constrained")
    for ax, p in zip(axes[0], panels, strict=True):
        show_weights(p.matrix, p.rows, p.cols, ax=ax, masked=p.masked, fmt=p.fmt, title=said(p.title) or None,
                     vmin=p.vmin, vmax=p.vmax)
        ax.set_xlabel(said(p.xlabel), labelpad=8)
        ax.set_ylabel(said(p.ylabel))
        if p.alert:
            ax.title.set_color(RED)
        for i, j in zip(*np.nonzero(as_hidden(p.framed, tuple(p.matrix.shape))), strict=True):
            ax.add_patch(plt.Rectangle((j - 0.45, i - 0.45), 0.9, 0.9, fill=False,
                                       edgecolor=p.frame_color, linewidth=2.5))
            if p.mark:
                ax.text(j + 0.3, i - 0.22, p.mark, color=p.frame_color, fontsize=13, ha="center", va="center")
        for i in p.red_rows:
            ax.get_yticklabels()[i].set_color(RED)
        for j in p.red_cols:
            ax.get_xticklabels()[j].set_color(RED)
    if caption:
        fig.supxlabel(caption, fontsize=10, color="#404040")
    return fig


# Inline styles: the tables must look the same in JupyterLab, Notebook 7, VS Code and nbviewer.
CELL = ("min-width:3.6em;height:2.4em;text-align:center;vertical-align:middle;border:1px solid #fff;"
        "padding:0 0.3em;position:relative;font-variant-numeric:tabular-nums")
HATCH = "repeating-linear-gradient(-45deg,#d9d9d9 0 5px,#808080 5px 6px)"  # '///' like the figure's hatching
LABEL = "padding:0.1em 0.5em;font-weight:normal;white-space:nowrap"
# The page's font first; for 犬 猫 鳥 the browser falls back to these if that font has no Japanese glyphs.
# helpers-cjk: the web font that helpers.cjk_font inlines, for machines with none of the others.
FONTS = ("var(--jp-content-font-family, system-ui, sans-serif), IPAexGothic, 'Noto Sans CJK JP', "
         f"'Hiragino Sans', 'Yu Gothic', Meiryo, '{cjk_font.FAMILY}', sans-serif")


def _cell_html(text: str, color: str | None, dark: bool, frame: str | None, mark: str) -> str:
    """One <td>, hatched if color is None; classes "masked" and "framed" let tests count them."""
    classes = " ".join(c for c, on in (("masked", color is None), ("framed", frame is not None)) if on)
    style = f"{CELL};background:{color or HATCH};color:{'#fff' if dark else '#000'}"
    corner = ""
    if frame is not None:
        style += f";box-shadow:inset 0 0 0 3px {frame}"
        if mark:
            corner = (f'<span style="position:absolute;top:0.1em;right:0.3em;font-weight:bold;color:{frame}">'
                      f"{html.escape(mark)}</span>")
    return f'<td class="{classes}" style="{style}">{html.escape(text)}{corner}</td>'


def _label_html(text: str, red: bool, align: str = "center") -> str:
    return f'<th style="{LABEL};text-align:{align};color:{RED if red else "inherit"}">{html.escape(text)}</th>'


def _panel_html(p: Panel) -> str:
    """One panel as an HTML <table>: coloured cells, hatched masked cells, token labels on both axes."""
    matrix = p.matrix.detach().float().cpu().numpy()
    L, S = matrix.shape
    hidden = as_hidden(p.masked, (L, S))
    framed = as_hidden(p.framed, (L, S))
    rgba, dark = cell_colors(matrix, hidden, p.vmin, p.vmax)
    frame = to_hex(p.frame_color)
    # the corner: "query ↓ key →", each half unbroken, the two on two lines where the table is narrow
    axes = " ".join(f'<span style="white-space:nowrap">{html.escape(name)} {arrow}</span>'
                    for name, arrow in ((said(p.ylabel), "↓"), (said(p.xlabel), "→")) if name)
    header = (f'<th style="{LABEL};white-space:normal;color:#606060;font-size:0.8em">{axes}</th>'
              + "".join(_label_html(c, j in p.red_cols) for j, c in enumerate(p.cols)))
    body = "".join(
        "<tr>" + _label_html(p.rows[i], i in p.red_rows, align="right")
        + "".join(_cell_html(format_cell(float(matrix[i, j]), p.fmt), None if hidden[i, j] else to_hex(rgba[i, j]),
                             bool(dark[i, j]), frame if framed[i, j] else None, p.mark) for j in range(S))
        + "</tr>"
        for i in range(L))
    title = "<br>".join(html.escape(line) for line in said(p.title).splitlines())
    return (f'<div class="explorer-panel" style="display:inline-block;vertical-align:top;margin:0 1.5em 0.5em 0">'
            f'<div style="text-align:center;font-weight:bold;margin-bottom:0.3em;'
            f'color:{RED if p.alert else "inherit"}">{title}</div>'
            f'<table style="border-collapse:collapse"><tr>{header}</tr>{body}</table></div>')


def view_html(*views: View) -> str:
    """The panels of `views` as HTML tables side by side (they wrap on a narrow screen), captions below."""
    panels = _panels(views)
    caption = _caption(views)
    legend = (f'<div style="color:#404040;font-size:0.85em;white-space:pre-wrap">{html.escape(caption)}</div>'
              if caption else "")
    labels = "".join("".join(p.rows) + "".join(p.cols) + said(p.title) + said(p.xlabel) + said(p.ylabel)
                     for p in panels) + caption
    return (f'<div class="explorer-view" style="font-size:15px;line-height:1.3;font-family:{FONTS}">'
            f"<style>{cjk_font.css(labels)}</style>{''.join(_panel_html(p) for p in panels)}{legend}</div>")


# --- the live widget ---

REFUSED = "<b>Not possible:</b> "  # how the summary starts when view() refuses a combination
REFUSED_JA = "<b>この組み合わせは不可：</b>"
PLACEHOLDER = "Explorer: run this cell to see it live (interactive widgets need a running kernel)."
PLACEHOLDER_JA = "エクスプローラ：このセルを実行すると操作できる（ウィジェットを動かすにはカーネルが必要である）。"


class Explorer(widgets.VBox):
    """Controls in a row, a one-line summary, the tables; `refresh()` redraws from the controls' values."""

    def __init__(self, controls: dict[str, widgets.ValueWidget], view: Callable[..., View],
                 title: Bilingual | None = None):
        if title is not None and not isinstance(title, Bilingual):
            raise TypeError(f"title must be a helpers.language.Bilingual or None, got {type(title).__name__}")
        self.controls = dict(controls)
        self.title = title   # what the static explorer (helpers.static_explorer) heads it with
        self.summary = widgets.HTML().add_class("explorer-summary")
        self.tables = widgets.HTML().add_class("explorer-tables")
        self._view = view
        row = widgets.HBox(list(self.controls.values()), layout=widgets.Layout(flex_flow="row wrap"))  # wrap
        super().__init__([row, self.summary, self.tables])
        self.add_class("explorer")
        for control in self.controls.values():
            control.observe(self.refresh, names="value")
        self.refresh()

    def refresh(self, _change: object = None) -> None:
        """Recompute the view from the controls' values and show it (or the reason it is refused)."""
        values = {name: control.value for name, control in self.controls.items()}
        try:
            shown = self._view(**values)
            table_html = view_html(shown)
        except ValueError as error:
            self.tables.value = ""
            self.summary.value = say(REFUSED, REFUSED_JA) + html.escape(str(error))
            return
        self.tables.value = table_html
        self.summary.value = html.escape(shown.summary)

    def __repr__(self) -> str:
        """The text a saved notebook shows in place of the widget (the same every run, for nbval)."""
        return say(PLACEHOLDER, PLACEHOLDER_JA)


def explorer(controls: dict[str, widgets.ValueWidget], view: Callable[..., View],
             title: Bilingual | None = None) -> Explorer:
    """Wire controls to view(): the widget, already showing view() at the controls' start values; `title`: what
    it shows, in both languages (the static explorer's heading)."""
    return Explorer(controls, view, title)
