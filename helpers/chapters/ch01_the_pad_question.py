"""Chapter 1's code: its explorer (which cells of the book's masked score table are set to -1e9, which stay '?')
and its exercise checks."""

from __future__ import annotations

import ipywidgets as widgets
import torch

from helpers import arguments, toy
from helpers.exercises import Mistake, exercise
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


def _token_ids(ids: object) -> torch.Tensor:
    """The exercise's token ids, checked: an integer tensor (N, S)."""
    ids = arguments.tensor(ids, "ids")
    if ids.dtype.is_floating_point or ids.dtype == torch.bool or ids.dim() != 2:
        raise ValueError(f"ids must be an integer tensor of token ids, shape (N, S), "
                         f"got {ids.dtype} with shape {tuple(ids.shape)}")
    return ids


@exercise
def check_1(answer: object, ids: torch.Tensor) -> None:
    """Exercise 1: the book's mask for the batch `ids`: bool, True = real token, shape (N, 1, S)."""
    ids = _token_ids(ids)
    is_word = (ids != toy.PAD_ID) & (ids != toy.VOCAB["<unk>"])        # (N, S), from the vocabulary
    if not isinstance(answer, torch.Tensor) or answer.dtype != torch.bool:
        raise Mistake("the mask should be a bool tensor (a comparison such as ids != pad_id gives one)")
    if answer.dim() != 3 or answer.shape[0] != ids.shape[0] or answer.shape[1:] != (1, ids.shape[1]):
        raise Mistake(f"the shape should be (N, 1, S), with a size-1 query dimension in the middle; "
                      f"got {tuple(answer.shape)}")
    if torch.equal(answer[:, 0], ~is_word):
        raise Mistake("that is the opposite polarity: True must mark the real tokens")
    if not torch.equal(answer[:, 0], is_word):
        raise Mistake("True must mark exactly the real tokens of each sentence: check the second sentence too")


@exercise
def check_2(answer: object, ids: torch.Tensor) -> None:
    """Exercise 2: (cells masked_fill sets to -1e9, '?' cells left) in the whole batch `ids`."""
    ids = _token_ids(ids)
    real = ids != toy.PAD_ID                                           # (N, S)
    filled = int((~real).sum()) * ids.shape[1]                         # each pad column has S cells, one per query
    unsure = int(((~real).unsqueeze(2) & real.unsqueeze(1)).sum())     # pad query x real key
    if not isinstance(answer, tuple | list) or len(answer) != 2:
        raise Mistake("give two numbers: (number_filled, number_of_question_cells)")
    if tuple(answer) == (unsure, filled):
        raise Mistake("the two numbers are swapped: the filled cells come first")
    if answer[0] != filled:
        if answer[0] == int((~real).sum()):
            raise Mistake("that counts pad tokens; each pad column has one cell per query row")
        raise Mistake("count the cells of every pad column, in both sentences")
    if answer[1] != unsure:
        raise Mistake("the '?' cells are pad rows x real columns, in each sentence: count both")


@exercise
def check_3(answer: object, scores: torch.Tensor, ids: torch.Tensor) -> None:
    """Exercise 3: `scores` with every cell whose query or key is a pad set to -1e9 (pad rows and pad columns)."""
    scores = arguments.floating(scores, "scores")
    ids = _token_ids(ids)
    real = ids != toy.PAD_ID
    both = real.unsqueeze(2) & real.unsqueeze(1)                       # (N, S, S)
    if not isinstance(answer, torch.Tensor) or answer.shape != scores.shape:
        got = tuple(answer.shape) if isinstance(answer, torch.Tensor) else type(answer).__name__
        raise Mistake(f"the answer should be the masked scores, shape {tuple(scores.shape)}; got {got}")
    if answer.isinf().any():
        raise Mistake("fill with -1e9, as the book does, not with -inf")
    if not torch.equal(answer[both], scores[both]):
        raise Mistake("the cells where query and key are both real words must keep their scores")
    if not (answer[~real.unsqueeze(2).expand_as(both)] == -1e9).all():
        raise Mistake("the pad rows must be -1e9 too, not only the pad columns")
    if not (answer[~both] == -1e9).all():
        raise Mistake("the pad columns must be -1e9")
