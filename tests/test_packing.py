"""Chapter 10: waste counts, bucketing, packing, mask_mods (helpers/packing.py) and the packing explorer."""

import itertools

import pytest
import torch
from torch.nn.attention.flex_attention import create_mask

from helpers import packing
from helpers.explorers.base import view_html
from helpers.explorers.packing import (
    BATCH_SIZES,
    DISTRIBUTIONS,
    STRATEGIES,
    packing_explorer,
    packing_view,
    pool_lengths,
)
from helpers.masks import causal_mask, key_padding_mask


def test_padded_cost_counts_squares_and_rows():
    cost = packing.padded_cost([[7, 2, 3, 12, 5]])
    assert cost == (49 + 4 + 9 + 144 + 25, 5 * 144, 29, 60)
    assert cost.wasted_attention == pytest.approx(1 - 231 / 720)
    assert packing.padded_cost([[4, 4, 4]]).wasted_attention == 0


def test_padded_cost_sums_over_batches():
    both = packing.padded_cost([[3, 1], [5]])
    assert both.computed_attention == 2 * 9 + 25 and both.computed_positionwise == 2 * 3 + 5


def test_batching_strategies_cover_every_sequence_once():
    lengths = packing.lognormal_lengths(50, median=10, sigma=1.0, max_len=40, seed=0)
    for groups in (packing.in_order(lengths, 8), packing.bucketed(lengths, 8), packing.packed_rows(lengths, 40)):
        assert sorted(itertools.chain(*groups)) == list(range(50))
    assert all(sum(lengths[i] for i in row) <= 40 for row in packing.packed_rows(lengths, 40))


def test_bucketing_never_wastes_more_than_arrival_order():
    for seed in range(5):
        lengths = packing.lognormal_lengths(64, median=20, sigma=0.9, max_len=200, seed=seed)
        for n in (2, 4, 16):
            plain = packing.padded_cost(packing.pick(lengths, packing.in_order(lengths, n)))
            sorted_ = packing.padded_cost(packing.pick(lengths, packing.bucketed(lengths, n)))
            assert sorted_.computed_attention <= plain.computed_attention


def test_pack_restarts_positions_and_mask_is_block_causal():
    row = packing.pack([3, 1, 2])
    assert row.document.tolist() == [0, 0, 0, 1, 2, 2]
    assert row.position.tolist() == [0, 1, 2, 0, 0, 1]
    blocked = packing.document_mask(row.document)
    expected = torch.ones(6, 6, dtype=torch.bool)
    for start, n in ((0, 3), (3, 1), (4, 2)):
        expected[start:start + n, start:start + n] = causal_mask(n)
    assert torch.equal(blocked, expected)
    assert not packing.document_mask(row.document, causal=False)[0, 2]


def test_mask_mods_equal_hand_built_masks():
    lengths = torch.tensor([5, 3])
    kpm = key_padding_mask([5, 3])[:, None, None, :]
    L = 5
    pairs = [
        (packing.padding_mod(lengths), ~kpm.expand(2, 1, L, L)),
        (packing.causal_mod, ~causal_mask(L).expand(2, 1, L, L)),
        (packing.padding_causal_mod(lengths), ~(kpm | causal_mask(L))),
        (packing.sliding_window_mod(2),
         ~(causal_mask(L) | torch.ones(L, L, dtype=torch.bool).tril(-2)).expand(2, 1, L, L)),
        (packing.document_mod(torch.tensor([0, 0, 1, 1, 1])),
         ~packing.document_mask(torch.tensor([0, 0, 1, 1, 1])).expand(2, 1, L, L)),
    ]
    for mod, want in pairs:
        assert torch.equal(create_mask(mod, 2, None, L, L, device="cpu"), want)


def test_lognormal_lengths_is_seeded_and_clipped():
    a = packing.lognormal_lengths(100, median=8, sigma=2.0, max_len=30, seed=3)
    assert a == packing.lognormal_lengths(100, median=8, sigma=2.0, max_len=30, seed=3)
    assert min(a) >= 1 and max(a) <= 30 and max(a) == 30


@pytest.mark.parametrize("call, error", [
    (lambda: packing.padded_cost([[3, 0]]), ValueError),
    (lambda: packing.padded_cost([]), TypeError),
    (lambda: packing.in_order([3, 4], 0), ValueError),
    (lambda: packing.packed_rows([3, 9], 8), ValueError),
    (lambda: packing.packed_cost([[5, 4]], 8), ValueError),
    (lambda: packing.pack([2, True]), ValueError),
    (lambda: packing.document_mask(torch.zeros(3)), TypeError),
    (lambda: packing.sliding_window_mod(0), ValueError),
    (lambda: packing.lognormal_lengths(4, median=0, sigma=1, max_len=8, seed=0), ValueError),
])
def test_bad_input_names_the_argument(call, error):
    with pytest.raises(error):
        call()


@pytest.mark.parametrize("distribution, batch_size, strategy",
                         list(itertools.product(DISTRIBUTIONS, BATCH_SIZES, STRATEGIES)))
def test_view_renders_and_counts(distribution, batch_size, strategy):
    view = packing_view(distribution, batch_size, strategy)
    assert "<table" in view_html(view)
    assert f"batch size {batch_size}, {strategy}:" in view.summary
    lengths = pool_lengths(distribution)
    assert f"for {sum(lengths)} tokens" in view.summary
    layout_rows = sum(len(p.rows) for p in view.panels[:-1])
    packed = len(packing.packed_rows(list(lengths), max(lengths)))
    assert layout_rows == (packed if strategy == "pack" else len(lengths))


def test_view_refuses_unknown_values():
    with pytest.raises(ValueError, match="strategy"):
        packing_view(strategy="shuffle")
    with pytest.raises(ValueError, match="batch_size"):
        packing_view(batch_size=3)
    with pytest.raises(ValueError, match="distribution"):
        packing_view(distribution="uniform")


def test_explorer_updates_summary():
    box = packing_explorer()
    summary = box.summary
    before = summary.value
    box.controls["strategy"].value = "bucket"
    assert summary.value != before and "bucket" in summary.value
