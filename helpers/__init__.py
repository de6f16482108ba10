"""The small package behind the notebooks.

The attention API is here: masks, attention_steps, the checks, diagnose (every check on a model you did not
write: `from helpers import diagnose; help(diagnose)`), and the plots. `toy` (the running example) and
`explorer` (the explorers' machinery) are modules of their own; each chapter's code is in helpers.chapters:
`from helpers.chapters import ch04_key_padding_mask as ch04`.
The core (masks, attention, checks) needs only torch: show_weights and print_table load matplotlib on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from helpers.attention import AttentionSteps, attention_steps
from helpers.checks import (
    CheckReport,
    check_gradient_padding_invariance,
    check_no_future_leak,
    check_padding_invariance,
)

# helpers.diagnose is the function diagnose(model); its module is `from helpers.diagnose import ...` and python -m
from helpers.diagnose import Diagnosis, Finding, diagnose
from helpers.masks import (
    causal_mask,
    fill_value,
    from_hf_attention_mask,
    key_padding_mask,
    to_additive_mask,
    to_sdpa_mask,
)
from helpers.versions import check_versions

if TYPE_CHECKING:
    from helpers.plots import print_table, show_weights

__all__ = [
    "AttentionSteps",
    "CheckReport",
    "Diagnosis",
    "Finding",
    "attention_steps",
    "causal_mask",
    "check_gradient_padding_invariance",
    "check_no_future_leak",
    "check_padding_invariance",
    "check_versions",
    "diagnose",
    "fill_value",
    "from_hf_attention_mask",
    "key_padding_mask",
    "print_table",
    "show_weights",
    "to_additive_mask",
    "to_sdpa_mask",
]


def __getattr__(name: str) -> object:
    """show_weights and print_table, imported on first use (matplotlib is an extra: pip install '.[notebooks]')."""
    if name in ("show_weights", "print_table"):
        try:
            from helpers import plots
        except ModuleNotFoundError as error:
            if error.name not in ("numpy", "matplotlib", "matplotlib_fontja"):
                raise
            raise ImportError(f"helpers.{name} needs {error.name}, which comes with the notebooks extra: "
                              "pip install 'attention-masks-helpers[notebooks]' (or: pip install '.[notebooks]')"
                              ) from error
        return getattr(plots, name)
    raise AttributeError(f"module 'helpers' has no attribute {name!r}")
