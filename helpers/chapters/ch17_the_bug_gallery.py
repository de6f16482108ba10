"""Chapter 17's code (The bug gallery: diagnose models you did not write): [its toy data, models and experiments], its explorer and
its exercise checks."""

from __future__ import annotations

import ipywidgets as widgets
import torch

from helpers.exercises import Mistake, as_int, exercise
from helpers.explorer import Explorer, Panel, View, explorer
from helpers.language import say
from helpers.masks import causal_mask


def example_mask(n: int) -> torch.Tensor:
    """[A placeholder for the chapter's own code] the causal mask of n tokens, True = blocked."""
    return causal_mask(n)


def example_view(n: int = 4) -> View:
    """The explorer's view: uniform weights over the keys a query may see, for n tokens."""
    if not 1 <= n <= 8:
        raise ValueError(say(f"n must be from 1 to 8, got {n}", f"n は 1 から 8 までにすること（{n} が渡された）"))
    mask = example_mask(n)
    weights = (~mask).float() / (~mask).sum(-1, keepdim=True)
    names = [f"t{i}" for i in range(n)]
    blocked = int(mask.sum())
    panel = Panel(weights, names, names, title="uniform weights, causal mask", masked=mask, vmin=0.0, vmax=1.0)
    return View((panel,), say(f"{n} tokens: {blocked} cells blocked",
                              f"トークン {n} 個：遮断されたセルは {blocked} 個"))


def example_explorer() -> Explorer:
    """The number of tokens -> the causal mask's weights, live."""
    controls = {"n": widgets.IntSlider(value=4, min=2, max=6, description="tokens",
                                      style={"description_width": "initial"})}
    return explorer(controls, example_view)


EXPLORERS = (example_explorer,)


# --- the exercise checks ---

@exercise
def check_1(answer: object, n: int) -> None:
    """Exercise 1: how many cells the causal mask of n tokens blocks."""
    got = as_int(answer, Mistake("answer with an int: a number of cells", "int で答えること（セルの個数）"))
    expected = int(example_mask(n).sum())
    if got != expected:
        raise Mistake(f"count the cells above the diagonal of the {n} x {n} mask",
                      f"{n} x {n} のマスクの対角線より上にあるセルを数えること")
