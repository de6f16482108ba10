"""helpers.checks: the checks pass on correct attention modules and fail on each broken one."""

import math
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from helpers import attention_steps, check_no_future_leak, check_padding_invariance
from helpers.checks import ATOL, CheckReport, MaskCheckError, as_attn

E = 8


# --- correct attention, in the checks' calling convention: attn(x, key_padding_mask, attn_mask) -> output ---

def steps(x, key_padding_mask, attn_mask):
    return attention_steps(x, x, x, key_padding_mask=key_padding_mask, attn_mask=attn_mask).output


def sdpa_done_right(x, key_padding_mask, attn_mask):
    blocked = key_padding_mask[:, None, :] if attn_mask is None else key_padding_mask[:, None, :] | attn_mask
    return F.scaled_dot_product_attention(x, x, x, attn_mask=~blocked)  # SDPA: True = may attend


# --- broken attention ---

def ignores_masks(x, key_padding_mask, attn_mask):
    return F.scaled_dot_product_attention(x, x, x)


def mha_masks_to_sdpa(x, key_padding_mask, attn_mask):
    blocked = key_padding_mask[:, None, :] if attn_mask is None else key_padding_mask[:, None, :] | attn_mask
    return F.scaled_dot_product_attention(x, x, x, attn_mask=blocked)  # bug: True = blocked, SDPA reads "may attend"


def masks_queries_not_keys(x, key_padding_mask, attn_mask):
    out = F.scaled_dot_product_attention(x, x, x, attn_mask=None if attn_mask is None else ~attn_mask)
    return out.masked_fill(key_padding_mask[..., None], 0.0)  # bug: zeroes pad rows, pad keys stay visible


def ignores_attn_mask(x, key_padding_mask, attn_mask):
    return F.scaled_dot_product_attention(x, x, x, attn_mask=~key_padding_mask[:, None, :])


def nan_everywhere(x, key_padding_mask, attn_mask):
    return torch.full_like(x, float("nan"))


def seeded(make):
    torch.manual_seed(0)
    return make()


CORRECT = {
    "MultiheadAttention, 1 head (no fast path)": lambda: nn.MultiheadAttention(E, 1, batch_first=True).eval(),
    "MultiheadAttention, 2 heads (fast path)": lambda: nn.MultiheadAttention(E, 2, batch_first=True).eval(),
    "MultiheadAttention, sequence first": lambda: nn.MultiheadAttention(E, 2).eval(),
    "MultiheadAttention, training mode, dropout=0": lambda: nn.MultiheadAttention(E, 2, batch_first=True).train(),
    "TransformerEncoderLayer": lambda: nn.TransformerEncoderLayer(E, 2, 16, batch_first=True).eval(),
    "TransformerEncoderLayer, norm_first": lambda: nn.TransformerEncoderLayer(E, 2, 16, batch_first=True,
                                                                              norm_first=True).eval(),
    "TransformerEncoder (nested-tensor fast path)": lambda: nn.TransformerEncoder(
        nn.TransformerEncoderLayer(E, 2, 16, batch_first=True), 2).eval(),
    "helpers.attention_steps": lambda: steps,
    "F.scaled_dot_product_attention, masks flipped": lambda: sdpa_done_right,
}


@pytest.fixture(autouse=True)
def quiet_nested_tensor_warning():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors is in prototype stage")
        yield


# Two encoder layers + a causal mask + LEFT padding: the first layer's pad rows see no key (NaN), and the second
# layer's 0 * NaN carries that NaN to every real row. A real hazard, shown in test_checks_left_padding.py.
NAN_UNDER_LEFT_CAUSAL = {"TransformerEncoder (nested-tensor fast path)"}


@pytest.mark.parametrize("name", CORRECT)
@pytest.mark.parametrize("check", ["padding", "padding, causal", "future"])
def test_checks_pass_on_correct_attention(name, check):
    attn = seeded(CORRECT[name])
    mode = getattr(attn, "training", None)
    side = "right" if name in NAN_UNDER_LEFT_CAUSAL and check != "padding" else "both"
    if check == "future":
        report = check_no_future_leak(attn, embed_dim=E, padding_side=side)
    else:
        report = check_padding_invariance(attn, embed_dim=E, causal=check.endswith("causal"), padding_side=side)
    assert report.passed, str(report)
    assert report.first_failure is None
    assert 0 <= report.worst_diff < 1e-6  # float32 rounding only: 20x below the default atol
    assert getattr(attn, "training", None) == mode  # the check never changes the module's mode


@pytest.mark.parametrize(
    ("attn", "padding", "padding_causal", "padding_causal_right", "future"),
    [
        (ignores_masks, False, False, False, False),
        (mha_masks_to_sdpa, False, False, False, False),
        # With a causal mask, RIGHT padding sits in every real token's future: it is hidden anyway, so only
        # left padding (in the default padding_side="both") or causal=False can catch a missing key padding mask.
        (masks_queries_not_keys, False, False, True, True),
        (ignores_attn_mask, True, True, True, False),
        (nan_everywhere, False, False, False, False),
    ],
)
def test_checks_fail_on_broken_attention(attn, padding, padding_causal, padding_causal_right, future):
    results = (check_padding_invariance(attn, embed_dim=E).passed,
               check_padding_invariance(attn, embed_dim=E, causal=True).passed,
               check_padding_invariance(attn, embed_dim=E, causal=True, padding_side="right").passed,
               check_no_future_leak(attn, embed_dim=E).passed)
    assert results == (padding, padding_causal, padding_causal_right, future)


def test_failing_report_describes_the_first_failure():
    report = check_padding_invariance(masks_queries_not_keys, embed_dim=E)
    assert isinstance(report, CheckReport)
    assert not report.passed and report.worst_diff > 1.0
    assert report.first_failure.startswith("trial 0: lengths ")
    assert "new values at the pad positions changed item" in report.first_failure
    assert str(report).startswith("padding invariance: FAILED (20 trials, atol=1e-05, worst max-abs-diff ")
    assert f", relative {report.worst_rel_diff:.2g})\n  first failure: trial 0" in str(report)
    leak = check_no_future_leak(mha_masks_to_sdpa, embed_dim=E)
    assert "new values after position" in leak.first_failure


def test_nan_is_reported_as_returned_nan_not_as_a_difference():
    report = check_no_future_leak(nan_everywhere, embed_dim=E)
    assert not report.passed and math.isnan(report.worst_diff)
    assert report.first_failure == ("trial 0: lengths [2, 1, 2] padded to 2: in the unedited batch, "
                                    "attn returned NaN at item 0's real position 0")
    assert str(report).startswith("no future leak: FAILED (20 trials, atol=1e-05, attn returned NaN or inf)")
    def inf_when_large(x, kpm, am):   # inf everywhere once any input (the pads' junk too) is large
        return torch.where(x.abs().amax((1, 2), keepdim=True) > 8, math.inf, x)
    inf = check_padding_invariance(inf_when_large, embed_dim=E)
    assert "with new values at the pad positions, attn returned inf at item 0's real position" in inf.first_failure


def test_an_inf_feature_in_every_run_is_an_equal_output():
    """A fixed -inf feature (a banned logit, say) is the same in both runs: not a failure."""
    def banned(x, kpm, am):
        return torch.cat([x, torch.full_like(x[..., :1], -math.inf)], -1)
    assert check_padding_invariance(banned, embed_dim=E).passed and check_no_future_leak(banned, embed_dim=E).passed


def test_passing_report_text_has_no_machine_dependent_digits():
    report = check_no_future_leak(steps, embed_dim=E, trials=5)
    assert str(report) == "no future leak: passed (5 trials, atol=1e-05)"


def test_raise_on_fail():
    with pytest.raises(MaskCheckError, match="padding invariance: FAILED .*\n  first failure: trial 0"):
        check_padding_invariance(ignores_masks, embed_dim=E, raise_on_fail=True)
    with pytest.raises(AssertionError, match="no future leak: FAILED"):  # MaskCheckError is an AssertionError
        check_no_future_leak(ignores_attn_mask, embed_dim=E, raise_on_fail=True)
    assert check_no_future_leak(steps, embed_dim=E, raise_on_fail=True).passed


def test_trials_are_seeded():
    a = check_padding_invariance(ignores_masks, embed_dim=E, seed=3)
    b = check_padding_invariance(ignores_masks, embed_dim=E, seed=3)
    c = check_padding_invariance(ignores_masks, embed_dim=E, seed=4)
    assert a == b
    assert a.first_failure != c.first_failure


def test_default_atol_is_documented_value():
    assert ATOL == 1e-5
    report = check_padding_invariance(steps, embed_dim=E, atol=0.0, max_len=7)  # exact up to 7 tokens
    assert report.passed and report.worst_diff == 0.0
    assert check_padding_invariance(steps, embed_dim=E, atol=0.0).passed   # to 16: only rtol's rounding


def test_dropout_in_training_mode_is_refused():
    mha = seeded(lambda: nn.MultiheadAttention(E, 2, dropout=0.5, batch_first=True))  # training mode by default
    with pytest.raises(ValueError, match=r"dropout in training mode.* Call attn.eval\(\)"):
        check_padding_invariance(mha)
    assert check_padding_invariance(mha.eval()).passed


def test_embed_dim_is_read_from_known_modules():
    assert check_no_future_leak(seeded(lambda: nn.MultiheadAttention(4, 2, batch_first=True).eval())).passed
    x = torch.randn(2, 3, 4)
    kpm = torch.zeros(2, 3, dtype=torch.bool)
    layer = seeded(lambda: nn.TransformerEncoderLayer(4, 2, 8, batch_first=False).eval())
    with torch.no_grad():
        expected = layer(x.transpose(0, 1), src_key_padding_mask=kpm).transpose(0, 1)
        torch.testing.assert_close(as_attn(layer)(x, kpm, None), expected)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: check_padding_invariance(42), TypeError, "attn must be callable as attn.*write an adapter"),
        (lambda: check_padding_invariance(steps), ValueError, "embed_dim is required when attn is a plain callable"),
        (lambda: check_padding_invariance(steps, embed_dim=0), ValueError, "embed_dim must be an int >= 1"),
        (lambda: check_padding_invariance(steps, embed_dim=E, trials=0), ValueError, "trials must be an int >= 1"),
        (lambda: check_no_future_leak(steps, embed_dim=E, batch_size=0), ValueError, "batch_size must be an int >= 1"),
        (lambda: check_no_future_leak(steps, embed_dim=E, max_len=1), ValueError, "max_len must be an int >= 2"),
        (lambda: check_no_future_leak(steps, embed_dim=E, atol=-1), ValueError, "atol must be a finite number >= 0"),
        (lambda: check_no_future_leak(steps, embed_dim=E, seed=1.5), TypeError, "seed must be an int"),
        (lambda: check_no_future_leak(lambda x, k, a: (x, None), embed_dim=E), TypeError,
         r"attn must return one tensor \(N, L, ...\), got tuple"),
        (lambda: check_no_future_leak(lambda x, k, a: x[0], embed_dim=E), ValueError,
         r"attn must return \(N, L, ...\)"),
    ],
)
def test_bad_input_is_named(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_an_outlier_feature_does_not_hide_a_leak_in_the_others():
    """One feature 1e4 times larger than the rest (as in real LLMs) used to set the scale of the whole vector."""
    def leaky_with_outlier(x, kpm, am):
        out = x + 5e-3 * torch.tanh(x.masked_fill(~kpm[..., None], 0).sum(1, keepdim=True))   # pads leak <= 5e-3
        return torch.cat([out, torch.full_like(out[..., :1], 1e4)], -1)
    report = check_padding_invariance(leaky_with_outlier, embed_dim=E)
    assert not report.passed and "changed item" in report.first_failure
    def correct_with_outlier(x, kpm, am):
        return torch.cat([x, torch.full_like(x[..., :1], 1e4)], -1)
    assert check_padding_invariance(correct_with_outlier, embed_dim=E).passed
