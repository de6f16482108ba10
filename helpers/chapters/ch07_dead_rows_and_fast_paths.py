"""Chapter 7's explorer: what each code path returns for rows with no visible key and for pad rows.

One small batch (item 0 = 犬 猫 鳥 + two pads, item 1 = five real tokens), one seeded nn.MultiheadAttention
(4 features, 2 heads, out_proj.bias non-zero), and one seeded 1-layer nn.TransformerEncoder.
The manual paths and SDPA use the MHA's own projections, so on rows that have a visible key they agree
with the MHA. Every output is computed once per combination and cached: an update is a lookup.
"""

from __future__ import annotations

import functools
import warnings
from typing import NamedTuple

import ipywidgets as widgets
import torch
import torch.nn.functional as F
from torch import nn

from helpers.explorer import RED, Explorer, Panel, View, explorer
from helpers.masks import causal_mask
from helpers.toy import is_pad

FAST_PATHS = (
    "manual masked_fill(-inf) + softmax",
    "manual masked_fill(finfo.min) + softmax",
    "F.scaled_dot_product_attention",
    "MHA, need_weights=True",
    "MHA, need_weights=False",
    "nn.TransformerEncoder",
)
FAST_MODES = ("training", "eval, grad on", "eval + no_grad", "eval, frozen parameters, grad on")
FAST_TOKENS = {"right": ["犬", "猫", "鳥", "<pad>", "<pad>"], "left": ["<pad>", "<pad>", "犬", "猫", "鳥"]}
E, HEADS = 4, 2


class Setup(NamedTuple):
    x: torch.Tensor                  # (2, 5, E): item 0 = 犬 猫 鳥 and two pad vectors (order per padding side)
    mha: nn.MultiheadAttention
    encoder: nn.TransformerEncoder


@functools.cache  # built once, on first use
def fast_setup() -> Setup:
    """The seeded batch and modules (dropout 0, so training mode is deterministic)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(7)
        words = torch.randn(3, E)                                       # 犬 猫 鳥
        pad, other = torch.randn(1, E), torch.randn(5, E)              # one pad vector; item 1
        mha = nn.MultiheadAttention(E, HEADS, batch_first=True, dropout=0.0)
        nn.init.normal_(mha.out_proj.bias)                              # "0 before out_proj" shows as the bias
        layer = nn.TransformerEncoderLayer(E, HEADS, dim_feedforward=8, dropout=0.0, batch_first=True)
        encoder = nn.TransformerEncoder(layer, num_layers=1)            # enable_nested_tensor=True (default)
    x = torch.stack([torch.cat([words, pad, pad]), other])
    return Setup(x, mha, encoder)


def fast_batch(padding: str) -> tuple[torch.Tensor, torch.Tensor]:
    """x (2, 5, E) and key_padding_mask (2, 5), True = pad, with item 0 padded on `padding`'s side."""
    if padding not in FAST_TOKENS:
        raise ValueError(f"padding must be one of {list(FAST_TOKENS)}, got {padding!r}")
    x = fast_setup().x
    kpm = torch.stack([is_pad(FAST_TOKENS[padding]), torch.zeros(5, dtype=torch.bool)])
    if padding == "left":
        x = torch.stack([x[0].roll(2, 0), x[1]])                        # pads first: <pad> <pad> 犬 猫 鳥
    return x, kpm


def split_heads(mha: nn.MultiheadAttention, x: torch.Tensor) -> list[torch.Tensor]:
    """MHA's input projection split into heads: q, k, v of shape (N, H, L, E/H)."""
    N, L, _ = x.shape
    q, k, v = F.linear(x, mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1)
    return [t.view(N, L, HEADS, E // HEADS).transpose(1, 2) for t in (q, k, v)]


def merge_heads(mha: nn.MultiheadAttention, out: torch.Tensor) -> torch.Tensor:
    """(N, H, L, E/H) -> (N, L, E), then MHA's output projection."""
    N, _, L, _ = out.shape
    return mha.out_proj(out.transpose(1, 2).reshape(N, L, E))


def _run(path: str, x: torch.Tensor, kpm: torch.Tensor, attn_mask: torch.Tensor | None) -> torch.Tensor:
    mha, encoder = fast_setup().mha, fast_setup().encoder
    blocked = kpm[:, None, None, :] if attn_mask is None else kpm[:, None, None, :] | attn_mask   # (N, 1, L, S)
    if path.startswith("manual"):
        q, k, v = split_heads(mha, x)
        fill = float("-inf") if "-inf" in path else torch.finfo(x.dtype).min
        weights = (q @ k.transpose(-2, -1) / (E // HEADS) ** 0.5).masked_fill(blocked, fill).softmax(-1)
        return merge_heads(mha, weights @ v)
    if path == "F.scaled_dot_product_attention":
        return merge_heads(mha, F.scaled_dot_product_attention(*split_heads(mha, x), attn_mask=~blocked))
    if path.startswith("MHA"):
        need_weights = path.endswith("True")
        return mha(x, x, x, key_padding_mask=kpm, attn_mask=attn_mask, need_weights=need_weights)[0]
    if path == "nn.TransformerEncoder":
        with warnings.catch_warnings():  # the one-time "nested tensors are a prototype" note: chapter 7 shows it
            warnings.filterwarnings("ignore", message=".*nested tensors.*prototype")
            return encoder(x, mask=attn_mask, src_key_padding_mask=kpm)
    raise ValueError(f"path must be one of {list(FAST_PATHS)}, got {path!r}")


@functools.cache
def fast_output(path: str, padding: str, mode: str, causal: bool) -> torch.Tensor:
    """The (2, 5, E) output of `path` on the batch, run in `mode` (cached: computed once per combination)."""
    if mode not in FAST_MODES:
        raise ValueError(f"mode must be one of {list(FAST_MODES)}, got {mode!r}")
    x, kpm = fast_batch(padding)
    attn_mask = causal_mask(5) if causal else None
    modules = [fast_setup().mha, fast_setup().encoder]
    frozen = mode.startswith("eval, frozen")
    try:
        for module in modules:
            module.train(mode == "training")
            module.requires_grad_(not frozen)
        with torch.set_grad_enabled(mode != "eval + no_grad"):
            return _run(path, x, kpm, attn_mask).detach()
    finally:
        for module in modules:
            module.eval().requires_grad_(True)


def _kind(row: torch.Tensor, bias: torch.Tensor) -> str:
    """One output row in words: NaN, zeros, out_proj.bias (0 before out_proj), or ordinary numbers."""
    if row.isnan().all():
        return "NaN"
    if (row == 0).all():
        return "exact zeros"
    if torch.allclose(row, bias, atol=1e-6, rtol=0):
        return "out_proj.bias (0 before out_proj)"
    return "ordinary values"


def fast_paths_view(path: str = "MHA, need_weights=False", padding: str = "left", mode: str = "eval + no_grad",
                    causal: bool = True) -> View:
    """Item 0's output rows on one code path: rows with no visible key (red) and pad rows (hatched)."""
    if path not in FAST_PATHS:
        raise ValueError(f"path must be one of {list(FAST_PATHS)}, got {path!r}")
    out = fast_output(path, padding, mode, causal)
    _, kpm = fast_batch(padding)
    tokens = FAST_TOKENS[padding]
    blocked = kpm[0] | causal_mask(5) if causal else kpm[0].expand(5, 5)
    dead = blocked.all(-1)                                               # (L,) rows with no visible key
    pads = kpm[0] & ~dead
    bias = fast_setup().mha.out_proj.bias.detach()
    found = []
    for name, rows in (("rows with no visible key", dead), ("pad rows", pads)):
        if rows.any():
            kinds = sorted({_kind(out[0, i], bias) for i in rows.nonzero().flatten().tolist()})
            if name.startswith("rows with no") and "finfo.min" in path:
                kinds = ["finite: the plain average of all 5 values, pads included"]
            found.append(f"{name} {rows.nonzero().flatten().tolist()} -> {' / '.join(kinds)}")
    if not dead.any():
        found.insert(0, "no row without a visible key")
    where = f"{path}, {mode}, {padding} padding{' + causal' if causal else ''}"
    rows = [f"{t}{'  (no key)' if d else ''}" for t, d in zip(tokens, dead.tolist(), strict=True)]
    panel = Panel(out[0], rows, [f"out {j}" for j in range(E)], masked=kpm[0][:, None].expand(5, E),
                  framed=dead[:, None].expand(5, E), frame_color=RED, red_rows=tuple(dead.nonzero().flatten().tolist()),
                  xlabel="output feature", ylabel="position", alert=bool(out[0, dead].isnan().any()),
                  title=f"{path.replace(' + softmax', '')}\n{mode}, {padding} padding{' + causal' if causal else ''}")
    return View((panel,), f"{where}: " + "; ".join(found),
                caption="hatched: pad positions (never read them)    red: rows with no visible key")


def fast_paths_explorer() -> Explorer:
    """Code path x padding side x mode x causal mask -> item 0's output rows, dead rows and pad rows marked."""
    controls = {
        "path": widgets.Dropdown(options=FAST_PATHS, value="MHA, need_weights=False", description="path",
                                 layout=widgets.Layout(width="26em"), style={"description_width": "4em"}),
        "padding": widgets.ToggleButtons(options=list(FAST_TOKENS), value="left", description="padding"),
        "mode": widgets.Dropdown(options=FAST_MODES, value="eval + no_grad", description="mode",
                                 layout=widgets.Layout(width="26em"), style={"description_width": "4em"}),
        "causal": widgets.Checkbox(value=True, description="causal mask"),
    }
    return explorer(controls, fast_paths_view)


EXPLORERS = (fast_paths_explorer,)
