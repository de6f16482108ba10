"""Chapter 16: the convolution, the scan, linear attention, the hybrid explorer and the exercise checks
(helpers/chapters/ch16_masks_outside_softmax.py)."""

import pytest
import torch

from helpers.chapters import ch16_masks_outside_softmax as ch16
from helpers.chapters.ch15_many_tokens_against_a_cache import cached_serial_full
from helpers.checks import check_padding_invariance, expected_mask, infer_mask
from helpers.exercises import Mistake
from helpers.masks import key_padding_mask
from tests.chapters import accepts_every_form, japanese_hint, refuses_the_wrong_kind


def passes(layer, side, batch=3):
    return check_padding_invariance(layer, embed_dim=4, causal=True, padding_side=side, batch_size=batch,
                                    trials=8, max_len=10).passed


@pytest.mark.parametrize(("module", "mask", "right", "left"), [
    (ch16.ShortConv, "before", True, True), (ch16.ShortConv, "after", True, False),
    (ch16.ShortConv, "none", True, False),
    (ch16.Scan, "input", True, True), (ch16.Scan, "hold", True, True), (ch16.Scan, "output", True, False),
    (ch16.Scan, "none", True, False),
    (ch16.LinearAttention, "zero keys", True, True), (ch16.LinearAttention, "-1e9 scores", False, False),
    (ch16.LinearAttention, "none", True, False)])
def test_each_layer_passes_or_fails_on_each_side_as_the_chapter_says(module, mask, right, left):
    layer = module(mask)
    assert passes(layer, "right") == right and passes(layer, "left") == left


@pytest.mark.parametrize("module", [ch16.ShortConv, ch16.Scan])
def test_the_batch_of_one_gate_passes_batched_and_fails_alone(module):
    layer = module("gated")
    assert passes(layer, "left", batch=3) and not passes(layer, "left", batch=1)


def test_the_convolution_is_a_band_and_the_left_pads_reach_the_next_kernel_minus_1_tokens():
    assert torch.equal(infer_mask(ch16.ShortConv(), 8, embed_dim=4), expected_mask("sliding_window", 8, window=4))
    assert ch16.reads_a_pad(2, 8) == (2, 3, 4) and ch16.reads_a_pad(3, 7) == (3, 4, 5)
    assert ch16.reads_a_pad(1, 3) == (1, 2) and ch16.reads_a_pad(0, 5) == ()


def test_only_hold_keeps_the_final_state_across_right_pads():
    x = torch.randn(2, 6, 4, generator=torch.Generator().manual_seed(0))
    right = key_padding_mask([4, 4], 6, side="right")
    with torch.no_grad():
        for mask, same in (("hold", True), ("input", False)):
            scan = ch16.Scan(mask)
            assert torch.allclose(scan.final_state(x, right), scan.final_state(x[:, :4]), atol=1e-6) == same


def test_linear_attention_forms_agree_and_a_fill_gives_the_pads_mean():
    x = torch.randn(2, 7, 4, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        layer = ch16.LinearAttention()
        assert torch.allclose(layer(x), layer.quadratic(x), atol=1e-5)
        filled = ch16.LinearAttention("-1e9 scores")
        pads = key_padding_mask([5], 7, side="left")
        out = filled(x[:1], pads)[0]
        assert torch.allclose(out[2:], filled.v(x[:1])[0, :2].mean(0).expand(5, -1), atol=1e-4)


def test_the_caches_follow_the_invariant_and_a_left_padded_prompt_decodes_like_the_unpadded_one():
    stack = ch16.ConvScan()
    x = torch.randn(2, 9, 4, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        assert all(d < 1e-5 for d in cached_serial_full(stack.forward_with_cache, x, offset=5).values())
        for layer in (ch16.ShortConv(), ch16.Scan()):
            assert all(d < 1e-5 for d in cached_serial_full(layer.forward_with_cache, x, offset=3).values())
        full, _ = stack.forward_with_cache(x[:1, :7], None)
        padded = torch.cat([torch.zeros(1, 2, 4), x[:1, :4]], 1)
        _, cache = stack.forward_with_cache(padded, None, key_padding_mask([4], 6, side="left"))
        out, _ = stack.forward_with_cache(x[:1, 4:7], cache)
        assert torch.allclose(out, full[:, 4:], atol=1e-5)


def test_bad_arguments_are_refused_by_name():
    with pytest.raises(ValueError, match="mask must be one of"):
        ch16.ShortConv("sometimes")
    with pytest.raises(ValueError, match="key_padding_mask must have shape"):
        ch16.ShortConv()(torch.zeros(1, 4, 4), torch.zeros(1, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="x must be"):
        ch16.Scan()(torch.zeros(4, 4))
    with pytest.raises(ValueError, match="batch must be 1 or 3"):
        ch16.hybrid_view(batch=2)
    with pytest.raises(ValueError, match="side must be one of"):
        ch16.hybrid_view(side="middle")


def test_the_explorer_shows_its_view_and_moves():
    box = ch16.hybrid_explorer()
    try:
        assert box.summary.value == ("left padding, batch of 1: pads move real outputs t0, t1, t2, t3, first through "
                                     "the convolution")
        box.controls["batch"].value = 3
        assert box.summary.value == "left padding, batch of 3: no real output moves"
        box.controls["scan"].value = "unmasked"
        assert box.summary.value.endswith("first through the scan")
        box.controls["side"].value = "right"
        assert box.summary.value == "right padding, batch of 3: no real output moves"
    finally:
        box.close()


def test_every_explorer_setting_names_the_first_layer_a_pad_reaches():
    """Left padding: the first unmasked layer (the gate counting as unmasked at batch 1) is named; right padding and
    every layer masked: nothing moves."""
    for batch in (1, 3):
        for conv in ch16.MASKING:
            for scan in ch16.MASKING:
                for attention in ch16.MASKING:
                    masks = (conv, scan, attention)
                    leaky = [m == "unmasked" or (m == "if batch > 1" and batch == 1) for m in masks]
                    left = ch16.hybrid_view("left", batch, conv, scan, attention).summary
                    right = ch16.hybrid_view("right", batch, conv, scan, attention).summary
                    assert right.endswith("no real output moves")
                    if any(leaky):
                        assert left.endswith(f"first through the {ch16.LAYERS[leaky.index(True)]}"), (masks, left)
                    else:
                        assert left.endswith("no real output moves")


def test_check_1():
    accepts_every_form(ch16.check_1, (3, 4, 5), 3, 7)
    ch16.check_1.solution([5, 3, 4], 3, 7)                    # any order
    with pytest.raises(Mistake, match="real positions only"):
        ch16.check_1((2, 3, 4, 5), 3, 7)
    with pytest.raises(Mistake, match="reads the token itself and the 3 before it"):
        ch16.check_1((3, 4), 3, 7)
    with pytest.raises(Mistake, match="inside its kernel's window"):
        ch16.check_1((3,), 3, 7)
    assert "カーネル" in japanese_hint(ch16.check_1, (3, 4), 3, 7)
    refuses_the_wrong_kind(ch16.check_1, "3, 4, 5", "a str", "str", 3, 7)


def right_linear_attention(q, k, v, key_padding_mask):
    keep = (~key_padding_mask)[..., None].to(k.dtype)
    k, v = k * keep, v * keep
    state = torch.cumsum(k[..., :, None] * v[..., None, :], 1)
    return torch.einsum("nle,nlef->nlf", q, state) / (q * torch.cumsum(k, 1)).sum(-1, keepdim=True)


def test_check_2():
    ch16.check_2.solution(right_linear_attention)

    def quadratic(q, k, v, kpm):                               # the same layer written as a quadratic form
        scores = (q @ k.transpose(1, 2)) * (~kpm)[:, None, :] * torch.ones(6, 6).tril()
        return (scores @ v) / scores.sum(-1, keepdim=True)
    ch16.check_2.solution(quadratic)

    def unmasked(q, k, v, kpm):
        return right_linear_attention(q, k, v, torch.zeros_like(kpm))

    def filled(q, k, v, kpm):
        scores = (q @ k.transpose(1, 2)) * torch.ones(6, 6).tril() + kpm[:, None, :] * -float("inf")
        return (scores @ v) / scores.sum(-1, keepdim=True)
    with pytest.raises(Mistake, match="still enter the running sums"):
        ch16.check_2(unmasked)
    with pytest.raises(Mistake, match="NaN or inf"):
        ch16.check_2(filled)
    with pytest.raises(Mistake, match="quadratic form"):
        ch16.check_2(lambda q, k, v, kpm: right_linear_attention(q, k, v, kpm) * 2)
    with pytest.raises(Mistake, match="one tensor"):
        ch16.check_2(lambda q, k, v, kpm: q[:, :3])
    assert "累積和" in japanese_hint(ch16.check_2, unmasked)
    refuses_the_wrong_kind(ch16.check_2, 3, "an int", "int")


def test_pads_reach_is_the_summary_in_data():
    assert ch16.pads_reach("left", 1, "if batch > 1") == ([0, 1, 2, 3], "convolution")
    assert ch16.pads_reach("left", 3, "masked", "masked", "unmasked") == ([0, 1, 2, 3], "attention")
    assert ch16.pads_reach("right", 1, "unmasked", "unmasked", "unmasked") == ([], None)
    with pytest.raises(ValueError, match="batch must be 1 or 3"):
        ch16.pads_reach(batch=True)
