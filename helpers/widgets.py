"""Every explorer of the series, one import away: `from helpers import widgets`.

Each explorer has a view function (e.g. pad_cells_view) that computes what it shows; draw_view draws
that as a static figure, and the explorer shows it as live HTML tables (helpers/views.py).
The wiring shared by all of them is in helpers/explorer.py; each explorer lives beside its chapter's code:
explore_padding.py (chapters 1-3), explore_mha.py (4-5), explore_conventions.py (6), explore_classifier.py (8).
"""

from helpers.explore_conventions import (
    CH6_APIS,
    CH6_CONVENTIONS,
    CH6_TOKENS,
    ch6_convert,
    ch6_express,
    ch6_intended,
    ch6_weights,
    mask_convention_explorer,
    mask_convention_view,
)
from helpers.explore_mha import (
    CAUSAL_SEQUENCES,
    KPM_LENGTHS,
    causal_explorer,
    causal_toy,
    causal_view,
    kpm_batch,
    kpm_explorer,
    kpm_module,
    kpm_view,
)
from helpers.explore_padding import (
    DTYPES,
    FILLS,
    JUNK,
    POLICIES,
    attention_layer,
    layer2_params,
    pad_cells_explorer,
    pad_cells_view,
    pad_rows_explorer,
    pad_rows_view,
    softmax_explorer,
    softmax_view,
)
from helpers.explorer import explorer
from helpers.views import Panel, View, draw_view, view_html

__all__ = [
    "CAUSAL_SEQUENCES", "CH6_APIS", "CH6_CONVENTIONS", "CH6_TOKENS", "DTYPES", "FILLS", "JUNK", "KPM_LENGTHS",
    "POLICIES", "Panel", "View", "attention_layer", "causal_explorer", "causal_toy", "causal_view", "ch6_convert",
    "ch6_express", "ch6_intended", "ch6_weights", "draw_view", "explorer", "kpm_batch", "kpm_explorer",
    "kpm_module", "kpm_view", "layer2_params", "mask_convention_explorer", "mask_convention_view",
    "pad_cells_explorer", "pad_cells_view", "pad_rows_explorer", "pad_rows_view", "softmax_explorer",
    "softmax_view", "view_html",
]

# Chapter 8 (appended): the two trained classifiers, helpers/explore_classifier.py.
from helpers.explore_classifier import MASK_MODES, classifier_explorer, classifier_view, highlight_html  # noqa: E402
from helpers.explore_classifier import SENTENCES as CLASSIFIER_SENTENCES  # noqa: E402

__all__ += ["CLASSIFIER_SENTENCES", "MASK_MODES", "classifier_explorer", "classifier_view", "highlight_html"]
