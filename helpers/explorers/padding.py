"""Explorers of chapters 1-3 (the book's pad mask): which cells are masked, softmax on masked rows,
and whether the pad rows ever reach a real token."""

from __future__ import annotations

import functools
import math

import ipywidgets as widgets
import torch

from helpers import toy
from helpers.attention import attention_steps
from helpers.explorers.base import Explorer, Panel, View, explorer

# --- chapter 1: the pad question ---

def pad_cells_view(n_pads: int = 2) -> View:
    """The book's masked score table for 5 tokens with `n_pads` pads: -1e9 cells hatched, '?' cells framed."""
    tokens = toy.tokens(n_pads)
    if n_pads == len(tokens):
        raise ValueError("every token is <pad>: no real word is left to look at. "
                         "A batch never holds an empty sentence; keep at least one word.")
    ids, _, q, k, _ = toy.qkv(tokens)
    mask = (ids != toy.PAD_ID).unsqueeze(1)                       # the book's mask, (1, 1, S), True = real key
    scores = q @ k.transpose(-2, -1) / toy.D_MODEL ** 0.5
    masked_scores = scores.masked_fill(mask == 0, -1e9)[0]
    unsure = toy.question_cells(tokens)
    panel = Panel(masked_scores, tokens, tokens, title="scores after masked_fill(-1e9)",
                  masked=(mask == 0)[0], framed=unsure, mark="?")
    changed = int((masked_scores != scores[0]).sum())
    return View((panel,), f"{n_pads} pad(s): {changed} cells set to -1e9 (the pad columns), "
                          f"{int(unsure.sum())} '?' cells (pad query rows x real key columns) keep their scores",
                caption="hatched: set to -1e9    orange ?: pad query x real key, left as it was")


def pad_cells_explorer() -> Explorer:
    """Number of pads -> which cells the book's mask sets to -1e9 and which stay '?'."""
    controls = {"n_pads": widgets.IntSlider(value=2, min=0, max=5, description="pads")}
    return explorer(controls, pad_cells_view)


# --- chapter 2: softmax on masked rows ---

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


# --- chapter 3: does the pad row matter ---

JUNK = ("none", "random x1000", "zeros", "NaN")  # what replaces the pad rows between the layers


@functools.cache  # the explorer recomputes only what a control changes
def _layer1(policy: str, n_pads: int) -> tuple[torch.Tensor, ...]:
    """pad, layer 1's output under `policy`, the book's layer-2 output without junk, and W2."""
    ids, x, *_ = toy.qkv(toy.tokens(n_pads))
    _, *W1 = toy.params()
    W2 = toy.layer2_params()
    pad = ids == toy.PAD_ID
    h1, _ = toy.attention_layer(x, W1, pad, policy)
    reference = toy.attention_layer(toy.attention_layer(x, W1, pad)[0], W2, pad)[0]   # the book, no junk
    return pad, h1, reference, W2


def pad_rows_view(policy: str = "leave", junk: str = "random x1000", n_pads: int = 2) -> View:
    """Two layers with a pad-row policy and junk in the pad rows between them, against the book without junk."""
    tokens = toy.tokens(n_pads)
    if n_pads == len(tokens):
        raise ValueError("every token is <pad>: there is no real token whose output could be checked. "
                         "Keep at least one word.")
    if junk not in JUNK:
        raise ValueError(f"junk must be one of {list(JUNK)}, got {junk!r}")
    pad, h1, reference, W2 = _layer1(policy, n_pads)
    if junk == "none":
        replacement = h1
    elif junk == "random x1000":
        replacement = torch.randn(h1.shape, generator=torch.Generator().manual_seed(0)) * 1000
    elif junk == "zeros":
        replacement = torch.zeros(h1.shape)
    else:
        replacement = torch.full(h1.shape, float("nan"))
    h1_junk = torch.where(pad.unsqueeze(-1), replacement, h1)
    h2_junk, w2_junk = toy.attention_layer(h1_junk, W2, pad, policy)
    diff = (h2_junk - reference).abs()[0]

    panels = (Panel(w2_junk[0], tokens, tokens, masked=pad[0],
                    title="layer 2 weights" + ("" if junk == "none" else f", pad rows = {junk}")),
              Panel(diff, tokens, ["d0", "d1", "d2", "d3"], fmt=".2g", title="|output - book's, no junk|",
                    xlabel="feature", ylabel=""))

    real_diff = diff[~pad[0]].max().item()
    text = f"policy {policy}, junk {junk}, {n_pads} pad(s): real rows max |change| = {real_diff:g}"
    if n_pads:
        text += f"; pad rows max |change| = {diff[pad[0]].max().item():g}"
    if math.isnan(real_diff) and policy == "-inf" and junk == "none":
        text += ". The -inf pad rows are NaN after layer 1, and in layer 2 a NaN value weighted 0 gives 0 x NaN = NaN"
    elif math.isnan(real_diff):
        text += ". NaN reached the real rows: a pad value weighted 0 gives 0 x NaN = NaN"
    return View(panels, text)


def pad_rows_explorer() -> Explorer:
    """Pad-row policy, junk in the pad rows and number of pads -> does anything reach the real tokens?"""
    controls = {
        "policy": widgets.Dropdown(options=[(label, key) for key, label in toy.POLICIES.items()], value="leave",
                                   description="pad rows"),
        "junk": widgets.Dropdown(options=list(JUNK), value="random x1000", description="junk"),
        "n_pads": widgets.IntSlider(value=2, min=0, max=5, description="pads"),
    }
    return explorer(controls, pad_rows_view)
