"""Point every check at a model you did not write: `helpers.diagnose(model)`, or from a shell
`python -m helpers.diagnose --model-type llama` (`--help` for the rest).

    from helpers import diagnose
    report = diagnose(model)             # a transformers PreTrainedModel, or a module in the checks' convention
    report.passed, report.codes          # True / ["future-leak", ...]
    report.show()                        # the findings, and expected against inferred masks
    report.to_dict()                     # JSON-ready

What it runs, on each part of the model (an encoder-decoder has three: its encoder, its decoder's
self-attention and its cross-attention), with the checks of helpers.checks and their tolerance:
- the same input twice (`nondeterministic`: dropout in training mode; then nothing else runs);
- a padded batch on each side: NaN or inf at real positions (`nan-forward`; at pads only, a note);
- an unpadded batch against its items alone, and item 0 with new values in the others (`batch-dependence`);
- check_padding_invariance on batches of 3 and on one padded item alone, right- and left-padded (`pad-leak`);
  left padding again without position ids, for a model that takes them (`position-ids`: a warning, since the
  model is right when it is given them; the message says how to build them);
- check_mask_pattern against the expectation (`future-leak`, `over-masking`, `window-mismatch`,
  `document-leak`), and check_no_future_leak on padded batches when the expectation hides the future;
- check_gradient_padding_invariance (`nan-gradient`; gradients that depend on the pads are a `pad-leak`);
- a cached multi-token step and 3-token chunks against one full pass (`cache-mismatch`): transformers models
  that take past_key_values, and a plain module with the cache protocol below.

The expectation (`expect`): "causal", "bidirectional", "sliding_window" (with window=), a bool mask (True = not
allowed) or a mask_mod, as in check_mask_pattern. For a transformers model, None means what its config declares
(use_bidirectional_attention, is_causal, is_decoder, then the architecture's listing as a masked or causal LM;
a sliding window when sliding_window is set and every layer uses it; an encoder-decoder's encoder and
cross-attention see everything, its decoder is causal). For a plain module, None means its `is_causal`
attribute when it has one; without one the mask is inferred and described in a note, and judged by nothing.
The report says where each expectation came from.

Plain modules: `model(x, key_padding_mask, attn_mask[, position_ids]) -> output`, x (N, L, E) float32,
key_padding_mask bool (N, L) True = pad, attn_mask bool (L, L) True = blocked, or None (help(helpers.checks));
nn.MultiheadAttention and nn.TransformerEncoder(Layer) are adapted. diagnose passes attn_mask=None: a module
owns its mask, and diagnose measures what the module does by itself. attn_mask= forwards one (cut to each
call's length; left padding is then checked only if the mask depends on i - j alone, as causal masks and windows
do). The cache protocol: a method `forward_with_cache(x, cache) -> (output, cache)`, x (N, T, E) the next tokens,
cache None at the start; the chunks' outputs, joined, must equal one call on every token.

Transformers models enter after the token embedding (inputs_embeds, attention_mask, position_ids where the
model takes them): a decoder-only or encoder-only model is one part; with no position_ids in its forward it is
checked with right padding only. `length` is the longest padded length tried (default 16), `embed_dim` the size of
x (default: the module's embed_dim or the model's input embeddings), `dtype` the dtype the model computes in if
an adapter hides it; `seed` seeds every trial.
Limits: what the checks cannot see, diagnose cannot either (a dependence below the tolerance; help(helpers.checks)).
A Finding names one problem; what usually causes it closes its message. Codes are stable: CODES.
"""

from __future__ import annotations

import torch
from torch import nn

from helpers import arguments
from helpers.checks.core import _parameters, as_attn, embed_dim_of
from helpers.checks.inference import PATTERNS
from helpers.diagnose.report import CODES, WARNINGS, Diagnosis, Finding, Ran
from helpers.diagnose.run import Subject, causal_by_module, plain_cache, run_subject
from helpers.language import say


def diagnose(model: object, *, expect: object = None, window: int | None = None, length: int | None = None,
             embed_dim: int | None = None, attn_mask: torch.Tensor | None = None, seed: int = 0,
             dtype: torch.dtype | None = None) -> Diagnosis:
    """Every check of helpers.checks on `model`, as one Diagnosis of findings (the manual follows)."""
    from helpers.diagnose import hf

    _validate(model, expect, window, length, attn_mask, dtype)
    seed = arguments.integer(seed, "seed")
    if hf.is_transformers_model(model):
        parts = hf.subjects(model, expect=expect, window=window, embed_dim=embed_dim, dtype=dtype)  # type: ignore
        name = f"{type(model).__name__} ({hf.model_type(model)})"   # type: ignore[arg-type]
    else:
        parts, name = [_plain(model, expect, window, embed_dim, dtype)], type(model).__name__
    diagnosis = Diagnosis(name)
    for part in parts:
        run_subject(part, diagnosis, length=length, attn_mask=attn_mask, seed=seed, dtype=dtype)
    return diagnosis


diagnose.__doc__ = f"{diagnose.__doc__}\n\n{__doc__}"   # help(diagnose): helpers.diagnose is this function


def _plain(model: object, expect: object, window: int | None, embed_dim: int | None,
           dtype: torch.dtype | None) -> Subject:
    source = say("given expect=", "expect= で指定")
    if expect is None:
        expect, source = causal_by_module(model)
    if embed_dim is None and isinstance(getattr(model, "embed_dim", None), int):
        embed_dim = model.embed_dim   # type: ignore[attr-defined]
    E = embed_dim_of(model, embed_dim)
    cache = plain_cache(model, E, dtype) if callable(getattr(model, "forward_with_cache", None)) else None
    parameters = [p for p in model.parameters() if p.requires_grad] if isinstance(model, nn.Module) else None
    attn = as_attn(model)
    optional = _parameters(attn).get("position_ids")   # position ids it can do without: check left padding so too
    without = None
    if optional is not None and optional.default is not optional.empty:
        def without(x: torch.Tensor, kpm: torch.Tensor, am: torch.Tensor | None) -> object:
            return attn(x, kpm, am)
    return Subject("model", attn, E, expect, source, window, cache=cache, parameters=parameters,
                   without_position_ids=without)


def _validate(model: object, expect: object, window: object, length: object, attn_mask: object,
              dtype: object) -> None:
    """The arguments, by name, before anything runs."""
    if not callable(model):
        raise TypeError(f"model must be a transformers PreTrainedModel or a callable module "
                        f"model(x, key_padding_mask, attn_mask) -> output, got {type(model).__name__}")
    if isinstance(expect, str) and expect not in PATTERNS:
        raise ValueError(f"expect must be one of {list(PATTERNS)}, a bool mask, a mask_mod or None, got {expect!r}")
    if expect is not None and not isinstance(expect, (str, torch.Tensor)) and not callable(expect):
        raise TypeError(f"expect must be a pattern name, a bool mask, a mask_mod or None, got {type(expect).__name__}")
    if window is not None:
        arguments.integer(window, "window", minimum=1)
        if expect not in ("sliding_window", None):
            raise ValueError("window goes with expect='sliding_window' (or a config's own window) only")
    if expect == "sliding_window" and window is None:
        raise ValueError("expect='sliding_window' needs window= (how many keys each query sees, itself included)")
    if length is not None:
        arguments.integer(length, "length", minimum=2)
    if attn_mask is not None:
        arguments.bool_mask(attn_mask, "attn_mask")
        if attn_mask.dim() != 2 or attn_mask.shape[0] != attn_mask.shape[1]:
            raise ValueError(f"attn_mask must be a square bool (L, L) mask, True = blocked, got "
                             f"{tuple(attn_mask.shape)}")
        if length is not None and length > attn_mask.shape[0]:
            raise ValueError(f"length={length} is longer than attn_mask ({attn_mask.shape[0]})")
    if dtype is not None and not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype such as torch.bfloat16, or None, got {type(dtype).__name__}")


__all__ = ["CODES", "WARNINGS", "Diagnosis", "Finding", "Ran", "diagnose"]
