"""The small package behind the notebooks: masks, attention, plots (and the chapters' extras)."""

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
from helpers.plots import show_weights

__all__ = [
    "AttentionSteps",
    "CheckReport",
    "attention_steps",
    "causal_mask",
    "check_no_future_leak",
    "check_padding_invariance",
    "fill_value",
    "from_hf_attention_mask",
    "key_padding_mask",
    "show_weights",
    "to_additive_mask",
    "to_sdpa_mask",
]
