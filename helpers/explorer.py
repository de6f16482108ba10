"""Explorers: small ipywidgets apps that recompute a chapter's table live.

Every explorer is built by `explorer(controls, draw)`:
- `controls` maps a keyword name to an ipywidgets control;
- `draw(**values)` returns `(figure, summary)`: a matplotlib Figure and a one-line text summary
  of the numbers shown (browser tests read it from the `.explorer-summary` element);
- a ValueError from `draw` (an impossible combination, e.g. every token padded) is shown as a
  message inside the widget: no traceback, no NaN plot.
Each chapter draws a static figure with the same `draw` function first, for readers who can't run it.
"""

from __future__ import annotations

import html
import io
from collections.abc import Callable

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from IPython.display import Image, display
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox
from PIL import Image as PILImage

Draw = Callable[..., tuple[Figure, str]]


def figure_png(fig: Figure, pad_inches: float = 0.1, room_inches: float = 0.5) -> bytes:
    """fig as PNG, cropped to its ink plus pad_inches: what bbox_inches="tight" gives, with one render instead of two.

    The canvas gets room_inches on every side, for labels that stick out of the figure; if ink still
    reaches the edge, this falls back to savefig(bbox_inches="tight").
    """
    width, height = fig.get_size_inches()
    room = Bbox.from_extents(-room_inches, -room_inches, width + room_inches, height + room_inches)
    raw = io.BytesIO()
    fig.savefig(raw, format="rgba", dpi=fig.dpi, bbox_inches=room)
    shape = (round(room.height * fig.dpi), round(room.width * fig.dpi), 4)
    rgba = np.frombuffer(raw.getbuffer(), dtype=np.uint8)
    background = np.round(np.array(to_rgba(fig.get_facecolor())) * 255).astype(np.uint8)
    ink = (rgba.reshape(shape) != background).any(axis=-1) if rgba.size == np.prod(shape) else None
    if ink is None or not ink.any() or ink[0].any() or ink[-1].any() or ink[:, 0].any() or ink[:, -1].any():
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=fig.dpi, bbox_inches="tight", pad_inches=pad_inches)
        return buffer.getvalue()
    rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    pad = round(pad_inches * fig.dpi)
    crop = rgba.reshape(shape)[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]
    framed = np.empty((crop.shape[0] + 2 * pad, crop.shape[1] + 2 * pad, 4), dtype=np.uint8)
    framed[:] = background
    framed[pad:pad + crop.shape[0], pad:pad + crop.shape[1]] = crop
    buffer = io.BytesIO()
    PILImage.fromarray(framed, "RGBA").save(buffer, format="png", compress_level=1)  # fast; size matters little here
    return buffer.getvalue()


def explorer(controls: dict[str, widgets.ValueWidget], draw: Draw) -> widgets.VBox:
    """Wire controls to draw(); returns the widget (its .refresh() redraws, for tests and benchmarks)."""
    summary = widgets.HTML().add_class("explorer-summary")
    out = widgets.Output().add_class("explorer-figure")

    def refresh(_change: object = None) -> None:
        values = {name: control.value for name, control in controls.items()}
        try:
            fig, text = draw(**values)
        except ValueError as error:
            summary.value = f"<b>Not possible:</b> {html.escape(str(error))}"
            out.clear_output()
            return
        try:
            png = figure_png(fig)
        finally:
            plt.close(fig)
        summary.value = html.escape(text)
        with out:
            out.clear_output(wait=True)
            display(Image(data=png, format="png"))

    for control in controls.values():
        control.observe(refresh, names="value")
    row = widgets.HBox(list(controls.values()), layout=widgets.Layout(flex_flow="row wrap"))  # wrap, don't squeeze
    box = widgets.VBox([row, summary, out]).add_class("explorer")
    box.refresh = refresh  # type: ignore[attr-defined]
    refresh()
    return box
