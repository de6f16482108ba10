"""Chapter 16: the convolution, the scan, linear attention, the hybrid explorer and the exercise checks
(helpers/chapters/ch16_masks_outside_softmax.py)."""

import re

import pytest
import torch

from helpers.chapters import ch16_masks_outside_softmax as ch16
from helpers.chapters.ch15_many_tokens_against_a_cache import cached_serial_full
from helpers.checks import check_padding_invariance, expected_mask, infer_mask
from helpers.exercises import Mistake
from helpers.language import speaking
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


def test_linear_attention_zero_keys_gives_finite_pad_outputs_and_the_next_layer_stays_finite():
    """A left pad has seen no real key: unguarded, its output is 0/0 = NaN and a next (masked) attention layer spreads
    it to real outputs; LinearAttention divides by 1 at the pads and sets their outputs to 0, in both forms."""
    x = torch.randn(2, 6, 4, generator=torch.Generator().manual_seed(5))
    pads = torch.stack([key_padding_mask([4], 6, side="left")[0], key_padding_mask([3], 6, side="right")[0]])
    layer = ch16.LinearAttention()
    with torch.no_grad():
        for form in (layer, layer.quadratic):
            out = form(x, pads)
            assert out.isfinite().all() and (out[pads] == 0).all()
            assert ch16.CausalAttention("masked")(x + out, pads).isfinite().all()
        q, k, v = ch16.features(layer.q(x)), ch16.features(layer.k(x)), layer.v(x)
        unguarded = ch16.running_sums(q, k, v, pads)
        assert unguarded[0, :2].isnan().all() and torch.allclose(unguarded[~pads], layer(x, pads)[~pads], atol=1e-6)
        assert not ch16.CausalAttention("masked")(x + unguarded, pads)[~pads].isfinite().all()


def test_linear_attention_forms_agree_and_a_fill_gives_the_pads_mean():
    x = torch.randn(2, 7, 4, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        layer = ch16.LinearAttention()
        assert torch.allclose(layer(x), layer.quadratic(x), atol=1e-5)
        filled = ch16.LinearAttention("-1e9 scores")
        pads = key_padding_mask([5], 7, side="left")
        out = filled(x[:1], pads)[0]
        assert torch.allclose(out[2:], filled.v(x[:1])[0, :2].mean(0).expand(5, -1), atol=1e-4)


def decode(stack, prompt, filler, new, side, at_last_real=False):
    """Prefill the prompt padded with `filler` on `side` (with its mask), then decode `new` one token at a time.
    at_last_real: the convolution's window rebuilt from the prompt's last kernel - 1 real inputs."""
    pads = key_padding_mask([prompt.shape[1]], prompt.shape[1] + filler.shape[1], side=side)
    _, cache = stack.forward_with_cache(torch.cat([filler, prompt] if side == "left" else [prompt, filler], 1), None,
                                        pads)
    if at_last_real:
        cache = (prompt[:, prompt.shape[1] - (stack.conv.kernel - 1):], cache[1])
    steps = []
    for t in range(new.shape[1]):
        out, cache = stack.forward_with_cache(new[:, t:t + 1], cache)
        steps.append(out)
    return torch.cat(steps, 1)


def test_the_caches_follow_the_invariant_and_a_left_padded_prompt_decodes_like_the_unpadded_one():
    stack = ch16.ConvScan()
    x = torch.randn(2, 9, 4, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        assert all(d < 1e-5 for d in cached_serial_full(stack.forward_with_cache, x, offset=5).values())
        for layer in (ch16.ShortConv(), ch16.Scan()):
            assert all(d < 1e-5 for d in cached_serial_full(layer.forward_with_cache, x, offset=3).values())


@pytest.mark.parametrize("conv", ch16.CONV_MASKS)
def test_random_pads_decode_like_the_unpadded_prompt_only_left_padded_with_the_fix(conv):
    """The pads hold random values (zeros would pass without any fix): left padding decodes like the unpadded
    prompt only with the convolution's input masked; right padding never does, from the cache as it comes."""
    x = torch.randn(1, 7, 4, generator=torch.Generator().manual_seed(3))
    filler = 10 * torch.randn(1, 2, 4, generator=torch.Generator().manual_seed(4))
    stack = ch16.ConvScan(conv=conv)
    with torch.no_grad():
        reference = stack(x)[:, 4:]
        for side in ("left", "right"):
            same = torch.allclose(decode(stack, x[:, :4], filler, x[:, 4:], side), reference, atol=1e-5)
            assert same == (side == "left" and conv == "before"), side


@pytest.mark.parametrize(("scan", "same"), [("hold", True), ("input", False)])
def test_a_right_padded_rows_cache_taken_at_its_last_real_token_decodes_like_the_unpadded_prompt(scan, same):
    """Rule 4: only the convolution's window holds pads; rebuilt from the last real inputs, the decoded outputs equal
    the unpadded run's when the scan held its state across the pads ("hold"), not when it decayed ("input")."""
    x = torch.randn(1, 7, 4, generator=torch.Generator().manual_seed(3))
    filler = 10 * torch.randn(1, 2, 4, generator=torch.Generator().manual_seed(4))
    stack = ch16.ConvScan(scan=scan)
    with torch.no_grad():
        got = decode(stack, x[:, :4], filler, x[:, 4:], "right", at_last_real=True)
        assert torch.allclose(got, stack(x)[:, 4:], atol=1e-5) == same


def test_a_bias_between_the_zeroing_and_the_convolution_undoes_the_fix_in_lfm2():
    """LFM2 zeroes before in_proj: exact without biases (the default); with conv_bias=True (random biases) left
    padding fails with the mask at batch size 1, and zeroing in_proj's bias alone makes it pass again."""
    model = ch16.tiny_lfm2(conv_bias=True)
    adapter = ch16.hf_adapter(model)

    def passes_hf(side):
        return check_padding_invariance(adapter, embed_dim=16, causal=True, padding_side=side, batch_size=1,
                                        trials=6, max_len=8).passed
    assert passes_hf("right") and not passes_hf("left")
    with torch.no_grad():
        for layer in model.layers:
            if hasattr(layer, "conv"):
                layer.conv.in_proj.bias.zero_()
    assert passes_hf("left")
    with pytest.raises(TypeError, match="conv_bias must be a bool"):
        ch16.tiny_lfm2(conv_bias=1)


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
        assert box.controls["batch"].description == "batch"          # the browser test finds it by this label
    finally:
        box.close()


def test_the_japanese_explorer_labels_its_options_and_ticks_in_japanese_and_reads_english_values():
    with speaking("ja"):
        box = ch16.hybrid_explorer()
        try:
            assert [label for label, _ in box.controls["conv"].options] == ["マスクする", "マスクしない",
                                                                             "バッチサイズ 2 以上のときだけ"]
            assert [value for _, value in box.controls["side"].options] == ["left", "right"]
            assert box.controls["batch"].description == "バッチサイズ"
            assert box.summary.value == ("左パディング、バッチサイズ 1：パッドが実トークン t0、t1、t2、t3 の"
                                         "出力を変える（最初に入り込む層は畳み込み）")
            box.controls["batch"].value = 3
            assert box.summary.value == "左パディング、バッチサイズ 3：パッドで変わる実トークンの出力はない"
        finally:
            box.close()
        view = ch16.hybrid_view()
        assert list(view.panels[0].cols[:2]) == ["パッド", "パッド"] and "pad" not in view.panels[0].rows


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
    ch16.check_1.solution({3, 4, 5}, 3, 7)                    # a set or a range: order and repeats do not matter
    ch16.check_1.solution(range(3, 6), 3, 7)
    with pytest.raises(Mistake, match="real positions only"):
        ch16.check_1((0, 1, 2, 3, 4, 5), 3, 7)
    with pytest.raises(Mistake, match="count positions in the padded row: the pads are positions 0 … 2"):
        ch16.check_1((0, 1, 2), 3, 7)                         # counted among the real tokens, as the explorer does
    with pytest.raises(Mistake, match="this row has 3 pads"):
        ch16.check_1((2, 3, 4), 3, 7)                         # step 1's row of 2 pads
    assert "最初の実トークンは位置 3" in japanese_hint(ch16.check_1, (0, 1, 2), 3, 7)
    for wrong in ((3, 4), (3, 4, 5, 6)):                      # kernel size 3 or 5
        with pytest.raises(Mistake, match="reads the token itself and the 3 positions before it"):
            ch16.check_1(wrong, 3, 7)
    with pytest.raises(Mistake, match="inside its convolution's window"):
        ch16.check_1((3,), 3, 7)
    assert "カーネル幅 4 の畳み込み" in japanese_hint(ch16.check_1, (3, 4), 3, 7)
    assert "ウィンドウ" in japanese_hint(ch16.check_1, (3,), 3, 7)
    refuses_the_wrong_kind(ch16.check_1, "3, 4, 5", "a str", "str", 3, 7)


def right_linear_attention(q, k, v, key_padding_mask):
    pads = key_padding_mask[..., None]
    k, v = k.masked_fill(pads, 0), v.masked_fill(pads, 0)
    state = torch.cumsum(k[..., :, None] * v[..., None, :], 1)
    den = (q * torch.cumsum(k, 1)).sum(-1, keepdim=True)
    return (torch.einsum("nle,nlef->nlf", q, state) / den.masked_fill(pads, 1)).masked_fill(pads, 0)


def finite_pads(y, kpm):
    return y.nan_to_num().masked_fill(kpm[..., None], 0)


def scores_filled(fill, first=False, in_place=False):
    """The quadratic form with the softmax habit: `fill` added to (or written at) the pads' scores, after the future
    cells are set to 0 or (first=True) before."""
    def answer(q, k, v, kpm):
        scores = q @ k.transpose(1, 2)
        if first:
            scores = scores + kpm[:, None, :] * fill
        scores = scores * torch.ones(6, 6).tril()
        if not first:
            scores = scores.masked_fill(kpm[:, None, :], fill) if in_place else scores + kpm[:, None, :] * fill
        return ((scores @ v) / scores.sum(-1, keepdim=True)).masked_fill(kpm[..., None], 0)   # pads: 0
    return answer


def test_check_2_accepts_every_right_form():
    ch16.check_2.solution(right_linear_attention)

    def quadratic(q, k, v, kpm):                               # the same layer written as a quadratic form
        scores = (q @ k.transpose(1, 2)) * (~kpm)[:, None, :] * torch.ones(6, 6).tril()
        return finite_pads((scores @ v) / scores.sum(-1, keepdim=True), kpm)
    ch16.check_2.solution(quadratic)

    def keys_only(q, k, v, kpm):                               # phi(k) alone zeroed: S and z both carry it
        return finite_pads(ch16.running_sums(q, k, v, kpm, values=False), kpm)
    ch16.check_2.solution(keys_only)

    def multiplied(q, k, v, kpm):                              # zeroed by a multiplication: fine for finite inputs
        keep = (~kpm)[..., None].float()
        return finite_pads(ch16.running_sums(q, k * keep, v * keep, torch.zeros_like(kpm)), kpm)
    ch16.check_2.solution(multiplied)


@pytest.mark.parametrize(("answer", "hint", "ja"), [
    (lambda q, k, v, kpm: ch16.running_sums(q, k, v, kpm), "a pad's own output is NaN or inf", "0/0 = NaN"),
    (lambda q, k, v, kpm: ch16.running_sums(q, k, v, kpm, keys=False, values=False), "still enter the running sums",
     "累積和"),
    (lambda q, k, v, kpm: finite_pads(ch16.running_sums(q, k, v, kpm, keys=False), kpm), "keys still enter z",
     "分母の和 z"),
    (lambda q, k, v, kpm: ch16.running_sums(q, k, v, kpm, flip=True), "True = pad", "True の位置"),
    (lambda q, k, v, kpm: finite_pads(ch16.running_sums(q, k, v, kpm, flip=True), kpm), "True = pad", "True の位置"),
    (lambda q, k, v, kpm: ch16.running_sums(q, k, v, kpm, inclusive=False), "the sums run over j ≤ t", "j ≤ t"),
    (scores_filled(-1e9), "no softmax to cancel a -1e9", "ソフトマックスはない"),
    (scores_filled(-1e9, in_place=True), "no softmax to cancel a -1e9", "ソフトマックスはない"),
    (scores_filled(-1e9, first=True), "no softmax to cancel a -1e9", "ソフトマックスはない"),
    (scores_filled(-float("inf")), "a real output is NaN or inf", "-inf は足さない"),
    (lambda q, k, v, kpm: right_linear_attention(q, k, v, kpm).half(), "return float32", "float32 で返す"),
    (lambda q, k, v, kpm: right_linear_attention(q, k, v, kpm) * 2, "compare with the quadratic form",
     "L × L のスコアを作る形"),
    (lambda q, k, v, kpm: q[:, :3], "one tensor", "テンソルを 1 つ返す"),
])
def test_check_2_names_each_mistake(answer, hint, ja):
    with pytest.raises(Mistake, match=re.escape(hint)):
        ch16.check_2(answer)
    assert ja in japanese_hint(ch16.check_2, answer)


def test_check_2_says_where_a_raising_function_was_called():
    with pytest.raises(Mistake, match=r"^in linear_attention\(q, k, v, kpm\), your function raised TypeError"):
        ch16.check_2(lambda q, k, v: q)
    refuses_the_wrong_kind(ch16.check_2, 3, "an int", "int")


def test_pads_reach_is_the_summary_in_data():
    assert ch16.pads_reach("left", 1, "if batch > 1") == ([0, 1, 2, 3], "convolution")
    assert ch16.pads_reach("left", 3, "masked", "masked", "unmasked") == ([0, 1, 2, 3], "attention")
    assert ch16.pads_reach("right", 1, "unmasked", "unmasked", "unmasked") == ([], None)
    with pytest.raises(ValueError, match="batch must be 1 or 3"):
        ch16.pads_reach(batch=True)
