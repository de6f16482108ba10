"""Chapter 3: two attention layers on the running toy, and an explorer: does junk in the pad rows reach a real token?

attention_layer, layer2_params and POLICIES (how a layer treats the pad query rows) are the model; the
explorer puts junk in the pad rows between the two layers and compares with the book's layers without junk.
"""

from __future__ import annotations

import functools
import math

import ipywidgets as widgets
import torch

from helpers import toy
from helpers.attention import attention_steps
from helpers.explorer import Explorer, Panel, View, explorer

# --- two layers, and what a layer does with the pad query rows ---

POLICIES = {  # how a layer treats the pad query rows (the pad key columns are always masked) -> its label
    "leave": "leave them (the book)",
    "uniform": "mask them too: 1/5",
    "zero": "zero them after softmax",
    "-inf": "mask them with -inf: NaN",
}


def layer2_params(seed: int = 3) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """W_q, W_k, W_v (4, 4) of chapter 3's second layer: seeded randn rounded to one decimal."""
    g = torch.Generator().manual_seed(seed)
    W_q, W_k, W_v = (torch.randn(toy.D_MODEL, toy.D_MODEL, generator=g).round(decimals=1) for _ in range(3))
    return W_q, W_k, W_v


def attention_layer(h: torch.Tensor, W: tuple[torch.Tensor, ...], pad: torch.Tensor,
                    policy: str = "leave") -> tuple[torch.Tensor, torch.Tensor]:
    """h + weights @ v for h (N, S, d) and pad (N, S), True = pad; returns (output, weights)."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {list(POLICIES)}, got {policy!r}")
    q, k, v = h @ W[0], h @ W[1], h @ W[2]
    rows = pad.unsqueeze(-1)                                     # (N, S, 1): the pad query rows
    if policy == "leave":
        weights = attention_steps(q, k, v, key_padding_mask=pad).weights
    elif policy == "zero":
        weights = attention_steps(q, k, v, key_padding_mask=pad).weights * ~rows
    else:
        fill = -1e9 if policy == "uniform" else "-inf"
        weights = attention_steps(q, k, v, key_padding_mask=pad, attn_mask=rows, fill=fill).weights
    return h + weights @ v, weights


# --- the explorer: does the pad row matter ---

JUNK = ("none", "random x1000", "zeros", "NaN")  # what replaces the pad rows between the layers


@functools.cache  # the explorer recomputes only what a control changes
def _layer1(policy: str, n_pads: int) -> tuple[torch.Tensor, ...]:
    """pad, layer 1's output under `policy`, the book's layer-2 output without junk, and W2."""
    ids, x, *_ = toy.qkv(toy.tokens(n_pads))
    _, *W1 = toy.params()
    W2 = layer2_params()
    pad = ids == toy.PAD_ID
    h1, _ = attention_layer(x, W1, pad, policy)
    reference = attention_layer(attention_layer(x, W1, pad)[0], W2, pad)[0]   # the book, no junk
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
    h2_junk, w2_junk = attention_layer(h1_junk, W2, pad, policy)
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
        "policy": widgets.Dropdown(options=[(label, key) for key, label in POLICIES.items()], value="leave",
                                   description="pad rows"),
        "junk": widgets.Dropdown(options=list(JUNK), value="random x1000", description="junk"),
        "n_pads": widgets.IntSlider(value=2, min=0, max=5, description="pads"),
    }
    return explorer(controls, pad_rows_view)


EXPLORERS = (pad_rows_explorer,)
