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
from collections.abc import Callable

import ipywidgets as widgets
import matplotlib.pyplot as plt
from IPython.display import display
from matplotlib.figure import Figure

Draw = Callable[..., tuple[Figure, str]]


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
        summary.value = html.escape(text)
        with out:
            out.clear_output(wait=True)
            display(fig)
        plt.close(fig)

    for control in controls.values():
        control.observe(refresh, names="value")
    box = widgets.VBox([widgets.HBox(list(controls.values())), summary, out]).add_class("explorer")
    box.refresh = refresh  # type: ignore[attr-defined]
    refresh()
    return box


# --- chapter 2: softmax on masked rows ---

# --- chapter 3: does the pad row matter ---

# --- chapter 4: key_padding_mask ---

# --- chapter 5: attn_mask and causality ---

# --- chapter 6: mask pitfalls ---
