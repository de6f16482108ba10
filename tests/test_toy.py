"""The running toy (helpers.toy): the sentence, its seeded vectors, and the '?' cells."""

import pytest
import torch

from helpers import toy

TOKENS = ["犬", "猫", "鳥", "<pad>", "<pad>"]


def test_toy_tokens():
    assert toy.tokens() == TOKENS
    assert toy.tokens(0) == ["犬", "猫", "鳥", "魚", "馬"]
    assert toy.tokens(5) == ["<pad>"] * 5
    with pytest.raises(ValueError, match="n_pads must be an int from 0 to 5"):
        toy.tokens(6)
    with pytest.raises(ValueError, match="n_pads must be an int"):
        toy.tokens(True)


def test_toy_qkv_is_seeded_and_pads_share_a_vector():
    ids, x, q, k, v = toy.qkv(TOKENS)
    assert ids.tolist() == [[2, 3, 4, 1, 1]]
    assert x.shape == q.shape == k.shape == v.shape == (1, 5, 4)
    assert torch.equal(x[0, 3], x[0, 4])
    assert torch.equal(toy.qkv(TOKENS).q, q)             # same numbers every call, fields by name
    assert torch.equal(x, x.round(decimals=1))                   # readable: one decimal


def test_question_cells_are_pad_rows_times_real_columns():
    assert toy.is_pad(TOKENS).tolist() == [False, False, False, True, True]
    unsure = toy.question_cells(TOKENS)
    expected = torch.zeros(5, 5, dtype=torch.bool)
    expected[3:, :3] = True
    assert torch.equal(unsure, expected)
