"""helpers.checks, second edition: left padding, position_ids, rtol, pooled outputs, shapes, errors and NaN."""

import re

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from helpers import check_no_future_leak, check_padding_invariance
from helpers.checks import RTOL, AttnCallError, CheckReport, as_attn, position_ids
from tests.test_checks import E, quiet_nested_tensor_warning, sdpa_done_right, seeded  # noqa: F401 (a fixture)


def causal_ignores_padding(x, key_padding_mask, attn_mask):
    """Applies the causal mask, forgets the padding mask: right pads are in the future, left pads are not."""
    return F.scaled_dot_product_attention(x, x, x, attn_mask=None if attn_mask is None else ~attn_mask)


class Decoder(nn.Module):
    """A decoder-only block with learned positions; the broken one numbers positions 0..L-1 regardless of pads."""

    def __init__(self, uses_position_ids: bool = True):
        super().__init__()
        self.uses_position_ids = uses_position_ids
        self.pos = nn.Embedding(16, E)
        self.attn = nn.MultiheadAttention(E, 2, batch_first=True)

    def forward(self, x, key_padding_mask, attn_mask, position_ids):
        if not self.uses_position_ids:
            position_ids = torch.arange(x.shape[1]).expand(x.shape[0], -1)      # bug under left padding
        h = x + self.pos(position_ids)
        return self.attn(h, h, h, key_padding_mask=key_padding_mask, attn_mask=attn_mask, need_weights=False)[0]


# --- left padding ---

def test_position_ids_count_real_tokens_only():
    right = torch.tensor([[False, False, True, True], [False] * 4])
    left = torch.tensor([[True, True, False, False], [False] * 4])
    assert position_ids(right).tolist() == [[0, 1, 1, 1], [0, 1, 2, 3]]
    assert position_ids(left).tolist() == [[0, 0, 0, 1], [0, 1, 2, 3]]
    assert position_ids(left).dtype == torch.long


def test_a_causal_module_that_ignores_its_padding_mask_is_caught_only_with_left_padding():
    def verdicts(attn):
        return {side: check_padding_invariance(attn, embed_dim=E, causal=True, padding_side=side).passed
                for side in ("right", "left", "both")}
    assert verdicts(causal_ignores_padding) == {"right": True, "left": False, "both": False}
    assert verdicts(sdpa_done_right) == {"right": True, "left": True, "both": True}
    report = check_padding_invariance(causal_ignores_padding, embed_dim=E, causal=True)
    assert "left-padded to" in report.first_failure
    assert "new values at the pad positions changed" in report.first_failure


def test_a_decoder_that_ignores_position_ids_is_caught_only_with_left_padding():
    broken, fixed = seeded(lambda: Decoder(uses_position_ids=False).eval()), seeded(lambda: Decoder().eval())
    for check in (check_padding_invariance, check_no_future_leak):
        kwargs = {"causal": True} if check is check_padding_invariance else {}
        assert check(fixed, embed_dim=E, **kwargs).passed
        assert check(broken, embed_dim=E, padding_side="right", **kwargs).passed
    report = check_padding_invariance(broken, embed_dim=E, causal=True)
    assert not report.passed
    assert re.fullmatch(r"trial 0: lengths \[1, 2, 2\] left-padded to 2: item 0 run alone \(unpadded\) differs "
                        r"at real position 1 \(position 0 alone\) by [0-9.e+-]+", report.first_failure)


def test_the_module_gets_position_ids_only_if_it_asks_for_them():
    seen = []

    def records(x, key_padding_mask, attn_mask, position_ids):
        seen.append((key_padding_mask.clone(), position_ids.clone()))
        return x

    check_padding_invariance(records, embed_dim=E, trials=2)
    for kpm, pos in seen:
        assert torch.equal(pos, position_ids(kpm))
        for row, p in zip(kpm, pos, strict=True):
            assert p[~row].tolist() == list(range(int((~row).sum())))   # real tokens: 0, 1, ... on either side
    assert any(bool(kpm[:, 0].any()) for kpm, _ in seen)             # some calls were left-padded
    assert check_padding_invariance(lambda x, kpm, am: x, embed_dim=E).passed   # no position_ids parameter: fine


def test_messages_name_positions_in_the_left_padded_batch():
    report = check_padding_invariance(causal_ignores_padding, embed_dim=E, causal=True, padding_side="left", trials=5)
    found = re.search(r"lengths \[(.*)\] left-padded to (\d+): .* item (\d+)'s output at real position (\d+)",
                      report.first_failure)
    lengths, S, i, p = [int(n) for n in found[1].split(", ")], int(found[2]), int(found[3]), int(found[4])
    assert S - lengths[i] <= p < S        # a real position of item i in the left-padded batch


def test_two_causal_encoder_layers_return_nan_under_left_padding():
    """Not a check bug: layer 1's pad rows see no key (NaN); layer 2 multiplies that value by weight 0."""
    two = seeded(lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(E, 2, 16, batch_first=True), 2).eval())
    one = seeded(lambda: nn.TransformerEncoderLayer(E, 2, 16, batch_first=True).eval())
    report = check_padding_invariance(two, causal=True)
    assert not report.passed and "in the padded batch, attn returned NaN" in report.first_failure
    assert check_padding_invariance(two, causal=True, padding_side="right").passed
    assert check_padding_invariance(two).passed                   # no causal mask: no pad row is fully masked
    assert check_padding_invariance(one, causal=True).passed      # one layer: the NaN stays in the pad rows


def test_the_documented_examples_pass():
    """Run the module docstring's examples as written (every report must pass), then one it does not show."""
    import textwrap

    import transformers

    from helpers import checks

    doc = checks.__doc__
    examples = textwrap.dedent(doc[doc.index("One example per family:"):doc.index("\nMode:")].split("\n", 1)[1])
    reports = []

    def recorded(check):
        def run(*args, **kwargs):
            reports.append(check(*args, **kwargs))
            return reports[-1]
        return run

    tiny_config = transformers.GPT2Config(vocab_size=10, n_positions=16, n_embd=E, n_layer=1, n_head=2)
    torch.manual_seed(0)
    exec(examples, {"nn": nn, "torch": torch, "transformers": transformers, "E": E, "tiny_config": tiny_config,
                    "check_padding_invariance": recorded(check_padding_invariance),
                    "check_no_future_leak": recorded(check_no_future_leak)})
    assert len(reports) == 6 and all(r.passed for r in reports), reports

    layer = nn.TransformerDecoderLayer(E, 2, 16, batch_first=True).eval()    # the adapter the TypeError suggests
    memory = torch.randn(1, 3, E)

    def decoder_layer(x, kpm, am):
        return layer(x, memory.expand(x.shape[0], -1, -1), tgt_mask=am, tgt_key_padding_mask=kpm)
    assert check_padding_invariance(decoder_layer, embed_dim=E, causal=True).passed
    assert check_no_future_leak(decoder_layer, embed_dim=E).passed


# --- relative tolerance ---

@pytest.mark.parametrize("scale", [100.0, 1e4])
@pytest.mark.parametrize("make", [lambda: nn.MultiheadAttention(E, 2, batch_first=True).eval(),
                                  lambda: nn.MultiheadAttention(E, 1, batch_first=True).eval(),
                                  lambda: nn.TransformerEncoderLayer(E, 2, 16, batch_first=True).eval()])
def test_a_correct_module_with_large_outputs_passes(make, scale):
    inner = as_attn(seeded(make))

    def scaled(x, kpm, am):
        return inner(x, kpm, am) * scale
    assert check_padding_invariance(scaled, embed_dim=E).passed
    assert check_padding_invariance(scaled, embed_dim=E, causal=True, padding_side="right").passed
    assert check_no_future_leak(scaled, embed_dim=E, padding_side="right").passed
    if scale == 1e4:      # its float32 rounding is ~1e-3 in absolute terms: atol alone would fail it
        assert not check_padding_invariance(scaled, embed_dim=E, padding_side="right", rtol=0.0).passed


def test_a_broken_module_with_large_outputs_fails_and_the_report_gives_the_relative_difference():
    def scaled_broken(x, kpm, am):
        return causal_ignores_padding(x, kpm, am) * 1e4
    report = check_padding_invariance(scaled_broken, embed_dim=E)
    assert not report.passed and report.worst_diff > 1e3
    assert report.worst_rel_diff > 0.01     # the same relative size as unscaled:
    unscaled = check_padding_invariance(causal_ignores_padding, embed_dim=E)
    assert report.worst_rel_diff == pytest.approx(unscaled.worst_rel_diff, rel=1e-3)
    assert f"relative {report.worst_rel_diff:.2g})" in str(report)


def test_the_pass_line_shows_rtol_only_when_it_is_not_the_default():
    sdpa = sdpa_done_right
    assert str(check_no_future_leak(sdpa, embed_dim=E, trials=5)) == "no future leak: passed (5 trials, atol=1e-05)"
    assert RTOL == 1e-5
    assert str(check_no_future_leak(sdpa, embed_dim=E, trials=5, rtol=1e-3)) == \
        "no future leak: passed (5 trials, atol=1e-05, rtol=0.001)"


# --- pooled outputs ---

def masked_mean(x, key_padding_mask, attn_mask):
    out = sdpa_done_right(x, key_padding_mask, attn_mask)
    real = (~key_padding_mask)[..., None].float()
    return (out * real).sum(1) / real.sum(1)                       # (N, E)


def mean_over_pads_too(x, key_padding_mask, attn_mask):
    return sdpa_done_right(x, key_padding_mask, attn_mask).mean(1)


def position_0(x, key_padding_mask, attn_mask):
    return sdpa_done_right(x, key_padding_mask, attn_mask)[:, 0]   # a [CLS]-style classifier


def first_real_token(x, key_padding_mask, attn_mask):
    first = (~key_padding_mask).long().argmax(-1)                  # position of the first real token
    return sdpa_done_right(x, key_padding_mask, attn_mask)[torch.arange(x.shape[0]), first]


@pytest.mark.parametrize(("attn", "right", "left"), [
    (masked_mean, True, True),
    (mean_over_pads_too, False, False),
    (position_0, True, False),           # under left padding, position 0 is a pad
    (first_real_token, True, True),
])
def test_pooled_outputs_are_compared_per_item(attn, right, left):
    verdict = {side: check_padding_invariance(attn, embed_dim=E, pooled=True, padding_side=side)
               for side in ("right", "left")}
    assert (verdict["right"].passed, verdict["left"].passed) == (right, left)
    for report in verdict.values():
        assert report.check == "padding invariance (pooled)"
        if not report.passed:
            assert "pooled output" in report.first_failure


def test_pooled_output_without_pooled_true_gets_a_hint():
    with pytest.raises(ValueError, match=r"a pooled output, one row per item\? pass pooled=True"):
        check_padding_invariance(masked_mean, embed_dim=E)


# --- strict shapes ---

def test_the_whole_output_shape_is_checked_when_n_equals_l():
    def returns_weights(x, kpm, am):     # (N, L, S): the attention weights instead of the output
        return torch.softmax(x @ x.transpose(1, 2), -1)
    with pytest.raises(ValueError, match=r"attn must return \(N, L, ...\) = .* \(the same ... in every call\), "
                                         r"got \(\d+, \d+, \d+\) in (trial \d+|the determinism guard)"):
        check_padding_invariance(returns_weights, embed_dim=E)

    def sequence_first(x, kpm, am):     # (L, N, E): a missed transpose, invisible when N == L
        return sdpa_done_right(x, kpm, am).transpose(0, 1)
    with pytest.raises(ValueError, match=r"attn must return \(N, L, ...\) = .*, got \(3, 5, 8\) in the determinism "
                                         r"guard"):   # its batch of 5 shows the transpose at once
        check_padding_invariance(sequence_first, embed_dim=E, batch_size=3, max_len=3)

    def broadcast_bug(x, kpm, am):      # (N, N, L, E) from a mask missing a dimension; shape[:2] fits when N == L
        return sdpa_done_right(x, kpm, am) * (~kpm)[:, None, :, None]
    with pytest.raises(ValueError, match=r"attn must return \(N, L, ...\) = \(\d, \d\)"):
        check_no_future_leak(broadcast_bug, embed_dim=E, batch_size=3, max_len=3)


# --- errors and NaN ---

def test_an_exception_in_the_module_is_reraised_with_the_trial_and_shapes():
    def fails_on_left_padding(x, key_padding_mask, attn_mask):
        if key_padding_mask[:, 0].any():
            raise IndexError("pads first? not here")
        return x
    with pytest.raises(AttnCallError, match=r"attn raised IndexError in trial 0 \(left padding\), called with "
                                            r"x \(3, 2, 8\), key_padding_mask \(3, 2\), attn_mask None: "
                                            r"pads first\? not here") as caught:
        check_padding_invariance(fails_on_left_padding, embed_dim=E)
    assert isinstance(caught.value.__cause__, IndexError)

    def decoder_fails(x, key_padding_mask, attn_mask, position_ids):
        raise RuntimeError("boom")
    with pytest.raises(AttnCallError, match=r"in the determinism guard \(the same input twice\), called with x "
                                            r"\(5, 16, 8\), key_padding_mask \(5, 16\), attn_mask \(16, 16\), "
                                            r"position_ids \(5, 16\)"):
        check_no_future_leak(decoder_fails, embed_dim=E)


def zero_pads_first(attn):
    def cleaned(x, key_padding_mask, attn_mask):
        return attn(x.masked_fill(key_padding_mask[..., None], 0.0), key_padding_mask, attn_mask)
    return cleaned


def test_nonfinite_junk_reaches_real_rows_of_a_correct_module_through_zero_times_nan():
    mha = as_attn(seeded(lambda: nn.MultiheadAttention(E, 2, batch_first=True).eval()))
    for attn in (mha, sdpa_done_right):
        assert check_padding_invariance(attn, embed_dim=E).passed
        report = check_padding_invariance(attn, embed_dim=E, nonfinite_junk=True)
        assert not report.passed      # the pad key's weight is 0, its value NaN: 0 * NaN = NaN in every real row
        assert re.fullmatch(r"trial 19: lengths .* padded to 16: with NaN/inf at the pad positions, "
                            r"attn returned NaN at item 0's real position 0", report.first_failure)
        assert check_padding_invariance(zero_pads_first(attn), embed_dim=E, nonfinite_junk=True).passed
    weights = torch.tensor([1.0, 0.0])             # the hazard in two numbers
    assert (weights @ torch.tensor([2.0, float("nan")])).isnan()


def test_reports_stay_comparable():
    a = check_padding_invariance(causal_ignores_padding, embed_dim=E, causal=True, trials=3)
    assert isinstance(a, CheckReport) and a == check_padding_invariance(causal_ignores_padding, embed_dim=E,
                                                                         causal=True, trials=3)
    assert a.rtol == RTOL and a.trials == 3
