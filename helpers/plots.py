"""One canonical heatmap for attention tables (show_weights), its text twin (print_table),
and the colour scale and number format the explorers' HTML tables share with them."""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.collections import PatchCollection
from matplotlib.patches import Rectangle

from helpers.language import Bilingual, said, say

with plt.rc_context():  # matplotlib_fontja registers a Japanese font, then makes it global: keep only the font
    import matplotlib_fontja  # noqa: F401

# The series' figure style (the Japanese font so 犬 猫 鳥 render, 12 pt cells for projectors), applied with
# plt.rc_context inside the plotting functions: importing helpers never changes your matplotlib settings.
STYLE = {"font.family": "IPAexGothic", "font.size": 12, "axes.titlesize": 14, "figure.dpi": 100}
KEY = Bilingual("key", "キー")          # a table's axis labels, drawn in the reader's language
QUERY = Bilingual("query", "クエリ")
CMAP = matplotlib.colormaps["Blues"].with_extremes(bad="#d9d9d9")  # masked and non-finite cells: grey


def format_cell(value: float, fmt: str = ".2f") -> str:
    """Cell text: huge fills as '-1e9' / '-inf', everything else with fmt."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "-inf" if value < 0 else "inf"
    if abs(value) >= 1e4:  # -1e9 -> "-1e9", finfo(float16).min -> "-6.6e4"
        mantissa, exponent = f"{value:.1e}".split("e")
        return f"{mantissa.removesuffix('.0')}e{int(exponent)}"
    return format(value, fmt)


def as_hidden(masked: torch.Tensor | np.ndarray | None, shape: tuple[int, int], name: str = "masked") -> np.ndarray:
    """masked (bool, broadcastable to shape, True = masked) as an (L, S) numpy bool array; name is for errors."""
    if masked is None:
        return np.zeros(shape, dtype=bool)
    if isinstance(masked, torch.Tensor):
        masked = masked.cpu().numpy()
    masked = np.asarray(masked)
    if masked.dtype != bool:
        raise TypeError(f"{name} must be a bool array (True = marked), got dtype {masked.dtype}")
    try:
        return np.broadcast_to(masked, shape)
    except ValueError:
        raise ValueError(f"{name} must broadcast to the matrix shape {shape}, got {masked.shape}") from None


def cell_colors(matrix: np.ndarray, hidden: np.ndarray, vmin: float | None = None,
                vmax: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(L, S, 4) RGBA colours and (L, S) 'dark cell, write in white' flags for an annotated table.

    Blues, by default scaled to the finite unmasked cells only (a -1e9 fill must not wash out the scale);
    vmin and vmax fix the ends of the scale instead (e.g. 0 and 1 for weights; values outside are clipped).
    Masked and non-finite cells are grey.
    """
    shown = np.ma.masked_array(matrix, mask=hidden | ~np.isfinite(matrix))
    low, high = (float(shown.min()), float(shown.max())) if shown.count() else (0.0, 1.0)
    vmin, vmax = low if vmin is None else float(vmin), high if vmax is None else float(vmax)
    if vmin > vmax:
        raise ValueError(f"vmin must not be above vmax, got vmin={vmin}, vmax={vmax}")
    if vmin == vmax:  # one value only: scale from 0, so that 0 reads as 0 (lightest), not as mid-blue
        vmin, vmax = min(vmin, 0.0), max(vmax, 0.0) + 1.0
    scaled = ((shown - vmin) / (vmax - vmin)).clip(0.0, 1.0)
    rgba = CMAP(scaled)                       # masked entries get the 'bad' colour
    dark = (scaled > 0.6).filled(False)
    return rgba, np.asarray(dark)


def _checked_table(matrix: object, rows: object, cols: object, fmt: object) -> np.ndarray:
    """show_weights' and print_table's arguments checked; the matrix as a float (L, S) numpy array."""
    if isinstance(matrix, torch.Tensor):
        matrix = matrix.detach().float().cpu().numpy()
    try:
        matrix = np.asarray(matrix, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"matrix must be a torch.Tensor or numpy array of numbers, got {type(matrix).__name__}") \
            from None
    if matrix.ndim != 2:
        raise ValueError(f"matrix must be 2-D (L, S), got shape {matrix.shape}")
    if matrix.size == 0:
        raise ValueError(f"matrix must have at least one row and one column, got shape {matrix.shape}")
    for name, labels, n, what in (("rows", rows, matrix.shape[0], "query row"), ("cols", cols, matrix.shape[1],
                                                                                "key column")):
        if isinstance(labels, str) or not isinstance(labels, Sequence):
            raise TypeError(f"{name} must be a list of str labels (one per {what}), got {type(labels).__name__} "
                            f"{labels!r}")
        if len(labels) != n:
            raise ValueError(f"{name} must have {n} labels (one per {what}), got {len(labels)}")
        bad = next((label for label in labels if not isinstance(label, str)), None)
        if bad is not None:
            raise TypeError(f"{name} must hold str labels, got {type(bad).__name__} {bad!r}")
    if not isinstance(fmt, str):
        raise TypeError(f"fmt must be a format spec str for a float, like '.2f', got {type(fmt).__name__}")
    try:
        format(0.5, fmt)
    except ValueError:
        raise ValueError(f"fmt must be a format spec for a float, like '.2f', got {fmt!r}") from None
    return matrix


def show_weights(
    matrix: torch.Tensor | np.ndarray,
    rows: Sequence[str],
    cols: Sequence[str],
    *,
    title: str | Bilingual | None = None,
    ax: plt.Axes | None = None,
    masked: torch.Tensor | np.ndarray | None = None,
    fmt: str = ".2f",
    vmin: float | None = None,
    vmax: float | None = None,
) -> plt.Axes:
    """Draw an (L, S) table of scores or weights, each cell annotated.

    rows label the queries (y axis), cols the keys (x axis); the axes say so in the current language
    (helpers.language), and a Bilingual title is drawn in it too.
    masked: bool, broadcastable to (L, S), True = masked; those cells are greyed and hatched.
    The colour scale uses only finite, unmasked cells, so a -1e9 fill does not wash it out; vmin and vmax fix
    its ends instead (vmin=0, vmax=1 for weights: the same shade means the same weight in every figure).
    """
    matrix = _checked_table(matrix, rows, cols, fmt)
    L, S = matrix.shape
    hidden = as_hidden(masked, (L, S))
    with plt.rc_context(STYLE):
        if ax is None:
            _, ax = plt.subplots(figsize=(1.0 + 0.9 * S, 0.8 + 0.75 * L))
        _draw_table(ax, matrix, rows, cols, hidden, fmt, said(title) if title is not None else None, vmin, vmax)
    return ax


def _draw_table(ax: plt.Axes, matrix: np.ndarray, rows: Sequence[str], cols: Sequence[str], hidden: np.ndarray,
                fmt: str, title: str | None, vmin: float | None = None, vmax: float | None = None) -> None:
    """show_weights' drawing, inside its rc_context; fonts are set explicitly on `ax`, which may predate it."""
    L, S = matrix.shape
    font = {"fontfamily": STYLE["font.family"]}
    rgba, dark = cell_colors(matrix, hidden, vmin, vmax)
    ax.imshow(rgba, aspect="auto")

    hatched = [Rectangle((j - 0.5, i - 0.5), 1, 1) for i, j in zip(*np.nonzero(hidden), strict=True)]
    if hatched:  # one collection, not one patch per cell: much faster to draw
        ax.add_collection(PatchCollection(hatched, facecolor="none", edgecolor="#808080", hatch="///", linewidth=0),
                          autolim=False)
    for i in range(L):
        for j in range(S):
            ax.text(j, i, format_cell(matrix[i, j], fmt), ha="center", va="center",
                    color="white" if dark[i, j] else "black", fontsize=12, in_layout=False, **font)

    ax.set_xticks(range(S), labels=list(cols))
    ax.set_yticks(range(L), labels=list(rows))
    ax.set_xlabel(said(KEY), labelpad=8, fontsize="medium", **font)
    ax.set_ylabel(said(QUERY), fontsize="medium", **font)
    ax.tick_params(top=True, labeltop=True, bottom=False, labelbottom=False, labelsize="medium",
                   labelfontfamily=STYLE["font.family"])
    ax.xaxis.set_label_position("top")
    if title:
        ax.set_title(title, pad=12, fontsize=STYLE["axes.titlesize"], **font)


def show_mask_pattern(report: object, *, figsize: tuple[float, float] | None = None) -> plt.Figure:
    """Expected next to inferred mask of a helpers.checks.check_mask_pattern report; the differences marked.

    Blue = the output at that query depends on (expected: may depend on) that key; white = not. In the inferred
    panel a red cell with "L" is a leak (depends where it must not), an orange one with "O" over-masking (does
    not depend where it should); grey rows returned NaN or inf. The diagonal is never marked as a leak: every output
    depends on its own input through the query.
    """
    expected, inferred = (~getattr(report, name).numpy() for name in ("expected", "inferred"))  # True = depends
    L, S = expected.shape
    nonfinite = np.zeros(L, dtype=bool)
    nonfinite[list(report.nonfinite)] = True
    marks = [(pairs, letter, colour) for pairs, letter, colour in
             ((report.leaks, "L", "#cb181d"), (report.over_masked, "O", "#fd8d3c"))]
    colours = matplotlib.colors.ListedColormap(["white", "#6baed6", "#d9d9d9", "#fcbba1", "#fdd0a2"])
    side = min(7.0, max(2.6, 0.42 * S))                     # each panel: readable at L = 2, capped at L = 32
    labels = range(0, S, 1 if S <= 16 else 4)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=figsize or (2 * side + 1.0, side + 1.6), layout="constrained")
        found = np.where(nonfinite[:, None], 2, inferred.astype(int))
        for (pairs, _, _), code in zip(marks, (3, 4), strict=True):
            for i, j in pairs:
                found[i, j] = code
        panels = ((expected.astype(int), say("expected", "期待されるマスク")),
                  (found, say("inferred", "推定されたマスク")))
        for ax, (shown, title) in zip(axes, panels, strict=True):
            ax.imshow(shown, cmap=colours, vmin=0, vmax=4, aspect="equal")
            ax.set_xticks(list(labels))
            ax.set_yticks(list(range(0, L, 1 if L <= 16 else 4)))
            ax.set_xticks(np.arange(-0.5, S), minor=True)
            ax.set_yticks(np.arange(-0.5, L), minor=True)
            ax.grid(which="minor", color="#bdbdbd", linewidth=0.5)
            ax.tick_params(which="minor", length=0)
            ax.set(xlabel=said(KEY), ylabel=said(QUERY), title=title)
        for pairs, letter, colour in marks:
            for i, j in pairs:
                axes[1].text(j, i, letter, ha="center", va="center", color=colour, fontsize=13 if S <= 16 else 8,
                             in_layout=False)
        leaks, over, bad = len(report.leaks), len(report.over_masked), list(report.nonfinite)
        verdict = say("passed", "合格") if report.passed else (
            say(f"FAILED: {leaks} leak(s) L, {over} over-masked O",
                f"不合格：漏れ L が {leaks} 個、過剰なマスク O が {over} 個")
            + (say(f", NaN/inf at {bad} (grey)", f"、NaN/inf が {bad}（灰色）") if bad else ""))
        fig.suptitle(f"{report.check}\n{verdict}", fontsize=12)
        fig.supxlabel(say("blue: depends on the key; L: depends where it must not; O: does not where it should",
                          "青：そのキーに依存する。L：依存してはならないのに依存する。O：依存すべきなのに依存しない"),
                      fontsize=10)
    return fig


def _align(text: str, width: int, left: bool = False) -> str:
    """Pad to `width` terminal columns; 犬 猫 鳥 are two columns wide."""
    used = sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)
    gap = " " * max(width - used, 0)
    return text + gap if left else gap + text


def print_table(matrix: torch.Tensor | np.ndarray, rows: Sequence[str], cols: Sequence[str], fmt: str = ".2f") -> None:
    """Print an (L, S) table with token labels; -1e9, -inf and NaN in short form (as in show_weights)."""
    matrix = _checked_table(matrix, rows, cols, fmt)
    print(_align("", 6, left=True) + "".join(_align(c, 8) for c in cols))
    for label, row in zip(rows, matrix.tolist(), strict=True):
        print(_align(label, 6, left=True) + "".join(_align(format_cell(v, fmt), 8) for v in row))
