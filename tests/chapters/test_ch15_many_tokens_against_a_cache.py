"""Chapter 15: the offset rule, speculation, trees, sinks, the cached module, the explorer and the exercise checks
(helpers/chapters/ch15_many_tokens_against_a_cache.py)."""

import math

import pytest
import torch

from helpers.chapters import ch15_many_tokens_against_a_cache as ch15
from helpers.chapters.ch09_batched_generation import TinyLM
from helpers.exercises import Mistake
from tests.chapters import accepts_every_form, japanese_hint, refuses_the_wrong_kind


def test_the_offset_mask_is_bottom_right_and_equals_a_linear_tree():
    blocked = ch15.offset_mask(2, 3)
    assert blocked.tolist() == [[False] * 4 + [True], [False] * 5]
    assert torch.equal(ch15.offset_mask(4, 0), ~torch.ones(4, 4, dtype=torch.bool).tril())
    assert torch.equal(ch15.top_left_mask(4, 0), ch15.offset_mask(4, 0))
    assert not torch.equal(ch15.top_left_mask(2, 3), blocked)
    assert ch15.offset_positions(3, 4).tolist() == [4, 5, 6]
    for offset in (0, 2, 5):
        assert torch.equal(ch15.tree_mask(ch15.TREES["linear"], offset), ch15.offset_mask(6, offset))
    with pytest.raises(ValueError, match="n"):
        ch15.offset_mask(0, 2)
    with pytest.raises(TypeError, match="offset"):
        ch15.offset_mask(2, "3")


@torch.no_grad()
def test_a_cached_forward_equals_serial_and_full_and_each_mistake_differs():
    torch.manual_seed(0)
    model = TinyLM().eval()
    ids = torch.randint(0, 10, (2, 8), generator=torch.Generator().manual_seed(0))
    full = model(ids).logits[:, 3:]
    assert ch15.max_diff(ch15.cached_forward(model, ids, 3), full) < 1e-5
    assert ch15.max_diff(ch15.serial(model, ids, 3), full) < 1e-5
    for kind in ch15.MISTAKES:
        assert ch15.max_diff(ch15.cached_forward(model, ids, 3, kind), full) > 1e-2
    with pytest.raises(ValueError, match="kind"):
        ch15.cached_forward(model, ids, 3, "bottom-left")
    with pytest.raises(TypeError, match="TinyLM"):
        ch15.tiny_step(torch.nn.Linear(2, 2), ids)
    with pytest.raises(ValueError, match="blocked"):
        ch15.tiny_step(model, ids, blocked=torch.zeros(8, 9, dtype=torch.bool))
    with pytest.raises(ValueError, match="positions"):
        ch15.tiny_step(model, ids, positions=torch.arange(7))


@torch.no_grad()
def test_speculation_reproduces_greedy_decoding_with_rejections():
    target, drafter = ch15.models()
    rejected = 0
    for prompt in ([1, 2, 3, 4], [2, 4, 6]):
        run = ch15.speculate(target, drafter, prompt, 6, 3)
        assert run.tokens == ch15.greedy(target, prompt, 6)
        rejected += sum(a < 3 for a in run.accepted)
    assert rejected >= 1
    assert ch15.accept([5, 6, 9], [5, 6, 7, 8]) == 2 and ch15.accept([1], [2, 3]) == 0
    with torch.no_grad():                            # verify returns the cache with the whole window; rollback cuts it
        _, past = ch15.tiny_step(target, torch.tensor([[1, 2, 3]]))
        predicted, grown = ch15.verify(target, past, [4, 5, 6, 7])
    assert predicted.shape == (4,) and grown[0][0].shape[2] == 7
    assert [k.shape[2] for k, _ in ch15.rollback(grown, 5)] == [5] * len(grown)
    assert torch.equal(ch15.rollback(grown, 3)[0][0], past[0][0])
    with pytest.raises(ValueError, match="kind"):
        ch15.speculate(target, drafter, [1, 2], 2, kind="nope")


def test_tree_helpers():
    tree = (-1, 0, 0, 1, 2, 2, 5)
    assert ch15.depths(tree) == (0, 1, 1, 2, 2, 2, 3)
    assert ch15.tree_positions(tree, 5).tolist() == [5, 6, 6, 7, 7, 7, 8]
    assert ch15.branch(tree, 6) == [0, 2, 5, 6] and ch15.leaves(tree) == [3, 4, 6]
    seen = ~ch15.tree_mask(tree, 2)
    assert seen[:, :2].all() and seen[6, 2:].tolist() == [True, False, True, False, False, True, True]
    with pytest.raises(ValueError, match="parents"):
        ch15.depths((0, 0))
    with pytest.raises(TypeError, match="parents"):
        ch15.depths("abc")
    with pytest.raises(ValueError, match="node"):
        ch15.branch(tree, 7)


def test_sinks_dense_split_and_bugs():
    q, k, v, blocked = ch15.sink_example()
    dense = ch15.sink_attention(q, k, v, blocked, 0.5)
    assert torch.allclose(dense.weights.sum(-1), torch.ones(3, dtype=torch.float64))
    for splits in (1, 2, 3, 6):
        out, lse = ch15.split_kv(q, k, v, blocked, 0.5, splits)
        assert ch15.max_diff(out, dense.out) < 1e-12 and ch15.max_diff(lse, dense.lse) < 1e-12
    for bug in ch15.SPLIT_BUGS:
        assert ch15.max_diff(ch15.split_kv(q, k, v, blocked, 0.5, 2, bug)[0], dense.out) > 1e-3
    dead = ch15.sink_attention(q, k, v, torch.ones(3, 6, dtype=torch.bool), -1.0)
    assert torch.equal(dead.out, torch.zeros(3, 4, dtype=torch.float64)) and (dead.lse == -1.0).all()
    no_sink = ch15.sink_attention(q, k, v, blocked, None)
    assert ch15.max_diff(ch15.split_kv(q, k, v, blocked, None, 2)[0], no_sink.out) < 1e-12
    with pytest.raises(ValueError, match="bug"):
        ch15.split_kv(q, k, v, blocked, 0.5, 2, "sink everywhere")


@torch.no_grad()
def test_the_invariant_and_the_cached_module():
    x = torch.randn(2, 7, 8, generator=torch.Generator().manual_seed(1))
    right, wrong = ch15.CachedAttention(), ch15.CachedAttention(top_left=True)
    assert all(d < 1e-5 for d in ch15.cached_serial_full(right.forward_with_cache, x, 3).values())
    result = ch15.cached_serial_full(wrong.forward_with_cache, x, 3)
    assert result["cached n-token step"] > 1e-2 and result["serial steps"] < 1e-5   # decode steps hide the bug
    assert torch.allclose(right(x), right.forward_with_cache(x, None)[0], atol=1e-6)
    with pytest.raises(TypeError, match="top_left"):
        ch15.CachedAttention(top_left="yes")


def test_the_explorer_shows_its_view_and_moves():
    box = ch15.cache_explorer()
    try:
        assert "no sink, offset mask: outputs equal the serial run: True" in box.summary.value
        box.controls["mask"].value = "tril(0) mask"
        assert "outputs differ from the serial run by up to 2.10" in box.summary.value
        box.controls["tree"].value = "binary"
        box.controls["mask"].value = "breadth-order positions"
        assert "differ" in box.summary.value
    finally:
        box.close()
    for cached in range(6):
        for tree in ch15.TREES:
            assert "True" in ch15.cache_view(cached, 6, tree, "2", "offset mask").summary
    with pytest.raises(ValueError, match="cached"):
        ch15.cache_view(cached=6)
    with pytest.raises(ValueError, match="tree"):
        ch15.cache_view(tree="ternary")


def test_check_1():
    tree, offset = (-1, 0, 0, 1, 2, 2, 5), 5
    accepts_every_form(ch15.check_1, (5, 6, 6, 7, 7, 7, 8), tree, offset)
    for wrong, hint in (((5, 6, 7, 8, 9, 10, 11), "order they are listed"), ((0, 1, 1, 2, 2, 2, 3), "cached"),
                        ((6, 7, 7, 8, 8, 8, 9), "off by one"), ((5, 6, 6, 7, 7, 7), "7 of them"),
                        ((5, 6, 6, 7, 7, 8, 8), "ancestors")):
        with pytest.raises(Mistake, match=hint):
            ch15.check_1(wrong, tree, offset)
    assert "兄弟" in japanese_hint(ch15.check_1, (5, 6, 7, 8, 9, 10, 11), tree, offset)
    refuses_the_wrong_kind(ch15.check_1, "5 6 6", "a str", "str", tree, offset)


def test_check_2():
    tree, offset = (-1, 0, 0, 1), 2
    right = ch15.tree_mask(tree, offset)
    accepts_every_form(ch15.check_2, right, tree, offset)
    cached_blocked = right.clone()
    cached_blocked[:, 0] = True
    blind = right.clone()
    blind[1, 3] = True
    for wrong, hint in ((~right, "polarity"), (cached_blocked, "cached column"),
                        (ch15.offset_mask(4, 2), "list order"), (blind, "cannot see itself"),
                        (right[:, 2:], "one row per node")):
        with pytest.raises(Mistake, match=hint):
            ch15.check_2(wrong, tree, offset)
    sibling = right.clone()
    sibling[2, 3] = False                            # node 2 sees its sibling 1
    with pytest.raises(Mistake, match="outside its ancestors"):
        ch15.check_2(sibling, tree, offset)
    other = right.clone()
    other[3, 2] = True
    with pytest.raises(Mistake, match="walk up"):
        ch15.check_2(other, tree, offset)
    assert "極性" in japanese_hint(ch15.check_2, ~right, tree, offset)
    refuses_the_wrong_kind(ch15.check_2, "mask", "a str", "str", tree, offset)


def test_check_3():
    ch15.check_3.solution(ch15.combine_solution)
    ch15.check_3.solution(lambda parts, sink: list(ch15.combine_solution(parts, sink)))   # a list is fine too

    def per_range(parts, sink):
        live = [torch.where(m.isfinite(), m, 0.0) for m, _, _ in parts]          # the sink added to every range
        return ch15.combine([(m, l + torch.exp(sink - s), a) for (m, l, a), s in zip(parts, live, strict=True)])

    def stacked(parts):
        return [torch.stack([p[i] for p in parts]) for i in range(3)]

    def every_range(parts, sink):                   # the sink's exp added once per range, empty ones included
        m, l, a = stacked(parts)
        M = m.max(0).values
        total = (l * torch.exp(m - M)).sum(0) + len(parts) * torch.exp(sink - M)
        return (a * torch.exp(m - M)[..., None]).sum(0) / total[:, None], M + torch.log(total)

    def sink_not_in_max(parts, sink):               # right unless a row sees no key at all
        m, l, a = stacked(parts)
        M = m.max(0).values
        scale = torch.exp(m - M)
        total = (l * scale).sum(0) + torch.exp(sink - M)
        return (a * scale[..., None]).sum(0) / total[:, None], M + torch.log(total)

    def unscaled(parts, sink):                      # no max subtracted: overflows in float32 above ~88
        m, l, a = stacked(parts)
        total = (l * torch.exp(m)).sum(0) + math.exp(sink)
        return (a * torch.exp(m)[..., None]).sum(0) / total[:, None], torch.log(total)

    def per_range_division(parts, sink):            # acc / l per range: 0 / 0 on an empty range
        m, l, a = stacked(parts)
        M = torch.maximum(m.max(0).values, torch.tensor(sink, dtype=m.dtype))
        w = l * torch.exp(m - M)
        total = w.sum(0) + torch.exp(sink - M)
        return ((a / l[..., None]) * w[..., None]).sum(0) / total[:, None], M + torch.log(total)

    for wrong, hint in ((lambda parts, sink: ch15.combine(parts), "sink is missing"),
                        (per_range, "once per range"),
                        (every_range, "once per range"),
                        (sink_not_in_max, "common max must include the sink"),
                        (unscaled, "overflows"),
                        (per_range_division, "0 / 0"),
                        (lambda parts, sink: (ch15.combine_solution(parts, sink)[0],
                                              ch15.combine(parts)[1]), "lse is not"),
                        (lambda parts, sink: ch15.combine_solution(parts, sink)[0], "two tensors"),
                        (lambda parts, sink: 1 / 0, "ZeroDivisionError")):
        with pytest.raises(Mistake, match=hint):
            ch15.check_3(wrong)
    assert "シンク" in japanese_hint(ch15.check_3, lambda parts, sink: ch15.combine(parts))


def test_the_explorer_on_192_settings():
    """The right construction always equals the serial run; so do breadth-order positions on a linear tree (its
    list order is its depth), and, with no cache, the tril(0) mask and restarted positions on a linear tree."""
    for cached in (0, 1, 3, 5):
        for new in (1, 3, 4, 6):
            for tree in ch15.TREES:
                for mask in ch15.EXPLORER_MASKS:
                    same = "True" in ch15.cache_view(cached, new, tree, "0", mask).summary
                    if mask == "offset mask" or (tree == "linear" and (mask == "breadth-order positions"
                                                                       or cached == 0)):
                        assert same, (cached, new, tree, mask)
    for tree in ("binary", "given"):                 # without a cache, two mistakes still break a branching tree
        for mask in ("tril(0) mask", "breadth-order positions"):
            assert "True" not in ch15.cache_view(0, 6, tree, "none", mask).summary
        assert "True" in ch15.cache_view(0, 6, tree, "none", "positions restarted").summary
