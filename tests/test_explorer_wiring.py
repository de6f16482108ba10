"""explorer() without a browser: the contract the browser tests and the benchmark rely on."""

from __future__ import annotations

import ipywidgets as widgets
import torch

from helpers.widgets import Panel, View, explorer


def test_explorer_shows_summary_tables_and_refusal():
    def view(n=1):
        if n > 2:
            raise ValueError("n must be at most 2")
        return View((Panel(torch.eye(n + 1), ["a"] * (n + 1), ["b"] * (n + 1)),), f"n = {n} <ok>")

    slider = widgets.IntSlider(value=1, min=0, max=3, description="n")
    box = explorer({"n": slider}, view)
    row, summary, tables = box.children
    assert "explorer" in box._dom_classes and "explorer-summary" in summary._dom_classes
    assert "explorer-tables" in tables._dom_classes and list(row.children) == [slider]
    assert summary.value == "n = 1 &lt;ok&gt;"
    assert tables.value.count("<td") == 4
    slider.value = 2  # the observer redraws
    assert summary.value == "n = 2 &lt;ok&gt;" and tables.value.count("<td") == 9
    slider.value = 3
    assert summary.value.startswith("<b>Not possible:</b> n must be at most 2")
    assert tables.value == "", "a refused combination shows no table"
    box.refresh()
    assert summary.value.startswith("<b>Not possible:</b>")
