"""Chapter 2's explorer: softmax on masked rows, for a fill value, a dtype and a choice for the pad rows."""

from __future__ import annotations

import ipywidgets as widgets
import torch

from helpers import toy
from helpers.attention import attention_steps
from helpers.explorer import Explorer, Panel, View, explorer

FILLS = {"-1e9": -1e9, "-1e4": -1e4, "finfo.min": "min", "-inf": "-inf"}  # label -> attention_steps fill
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def softmax_view(n_pads: int = 2, fill: str = "-1e9", dtype: str = "float32", mask_pad_rows: bool = False) -> View:
    """Masked scores and softmax weights of the toy, for a fill value, a dtype and a pad-row choice."""
    tokens = toy.tokens(n_pads)
    if n_pads == len(tokens):
        raise ValueError("every token is <pad>: every row would be fully masked and no word is left. "
                         "Keep at least one word.")
    if fill not in FILLS or dtype not in DTYPES:
        raise ValueError(f"fill must be one of {list(FILLS)} and dtype one of {list(DTYPES)}, got {fill!r}, {dtype!r}")
    _, _, q, k, v = (t[0] for t in toy.qkv(tokens))
    q, k, v = (t.to(DTYPES[dtype]) for t in (q, k, v))
    pad = toy.is_pad(tokens)
    pad_rows = pad[:, None] if mask_pad_rows else None
    try:
        steps = attention_steps(q, k, v, key_padding_mask=pad, attn_mask=pad_rows, fill=FILLS[fill])
    except ValueError as error:  # e.g. -1e9 in float16: masked_fill itself raises an overflow error there
        raise ValueError(f"{error}. In PyTorch, masked_fill(-1e9) on a float16 tensor raises an overflow error.") \
            from None
    hidden = pad[None, :] | (pad[:, None] if mask_pad_rows else False)
    nan_rows = bool(steps.weights.isnan().any())
    panels = (Panel(steps.masked_scores, tokens, tokens, title=f"scores, {dtype}, fill {fill}", masked=hidden),
              Panel(steps.weights, tokens, tokens, ylabel="", alert=nan_rows, masked=hidden,
                    title="weights: NaN rows!" if nan_rows else "weights = softmax(row)"))

    real_rows = steps.weights[~pad]
    pad_rows_w = steps.weights[pad]
    if not n_pads:
        rows_text = "no pad rows"
    elif pad_rows_w.isnan().all():
        rows_text = "pad rows are NaN on purpose: a row of -inf gives -inf - (-inf) = NaN"
    elif (pad_rows_w == pad_rows_w[0, 0]).all():
        rows_text = f"pad rows: every weight {pad_rows_w[0, 0].item():.4f} (1/{len(tokens)}: a constant row is uniform)"
    else:
        rows_text = "pad rows: ordinary distributions over the real words"
    keys_text = f"real rows give the pad keys weight {real_rows[:, pad].max().item():g}" if n_pads else "no pad keys"
    return View(panels, f"{dtype}, fill {fill}, {n_pads} pad(s), pad rows {'masked' if mask_pad_rows else 'kept'}: "
                        f"{keys_text}; {rows_text}")


def softmax_explorer() -> Explorer:
    """Pads, fill value, dtype and pad-row masking -> the masked scores and the weights, live."""
    controls = {
        "n_pads": widgets.IntSlider(value=2, min=0, max=5, description="pads"),
        "fill": widgets.Dropdown(options=list(FILLS), value="-1e9", description="fill"),
        "dtype": widgets.Dropdown(options=list(DTYPES), value="float32", description="dtype"),
        "mask_pad_rows": widgets.Checkbox(value=False, description="mask pad rows too"),
    }
    return explorer(controls, softmax_view)


EXPLORERS = (softmax_explorer,)
