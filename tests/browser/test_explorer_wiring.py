"""explorer() and figure_png without a browser: the contract the browser tests and the benchmark rely on."""

from __future__ import annotations

import io

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from PIL import Image

from helpers.widgets import explorer, figure_png


def tight_png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=fig.dpi, bbox_inches="tight")
    return buffer.getvalue()


def size(png: bytes) -> tuple[int, int]:
    return Image.open(io.BytesIO(png)).size


def spy_formats(fig) -> list[str]:
    """Record the format of every savefig call on fig."""
    formats, savefig = [], fig.savefig
    fig.savefig = lambda *args, **kwargs: (formats.append(kwargs.get("format")), savefig(*args, **kwargs))[1]
    return formats


def test_figure_png_crops_like_tight_bbox_with_one_render():
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.imshow(np.arange(6).reshape(2, 3))
    ax.set_ylabel("a label that sticks out")  # partly left of the figure: drawn in the extra room
    fig.subplots_adjust(left=0.1)
    tight = size(tight_png(fig))
    formats = spy_formats(fig)
    fast = size(figure_png(fig))
    plt.close(fig)
    assert formats == ["rgba"], "one render, no fallback"
    assert abs(fast[0] - tight[0]) <= 4 and abs(fast[1] - tight[1]) <= 4, (fast, tight)


def test_figure_png_falls_back_when_ink_reaches_the_edge():
    fig = plt.figure(figsize=(6, 2))
    fig.text(0.5, 0.5, "W" * 80, ha="center", fontsize=30)  # far wider than the figure plus its room
    tight = tight_png(fig)
    formats = spy_formats(fig)
    fast = figure_png(fig)
    plt.close(fig)
    assert formats == ["rgba", "png"], "the fast render, then the tight fallback"
    assert size(fast) == size(tight)


def test_explorer_shows_summary_figure_and_refusal():
    def draw(n=1):
        if n > 2:
            raise ValueError("n must be at most 2")
        fig, ax = plt.subplots(figsize=(2, 2))
        ax.imshow(np.eye(n + 1))
        return fig, f"n = {n} <ok>"

    slider = widgets.IntSlider(value=1, min=0, max=3, description="n")
    box = explorer({"n": slider}, draw)
    row, summary, out = box.children
    assert "explorer" in box._dom_classes and "explorer-summary" in summary._dom_classes
    assert "explorer-figure" in out._dom_classes and list(row.children) == [slider]
    assert summary.value == "n = 1 &lt;ok&gt;"
    slider.value = 2  # the observer redraws
    assert summary.value == "n = 2 &lt;ok&gt;"
    slider.value = 3
    assert summary.value.startswith("<b>Not possible:</b> n must be at most 2")
    assert plt.get_fignums() == [], "explorer closes every figure it draws"
    box.refresh()
    assert summary.value.startswith("<b>Not possible:</b>")
