"""What an explorer shows, and its two renderers: a matplotlib figure (static) and an HTML table (live).

An explorer's view function computes a `View`: one or more `Panel`s (annotated tables, as show_weights
draws them) and a one-line summary of the numbers. `draw_view` turns it into a figure for the static
cell before each explorer; `view_html` turns it into HTML tables for the live explorer, because an HTML
table updates in a few ms where a matplotlib redraw of 25 labelled cells takes 50-150 ms.
Both use the same colours (plots.cell_colors): what you see in the figure is what the explorer shows.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

from helpers.plots import as_hidden, cell_colors, format_cell, show_weights

RED = "#d62728"  # matplotlib's tab:red: labels and frames that flag a problem


@dataclass(frozen=True)
class Panel:
    """One annotated (L, S) table: show_weights' arguments, plus frames and red labels."""

    matrix: torch.Tensor                  # (L, S)
    rows: list[str]
    cols: list[str]
    title: str = ""
    masked: torch.Tensor | None = None    # bool, broadcastable to (L, S), True = hatched
    fmt: str = ".2f"
    framed: torch.Tensor | None = None    # bool (L, S): cells outlined in frame_color
    frame_color: str = "#e66100"
    mark: str = ""                        # a sign in the corner of each framed cell, e.g. "?"
    red_rows: tuple[int, ...] = ()        # row labels drawn in red
    red_cols: tuple[int, ...] = ()        # column labels drawn in red
    xlabel: str = "key"
    ylabel: str = "query"
    alert: bool = False                   # title in red: something is wrong

    def __post_init__(self) -> None:
        if self.matrix.dim() != 2:
            raise ValueError(f"matrix must be 2-D (L, S), got shape {tuple(self.matrix.shape)}")
        L, S = self.matrix.shape
        if len(self.rows) != L or len(self.cols) != S:
            raise ValueError(f"rows and cols must have {L} and {S} labels for a {L}x{S} matrix, "
                             f"got {len(self.rows)} and {len(self.cols)}")
        as_hidden(self.masked, (L, S))  # raises a clear error if masked is not bool or does not broadcast
        if self.framed is not None and (self.framed.dtype != torch.bool or self.framed.shape != (L, S)):
            raise ValueError(f"framed must be a bool tensor of shape {(L, S)}, "
                             f"got {self.framed.dtype} {tuple(self.framed.shape)}")
        if any(not 0 <= i < L for i in self.red_rows) or any(not 0 <= j < S for j in self.red_cols):
            raise ValueError(f"red_rows must be rows 0..{L - 1} and red_cols columns 0..{S - 1}, "
                             f"got {self.red_rows} and {self.red_cols}")


@dataclass(frozen=True)
class View:
    """Everything one explorer update shows: the tables, a one-line summary and a legend line."""

    panels: tuple[Panel, ...]
    summary: str
    caption: str = ""


def draw_view(*views: View) -> Figure:
    """The panels of `views` side by side in one matplotlib figure (captions below)."""
    panels = [p for v in views for p in v.panels]
    if not panels:
        raise ValueError("views must hold at least one panel")
    widths = [1.0 + 0.9 * len(p.cols) for p in panels]
    lines = max(p.title.count("\n") + 1 for p in panels if p.title) if any(p.title for p in panels) else 0
    height = 1.0 + 0.75 * max(len(p.rows) for p in panels) + 0.3 * lines
    fig, axes = plt.subplots(1, len(panels), figsize=(sum(widths) + 0.4 * (len(panels) - 1), height),
                             width_ratios=widths, squeeze=False, layout="constrained")
    for ax, p in zip(axes[0], panels, strict=True):
        show_weights(p.matrix, p.rows, p.cols, ax=ax, masked=p.masked, fmt=p.fmt, title=p.title or None)
        ax.set_xlabel(p.xlabel, labelpad=8)
        ax.set_ylabel(p.ylabel)
        if p.alert:
            ax.title.set_color(RED)
        if p.framed is not None:
            for i, j in p.framed.nonzero().tolist():
                ax.add_patch(plt.Rectangle((j - 0.45, i - 0.45), 0.9, 0.9, fill=False,
                                           edgecolor=p.frame_color, linewidth=2.5))
                if p.mark:
                    ax.text(j + 0.3, i - 0.22, p.mark, color=p.frame_color, fontsize=13, ha="center", va="center")
        for i in p.red_rows:
            ax.get_yticklabels()[i].set_color(RED)
        for j in p.red_cols:
            ax.get_xticklabels()[j].set_color(RED)
    caption = "    ".join(dict.fromkeys(v.caption for v in views if v.caption))  # each legend once
    if caption:
        fig.supxlabel(caption, fontsize=10, color="#404040")
    return fig


CELL = ("min-width:3.6em;height:2.4em;text-align:center;vertical-align:middle;border:1px solid #fff;padding:0 0.3em;"
        "position:relative;font-variant-numeric:tabular-nums;background:{bg};color:{fg}")
HATCH = "repeating-linear-gradient(-45deg,#d9d9d9 0 5px,#808080 5px 6px)"  # '///' like the figure's hatching
LABEL = "padding:0.1em 0.5em;font-weight:normal;white-space:nowrap;color:{color}"


def panel_html(p: Panel) -> str:
    """One panel as an HTML <table>: coloured cells, hatched masked cells, token labels on both axes."""
    matrix = p.matrix.detach().float().cpu().numpy()
    L, S = matrix.shape
    hidden = as_hidden(p.masked, (L, S))
    rgba, dark = cell_colors(matrix, hidden)
    framed = np.zeros((L, S), dtype=bool) if p.framed is None else p.framed.numpy()
    esc = html.escape
    head = "".join(f'<th style="{LABEL.format(color=RED if j in p.red_cols else "inherit")}">{esc(c)}</th>'
                   for j, c in enumerate(p.cols))
    axes = " ".join(f"{esc(name)} {arrow}" for name, arrow in ((p.ylabel, "↓"), (p.xlabel, "→")) if name)
    corner = f'<th style="{LABEL.format(color="#606060")};font-size:0.8em">{axes}</th>'
    body = []
    for i in range(L):
        cells = []
        for j in range(S):
            style = CELL.format(bg=HATCH if hidden[i, j] else to_hex(rgba[i, j]), fg="#fff" if dark[i, j] else "#000")
            classes = ["masked"] if hidden[i, j] else []
            mark = ""
            if framed[i, j]:
                classes.append("framed")
                style += f";box-shadow:inset 0 0 0 3px {p.frame_color}"
                if p.mark:
                    mark = (f'<span style="position:absolute;top:0.1em;right:0.3em;font-weight:bold;'
                            f'color:{p.frame_color}">{esc(p.mark)}</span>')
            text = format_cell(float(matrix[i, j]), p.fmt)
            cells.append(f'<td class="{" ".join(classes)}" style="{style}">{text}{mark}</td>')
        label = f'<th style="{LABEL.format(color=RED if i in p.red_rows else "inherit")};text-align:right">'
        body.append(f"<tr>{label}{esc(p.rows[i])}</th>{''.join(cells)}</tr>")
    title = "<br>".join(esc(line) for line in p.title.splitlines())
    title_color = RED if p.alert else "inherit"
    return (f'<div class="explorer-panel" style="display:inline-block;vertical-align:top;margin:0 1.5em 0.5em 0">'
            f'<div style="text-align:center;font-weight:bold;margin-bottom:0.3em;color:{title_color}">'
            f'{title}</div><table style="border-collapse:collapse">'
            f"<tr>{corner}{head}</tr>{''.join(body)}</table></div>")


def view_html(view: View) -> str:
    """The whole view as HTML: panels side by side (they wrap on a narrow screen), then the caption."""
    caption = (f'<div style="color:#404040;font-size:0.85em;white-space:pre-wrap">{html.escape(view.caption)}</div>'
               if view.caption else "")
    return f'<div class="explorer-view" style="font-size:15px;line-height:1.3">' \
           f"{''.join(panel_html(p) for p in view.panels)}{caption}</div>"
