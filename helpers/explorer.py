"""Explorers: small ipywidgets apps that recompute a chapter's table live.

Every explorer is built by `explorer(controls, view)`:
- `controls` maps a keyword name to an ipywidgets control;
- `view(**values)` returns a `View` (helpers/views.py): the tables to show and a one-line summary of
  the numbers (browser tests read it from the `.explorer-summary` element);
- the tables are shown as HTML (`.explorer-tables`): an update takes a few ms, where redrawing a
  matplotlib figure took 50-150 ms;
- a ValueError from `view` (an impossible combination, e.g. every token padded) is shown as a
  message inside the widget: no traceback, no NaN table.
Each chapter draws the same view as a static matplotlib figure first (draw_view), for readers who can't run it.
"""

from __future__ import annotations

import html
from collections.abc import Callable

import ipywidgets as widgets

from helpers.views import View, view_html

REFUSED = "<b>Not possible:</b> "


def explorer(controls: dict[str, widgets.ValueWidget], view: Callable[..., View]) -> widgets.VBox:
    """Wire controls to view(); returns the widget (its .refresh() redraws, for tests and benchmarks)."""
    summary = widgets.HTML().add_class("explorer-summary")
    tables = widgets.HTML().add_class("explorer-tables")

    def refresh(_change: object = None) -> None:
        values = {name: control.value for name, control in controls.items()}
        try:
            shown = view(**values)
            table_html = view_html(shown)
        except ValueError as error:
            tables.value = ""
            summary.value = REFUSED + html.escape(str(error))
            return
        tables.value = table_html
        summary.value = html.escape(shown.summary)

    for control in controls.values():
        control.observe(refresh, names="value")
    row = widgets.HBox(list(controls.values()), layout=widgets.Layout(flex_flow="row wrap"))  # wrap, don't squeeze
    box = widgets.VBox([row, summary, tables]).add_class("explorer")
    box.refresh = refresh  # type: ignore[attr-defined]
    refresh()
    return box
