"""The small package behind the notebooks.

masks, attention, plots and checks are imported here; `toy` (the running example) and `widgets`
(the explorers) are modules of their own: `from helpers import toy, widgets`.
"""

from helpers.attention import AttentionSteps, attention_steps
from helpers.checks import CheckReport, check_no_future_leak, check_padding_invariance
from helpers.masks import (
    causal_mask,
    fill_value,
    from_hf_attention_mask,
    key_padding_mask,
    to_additive_mask,
    to_sdpa_mask,
)
from helpers.plots import print_table, show_weights
from helpers.versions import check_versions

__all__ = [
    "AttentionSteps",
    "CheckReport",
    "attention_steps",
    "causal_mask",
    "check_no_future_leak",
    "check_padding_invariance",
    "check_versions",
    "fill_value",
    "from_hf_attention_mask",
    "key_padding_mask",
    "print_table",
    "show_weights",
    "to_additive_mask",
    "to_sdpa_mask",
]
