"""Chapter 5's explorer: attn_mask and causality, i.e. which outputs an edit of one token can reach."""

from __future__ import annotations

import functools

import ipywidgets as widgets
import torch

from helpers.explorer import Explorer, Panel, View, explorer
from helpers.masks import causal_mask
from helpers.toy import is_pad

CAUSAL_SEQUENCES = {  # in the drop-down's order
    "right-padded": ["犬", "猫", "鳥", "<pad>", "<pad>"],
    "no padding": ["犬", "猫", "鳥", "魚", "馬"],
    "left-padded": ["<pad>", "<pad>", "犬", "猫", "鳥"],
}


@functools.cache  # the explorer's toy: built on first use, then reused
def _causal_toy(seed: int = 0) -> tuple[torch.nn.MultiheadAttention, dict[str, torch.Tensor]]:
    """Chapter 5's seeded nn.MultiheadAttention(4, 2 heads) and a 4-number vector for each token."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        mha = torch.nn.MultiheadAttention(embed_dim=4, num_heads=2, batch_first=True)
        names = ["犬", "猫", "鳥", "魚", "馬", "<pad>"]
        table = dict(zip(names, torch.randn(len(names), 4), strict=True))
    return mha, table


def causal_view(sequence: str = "right-padded", causal: bool = True, padding: bool = True, edit: int = 1) -> View:
    """Weights of one sequence under the chosen masks, and which outputs move when token `edit` changes."""
    if sequence not in CAUSAL_SEQUENCES:
        raise ValueError(f"sequence must be one of {list(CAUSAL_SEQUENCES)}, got {sequence!r}")
    tokens = CAUSAL_SEQUENCES[sequence]
    L = len(tokens)
    if not 0 <= edit < L:
        raise ValueError(f"edit must be a position from 0 to {L - 1}, got {edit}")
    pad = is_pad(tokens)[None]                                            # (1, S)
    attn_mask = causal_mask(L) if causal else None
    key_padding_mask = pad if padding else None
    hidden = torch.zeros(L, L, dtype=torch.bool)
    if causal:
        hidden |= attn_mask
    if padding:
        hidden |= pad
    blind = hidden.all(-1).nonzero().flatten().tolist()
    if blind:
        raise ValueError(f"query {blind[0]} ({tokens[blind[0]]}) would see no key at all: every key it may look at "
                         "is padding or in its future, and nn.MultiheadAttention returns NaN for such a row. "
                         "For training, pad on the right (or switch one of the masks off); batched generation pads "
                         "on the left and must handle such rows (chapter 7).")
    mha, table = _causal_toy()
    x = torch.stack([table[t] for t in tokens])[None]                     # (1, L, 4)
    edited = x.clone()
    edited[0, edit] += 1.0
    with torch.no_grad():
        output, weights = mha(x, x, x, key_padding_mask=key_padding_mask, attn_mask=attn_mask)
        output2, _ = mha(edited, edited, edited, key_padding_mask=key_padding_mask, attn_mask=attn_mask)
    same = (output2 == output)[0].all(-1)                                  # (L,) exactly unchanged

    masks = " + ".join(m for m, on in (("causal", causal), ("key padding", padding)) if on) or "no mask"
    rows = [f"{t} {'same' if s else 'CHANGED'}" for t, s in zip(tokens, same.tolist(), strict=True)]
    moved = [i for i in range(L) if not same[i]]
    kept = [i for i in range(L) if same[i]]
    panel = Panel(weights[0], rows, tokens, masked=hidden, ylabel="query (its output)",
                  red_rows=tuple(moved), red_cols=(edit,),
                  title=f"{masks}: weights (mean of 2 heads)\nrows: does that output change if {tokens[edit]} "
                        f"(key {edit}) is edited?")
    summary = (f"{sequence}, {masks}: editing token {edit} ({tokens[edit]}) changes the outputs at positions "
               f"{moved or 'none'}; exactly unchanged: {kept or 'none'}")
    return View((panel,), summary)


def causal_explorer() -> Explorer:
    """Masks on/off, a sequence and a token to edit -> the weights, and which outputs that edit changes."""
    controls = {
        "sequence": widgets.Dropdown(options=list(CAUSAL_SEQUENCES), value="right-padded", description="sequence"),
        "causal": widgets.Checkbox(value=True, description="causal attn_mask"),
        "padding": widgets.Checkbox(value=True, description="key_padding_mask"),
        "edit": widgets.IntSlider(value=1, min=0, max=4, description="edit token"),
    }
    return explorer(controls, causal_view)


EXPLORERS = (causal_explorer,)
