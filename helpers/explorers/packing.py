"""Explorer of chapter 10: the same 8 sequences padded, bucketed or packed; the layout, a mask and the waste."""

from __future__ import annotations

import functools

import ipywidgets as widgets
import torch

from helpers.explorers.base import Explorer, Panel, View, explorer
from helpers.masks import causal_mask, key_padding_mask
from helpers.packing import (
    bucketed,
    document_mask,
    in_order,
    lognormal_lengths,
    pack,
    packed_cost,
    packed_rows,
    padded_cost,
    pick,
)

DISTRIBUTIONS = ("narrow", "log-normal", "bimodal")
STRATEGIES = ("pad", "bucket", "pack")
BATCH_SIZES = (1, 2, 4, 8)
NAMES = "ABCDEFGH"   # the 8 sequences
POOL = 8


@functools.cache
def pool_lengths(distribution: str) -> tuple[int, ...]:
    """The 8 sequence lengths (1..8) of a distribution, fixed by a seed."""
    g = torch.Generator().manual_seed(10)
    if distribution == "narrow":
        return tuple(torch.randint(5, 9, (POOL,), generator=g).tolist())              # 5..8
    if distribution == "log-normal":
        return tuple(lognormal_lengths(POOL, median=3, sigma=0.7, max_len=8, seed=0))
    if distribution == "bimodal":
        short = torch.randint(1, 3, (POOL,), generator=g)                             # 1..2
        long = torch.randint(7, 9, (POOL,), generator=g)                              # 7..8
        return tuple(torch.where(torch.arange(POOL) % 3 == 0, long, short).tolist())  # every third one is long
    raise ValueError(f"distribution must be one of {DISTRIBUTIONS}, got {distribution!r}")


def _layout_panel(lengths: tuple[int, ...], rows: list[list[int]], width: int, title: str) -> Panel:
    """One table row per batch row (a list of sequence indices, several when packed), one column per slot.

    Each cell shows the token's position inside its own sequence; hatched = padding.
    """
    position = torch.zeros(len(rows), width)
    pad = torch.ones(len(rows), width, dtype=torch.bool)
    for r, members in enumerate(rows):
        row = pack([lengths[i] for i in members])
        position[r, :len(row.position)] = row.position.float()
        pad[r, :len(row.position)] = False
    labels = ["+".join(NAMES[i] for i in members) for members in rows]
    return Panel(position, labels, [str(j) for j in range(width)], title=title, masked=pad, fmt=".0f",
                 xlabel="slot", ylabel="row")


def packing_view(distribution: str = "log-normal", batch_size: int = 4, strategy: str = "pad") -> View:
    """Chapter 10: how the 8 sequences are laid out, the attention mask of one row, and the wasted work."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    if batch_size not in BATCH_SIZES:
        raise ValueError(f"batch_size must be one of {BATCH_SIZES}, got {batch_size!r}")
    lengths = pool_lengths(distribution)
    if strategy == "pack":
        row_len = max(lengths)
        groups = packed_rows(lengths, row_len)
        cost = packed_cost(pick(lengths, groups), row_len)
        layouts = [_layout_panel(lengths, groups, row_len, f"packed: {len(groups)} rows x {row_len} slots")]
        busiest = max(range(len(groups)), key=lambda r: len(groups[r]))   # the row with the most documents
        first = pack([lengths[i] for i in groups[busiest]])
        used = len(first.document)
        document = torch.cat([first.document, torch.full((row_len - used,), -1)])   # empty slots: their own "document"
        blocked = document_mask(document)
        names = [NAMES[groups[busiest][d]] for d in first.document.tolist()]
        labels = [f"{n}{p}" for n, p in zip(names, first.position.tolist(), strict=True)]
        labels += ["·"] * (row_len - used)
        row_name = "+".join(NAMES[i] for i in groups[busiest])   # the row label of the layout table
        mask_title = f"document mask of row {row_name}\n(same document AND causal)"
    else:
        groups = in_order(lengths, batch_size) if strategy == "pad" else bucketed(lengths, batch_size)
        cost = padded_cost(pick(lengths, groups))
        layouts = []
        for k, g in enumerate(groups):
            width = max(lengths[i] for i in g)
            layouts.append(_layout_panel(lengths, [[i] for i in g], width, f"batch {k}: {len(g)} x {width}"))
        shortest = min(groups[0], key=lambda i: lengths[i])   # the row of batch 0 with the most padding
        first, width = lengths[shortest], max(lengths[i] for i in groups[0])
        blocked = causal_mask(width) | key_padding_mask([first], width)
        labels = [f"{NAMES[shortest]}{p}" for p in range(first)] + ["pad"] * (width - first)
        mask_title = f"mask of batch 0, row {NAMES[shortest]}\n(causal + padding)"
    mask = Panel((~blocked).float(), labels, labels, masked=blocked, fmt=".0f", title=mask_title)
    note = " (one dense mask per row; the batch size does not change packing)" if strategy == "pack" else ""
    summary = (f"{distribution} lengths {list(lengths)}, batch size {batch_size}, {strategy}: "
               f"{cost.computed_positionwise} token slots for {cost.useful_positionwise} tokens, "
               f"wasted {cost.wasted_positionwise:.0%} of position-wise work and "
               f"{cost.wasted_attention:.0%} of attention scores{note}")
    caption = "cells: the token's position inside its own sequence; hatched: padding or a blocked key"
    return View((*layouts, mask), summary, caption)


def packing_explorer() -> Explorer:
    """Length distribution, batch size and strategy -> the rows, the first row's mask, and the wasted fraction."""
    controls = {
        "distribution": widgets.Dropdown(options=DISTRIBUTIONS, value="log-normal", description="lengths"),
        "batch_size": widgets.ToggleButtons(options=BATCH_SIZES, value=4, description="batch size"),
        "strategy": widgets.ToggleButtons(options=STRATEGIES, value="pad", description="strategy"),
    }
    return explorer(controls, packing_view)
