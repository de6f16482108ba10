"""Chapter 1's explorer: which cells of the book's masked score table are set to -1e9, and which stay '?'."""

from __future__ import annotations

import ipywidgets as widgets

from helpers import toy
from helpers.explorer import Explorer, Panel, View, explorer


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


EXPLORERS = (pad_cells_explorer,)
