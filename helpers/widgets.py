"""Every explorer of the series, one import away: `from helpers import widgets`.

The wiring shared by all of them is in helpers/explorer.py; each explorer lives beside its chapter's code:
explore_padding.py (chapters 1-3), explore_mha.py (4-5), explore_conventions.py (6).
"""

from helpers.explore_conventions import (
    CH6_APIS,
    CH6_CONVENTIONS,
    CH6_TOKENS,
    ch6_convert,
    ch6_express,
    ch6_intended,
    ch6_weights,
    draw_mask_convention,
    mask_convention_explorer,
)
from helpers.explore_mha import (
    CAUSAL_SEQUENCES,
    KPM_LENGTHS,
    causal_explorer,
    causal_toy,
    draw_causal_edit,
    draw_kpm_experiment,
    kpm_batch,
    kpm_explorer,
    kpm_module,
)
from helpers.explore_padding import (
    DTYPES,
    FILLS,
    JUNK,
    POLICIES,
    attention_layer,
    draw_pad_cells,
    draw_pad_rows,
    draw_softmax,
    layer2_params,
    pad_cells_explorer,
    pad_rows_explorer,
    softmax_explorer,
)
from helpers.explorer import explorer, figure_png

__all__ = [
    "CAUSAL_SEQUENCES", "CH6_APIS", "CH6_CONVENTIONS", "CH6_TOKENS", "DTYPES", "FILLS", "JUNK", "KPM_LENGTHS",
    "POLICIES", "attention_layer", "causal_explorer", "causal_toy", "ch6_convert", "ch6_express", "ch6_intended",
    "ch6_weights", "draw_causal_edit", "draw_kpm_experiment", "draw_mask_convention", "draw_pad_cells",
    "draw_pad_rows", "draw_softmax", "explorer", "figure_png", "kpm_batch", "kpm_explorer", "kpm_module",
    "layer2_params", "mask_convention_explorer", "pad_cells_explorer", "pad_rows_explorer", "softmax_explorer",
]
