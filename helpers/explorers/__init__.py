"""Every chapter's explorer, one import away: `from helpers import explorers`.

Each explorer has a view function (e.g. pad_cells_view) that computes what it shows: `draw_view` draws
that as a static figure, and the explorer shows it as live HTML tables (base.py). The chapters' code:
padding.py (chapters 1-3), mha.py (4-5), conventions.py (6), fast_paths.py (7).

EXPLORERS lists, per chapter, the explorers its notebook shows, in order: the browser tests and
benchmarks/bench_explorers.py read it. A new chapter's explorer goes in its own module and here.
"""

from collections.abc import Callable

from helpers.explorers import conventions
from helpers.explorers.base import Explorer, Panel, View, draw_view, explorer, view_html
from helpers.explorers.conventions import mask_convention_explorer, mask_convention_view
from helpers.explorers.fast_paths import fast_paths_explorer, fast_paths_view
from helpers.explorers.mha import causal_explorer, causal_view, kpm_explorer, kpm_view
from helpers.explorers.padding import (
    pad_cells_explorer,
    pad_cells_view,
    pad_rows_explorer,
    pad_rows_view,
    softmax_explorer,
    softmax_view,
)

# Chapter ("01", "02", ...) -> the explorers its notebook shows, in notebook order.
EXPLORERS: dict[str, tuple[Callable[[], Explorer], ...]] = {
    "01": (pad_cells_explorer,),
    "02": (softmax_explorer,),
    "03": (pad_rows_explorer,),
    "04": (kpm_explorer,),
    "05": (causal_explorer,),
    "06": (mask_convention_explorer,),
    "07": (fast_paths_explorer,),
}

__all__ = [
    "EXPLORERS", "Explorer", "Panel", "View", "causal_explorer", "causal_view", "conventions", "draw_view",
    "explorer", "fast_paths_explorer", "fast_paths_view", "kpm_explorer", "kpm_view", "mask_convention_explorer",
    "mask_convention_view", "pad_cells_explorer", "pad_cells_view", "pad_rows_explorer", "pad_rows_view",
    "softmax_explorer", "softmax_view", "view_html",
]
