"""helpers.checks.core, the one trial core: the lengths and values the trials try, the tolerance per dtype, the
determinism guard in every check, positional-only adapters, non-finite outputs and seeds of any integer type.
Each blind spot here passed the third edition's checks (lengths 2..7, pad values randn x 10)."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from helpers import attention_steps, causal_mask, to_additive_mask
from helpers.checks import (
    BIG_JUNK,
    MAX_LEN,
    MaskCheckError,
    Tolerance,
    check_gradient_padding_invariance,
    check_mask_pattern,
    check_no_future_leak,
    check_padding_invariance,
    infer_mask,
)
from helpers.checks.core import junk, trial_lengths

E = 8


def steps(x, key_padding_mask, attn_mask):
    return attention_steps(x, x, x, key_padding_mask=key_padding_mask, attn_mask=attn_mask).output


def sdpa_with_fill(fill):
    """F.scaled_dot_product_attention with an additive float mask whose blocked cells hold `fill`."""
    def attn(x, key_padding_mask, attn_mask):
        blocked = key_padding_mask[:, None, :] if attn_mask is None else key_padding_mask[:, None, :] | attn_mask
        return F.scaled_dot_product_attention(x, x, x, attn_mask=to_additive_mask(blocked, fill=fill))
    return attn


# --- lengths: 2 up to 16, shortest first ---

def test_trials_grow_from_2_to_max_len_so_the_first_failure_is_the_shortest():
    g = torch.Generator().manual_seed(0)
    sizes = [trial_lengths(g, t, 20, 3, MAX_LEN)[0] for t in range(20)]
    assert MAX_LEN == 16 and sizes[0] == 2 and sizes[-1] == 16 and sizes == sorted(sizes)
    assert set(range(2, 17)) <= set(sizes)
    assert [trial_lengths(g, t, 5, 3, 16)[0] for t in range(5)] == [2, 6, 9, 12, 16]   # the gradient check's
    for t in range(20):
        S, lengths = trial_lengths(g, t, 20, 3, 16)
        assert 1 <= lengths[0] < S and all(1 <= n <= S for n in lengths)


def leaks_from(length):
    """Correct attention, except that from `length` tokens on the pads leak into every real output."""
    def attn(x, key_padding_mask, attn_mask):
        out = steps(x, key_padding_mask, attn_mask)
        if x.shape[1] >= length:
            out = out + 0.1 * x.masked_fill(~key_padding_mask[..., None], 0).sum(1, keepdim=True)
        return out
    return attn


def future_from(length):
    """Causal attention, except that from `length` tokens on the last position leaks into every earlier one."""
    def attn(x, key_padding_mask, attn_mask):
        out = steps(x, key_padding_mask, attn_mask)
        return out + 0.1 * x[:, -1:] if x.shape[1] >= length else out
    return attn


def test_a_leak_that_starts_at_8_tokens_is_caught():
    for check, make in ((check_padding_invariance, leaks_from), (check_no_future_leak, future_from)):
        assert check(make(99), embed_dim=E).passed
        assert not check(make(8), embed_dim=E).passed, check.__name__
        assert not check(make(16), embed_dim=E).passed, check.__name__
        assert check(make(8), embed_dim=E, max_len=7).passed   # the third edition's lengths: 2..7
        report = check(make(8), embed_dim=E)
        assert "padded to 8:" in report.first_failure, report   # the shortest failing length, named first


def test_the_report_keeps_the_lengths_it_tried():
    assert check_padding_invariance(steps, embed_dim=E).lengths == (2, 16)
    assert check_no_future_leak(steps, embed_dim=E, max_len=9).lengths == (2, 9)


# --- new values: normal ones and values near 1e3 ---

def test_the_new_values_mix_normal_and_large_magnitudes():
    values = junk(torch.Generator().manual_seed(0), (3, 16, E))
    size = values.abs().amax(-1)   # (N, L): each position is one or the other
    assert ((size < 60) | (size > 60)).all() and (size < 60).any() and (size > 200).any()
    assert BIG_JUNK == 1e3 and float(values.abs().max()) < 6e3
    assert junk(torch.Generator().manual_seed(0), (3, 16, E), torch.float16).abs().max() < 200   # no fp16 overflow


def test_a_leak_that_needs_large_pad_values_is_caught():
    def leaks_large_values(x, key_padding_mask, attn_mask):
        out = steps(x, key_padding_mask, attn_mask)
        pads = x.masked_fill(~key_padding_mask[..., None], 0).abs()
        return out + torch.relu(pads - 100).sum(1, keepdim=True)   # nothing below |100|
    report = check_padding_invariance(leaks_large_values, embed_dim=E)
    assert not report.passed and "new values at the pad positions changed" in report.first_failure


def test_a_weak_finite_fill_leaks_visibly():
    """A large pad key raises its own score past the fill: the third edition passed fills of -20 and below."""
    for fill in (-8, -20, -30, -100):
        assert not check_padding_invariance(sdpa_with_fill(fill), embed_dim=E).passed, fill
        assert not check_no_future_leak(sdpa_with_fill(fill), embed_dim=E).passed, fill


def test_a_fill_of_minus_30_through_multihead_attention_leaks_visibly_into_the_past():
    """nn.MultiheadAttention given the masks as one additive float attn_mask of -30: the third edition's future
    check passed it (its new values, randn x 10, never raised a future key's score past 30)."""
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(E, 2, batch_first=True).eval()

    def additive(x, key_padding_mask, attn_mask):
        blocked = key_padding_mask[:, None, :].expand(-1, x.shape[1], -1)
        blocked = blocked if attn_mask is None else blocked | attn_mask
        scores_added = torch.zeros(blocked.shape).masked_fill(blocked, -30.0).repeat_interleave(2, 0)  # (N*H, L, S)
        return mha(x, x, x, attn_mask=scores_added, need_weights=False)[0]
    assert not check_no_future_leak(additive, embed_dim=E).passed
    assert not check_padding_invariance(additive, embed_dim=E).passed


def test_real_fills_pass_with_large_pad_values():
    for fill in (-1e9, "min", "-inf"):
        assert check_padding_invariance(sdpa_with_fill(fill), embed_dim=E, causal=True).passed, fill
        assert check_no_future_leak(sdpa_with_fill(fill), embed_dim=E).passed, fill


def test_mask_inference_lists_every_pair_a_weak_fill_leaks():
    """A fill of -12 on the future: the third edition found 15 of its 28 pairs; +v and -v at each key find all."""
    def causal_fill(x, key_padding_mask, attn_mask):
        return F.scaled_dot_product_attention(x, x, x, attn_mask=to_additive_mask(causal_mask(x.shape[1]),
                                                                                   fill=-12.0))
    report = check_mask_pattern(causal_fill, "causal", length=8, embed_dim=E)
    assert len(report.leaks) == 28 and "28 leak(s)" in str(report) and "... (20 more)" in str(report)
    assert not infer_mask(causal_fill, 8, embed_dim=E).any()


# --- non-finite outputs ---

def test_inf_everywhere_fails_every_check():
    def inf(x, key_padding_mask, attn_mask):
        return torch.full_like(x, math.inf)
    for report in (check_padding_invariance(inf, embed_dim=E), check_no_future_leak(inf, embed_dim=E)):
        assert not report.passed and math.isnan(report.worst_diff)
        assert "attn returned inf at item 0's real position 0" in report.first_failure

    def minus_inf_everywhere(x, key_padding_mask, attn_mask):
        return torch.full_like(x, -math.inf)
    assert not check_padding_invariance(minus_inf_everywhere, embed_dim=E).passed   # no finite feature at all


# --- the determinism guard, in every check ---

def test_dropout_in_training_mode_is_refused_by_the_gradient_check_too():
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(E, 2, dropout=0.1, batch_first=True)   # training mode: new modules train
    for check in (check_padding_invariance, check_no_future_leak, check_gradient_padding_invariance):
        with pytest.raises(ValueError, match=r"dropout in training mode.* Call attn.eval\(\)"):
            check(mha)
    with pytest.raises(ValueError, match="dropout in training mode"):
        check_mask_pattern(mha, "bidirectional")
    assert check_gradient_padding_invariance(mha.eval()).passed   # eval mode still has gradients


def test_hugging_face_llama_with_attention_dropout_is_refused_in_training_mode():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=10, hidden_size=E, intermediate_size=16, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=1, head_dim=4,
                                      max_position_embeddings=32, attention_dropout=0.1)
    model = transformers.LlamaModel(config).train()

    def llama(x, key_padding_mask, attn_mask, position_ids):
        return model(inputs_embeds=x, attention_mask=(~key_padding_mask).long(),
                     position_ids=position_ids).last_hidden_state
    with pytest.raises(ValueError, match="dropout in training mode"):
        check_gradient_padding_invariance(llama, parameters=model.parameters(), embed_dim=E)
    model.eval()
    assert check_gradient_padding_invariance(llama, parameters=model.parameters(), embed_dim=E).passed


# --- positional-only adapters ---

class PositionalOnly(nn.Module):
    def __init__(self):
        super().__init__()
        self.pos = nn.Embedding(MAX_LEN, E)
        self.attn = nn.MultiheadAttention(E, 2, batch_first=True)

    def forward(self, x, key_padding_mask, attn_mask, position_ids, /):
        h = x + self.pos(position_ids)
        return self.attn(h, h, h, key_padding_mask=key_padding_mask, attn_mask=attn_mask, need_weights=False)[0]


def test_a_positional_only_module_gets_its_position_ids_in_every_check():
    torch.manual_seed(0)
    module = PositionalOnly().eval()
    assert check_padding_invariance(module, embed_dim=E, causal=True).passed
    assert check_no_future_leak(module, embed_dim=E).passed
    assert check_gradient_padding_invariance(module, embed_dim=E, causal=True).passed
    assert check_mask_pattern(module, "causal", embed_dim=E, attn_mask=causal_mask(8)).passed


class ShortConv(nn.Module):
    """A causal depthwise convolution (kernel 3) with no attention mask to take: forward(x, key_padding_mask)."""

    def __init__(self, masked=True):
        super().__init__()
        self.conv, self.masked = nn.Conv1d(E, E, 3, groups=E, padding=2), masked

    def forward(self, x, key_padding_mask):
        if self.masked:
            x = x.masked_fill(key_padding_mask[..., None], 0.0)
        return self.conv(x.transpose(1, 2))[..., :x.shape[1]].transpose(1, 2)


def test_a_module_without_an_attn_mask_is_called_with_x_and_key_padding_mask_only():
    torch.manual_seed(0)
    masked, unmasked = ShortConv().eval(), ShortConv(masked=False).eval()
    assert check_padding_invariance(masked, embed_dim=E, causal=True).passed
    assert check_no_future_leak(masked, embed_dim=E).passed
    assert check_gradient_padding_invariance(masked, embed_dim=E, causal=True).passed
    assert check_mask_pattern(masked, "sliding_window", window=3, embed_dim=E).passed
    report = check_padding_invariance(unmasked, embed_dim=E)      # left pads reach the first real tokens
    assert not report.passed and "left-padded" in report.first_failure
    assert check_padding_invariance(unmasked, embed_dim=E, padding_side="right").passed
    positions = []

    def with_positions(x, key_padding_mask, position_ids):       # position_ids still come by keyword
        positions.append(position_ids)
        return masked(x, key_padding_mask)
    assert check_padding_invariance(with_positions, embed_dim=E).passed and positions


# --- the tolerance follows the dtype ---

def low_precision(dtype, masked=True):
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(E, 2, batch_first=True).to(dtype)

    def attn(x, key_padding_mask, attn_mask):
        x = x.to(dtype)
        return mha(x, x, x, key_padding_mask=key_padding_mask if masked else None, attn_mask=attn_mask,
                   need_weights=False)[0]
    return attn, list(mha.parameters())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_correct_low_precision_modules_pass_and_broken_ones_fail(dtype):
    attn, params = low_precision(dtype)
    name = str(dtype).removeprefix("torch.")
    for report in (check_padding_invariance(attn, embed_dim=E),
                   check_padding_invariance(attn, embed_dim=E, causal=True), check_no_future_leak(attn, embed_dim=E),
                   check_gradient_padding_invariance(attn, parameters=params, embed_dim=E),
                   check_gradient_padding_invariance(attn, parameters=params, embed_dim=E, causal=True)):
        assert report.passed, report
        assert f"trials, {name}: atol=" in str(report)   # the tolerance is printed with its dtype
    assert check_mask_pattern(attn, "causal", embed_dim=E, attn_mask=causal_mask(8)).passed
    broken, params = low_precision(dtype, masked=False)
    assert not check_padding_invariance(broken, embed_dim=E).passed
    assert not check_gradient_padding_invariance(broken, parameters=params, embed_dim=E).passed


def test_a_failure_within_rounding_of_the_dtype_says_so():
    attn, params = low_precision(torch.bfloat16)
    report = check_padding_invariance(attn, embed_dim=E, atol=0, rtol=1e-3)
    assert not report.passed and "may be rounding, not a mask bug" in report.first_failure
    assert "bfloat16 (eps 0.0078)" in report.first_failure
    gradients = check_gradient_padding_invariance(attn, parameters=params, embed_dim=E, atol=0, rtol=1e-3)
    assert not gradients.passed and "padded vs the items run alone" in gradients.first_failure
    assert "new values changed nothing; only the items run alone differ" in gradients.first_failure
    bf16 = Tolerance.default(torch.bfloat16, None, None, grad=True)   # larger than rounding, in a gradient
    assert "the pads' values never moved a gradient" in bf16.rounding_hint(0.9, grad=True)
    assert bf16.rounding_hint(0.9, grad=False) is None
    float32 = Tolerance.default(torch.float32, None, None)
    assert float32.rounding_hint(1e-6, grad=False).endswith("pass a larger atol and rtol")   # not "in float32"
    broken, params = low_precision(torch.bfloat16, masked=False)
    for real_bug in (check_padding_invariance(broken, embed_dim=E),
                     check_gradient_padding_invariance(broken, parameters=params, embed_dim=E)):
        assert "rounding" not in real_bug.first_failure and "new values at the pad positions changed" in \
            real_bug.first_failure


def test_the_dtype_defaults():
    assert str(Tolerance.default(torch.float32, None, None)) == "atol=1e-05"
    assert str(Tolerance.default(torch.float64, None, None, grad=True)) == "atol=1e-05, rtol=0.0001"
    assert str(Tolerance.default(torch.bfloat16, None, None)) == \
        "bfloat16: atol=0.02, rtol=0.02 alone, atol=1e-05 at the same shapes"
    assert str(Tolerance.default(torch.float16, None, None, grad=True)) == \
        "float16: atol=0.01, rtol=0.01 alone, atol=1e-05, rtol=0.0001 at the same shapes"
    assert str(Tolerance.default(torch.bfloat16, 1e-3, None)) == \
        "bfloat16: atol=0.001, rtol=0.02 alone, atol=0.001 at the same shapes"   # a given atol holds for both
    assert str(Tolerance.default(torch.bfloat16, 1e-3, 1e-3)) == "bfloat16: atol=0.001, rtol=0.001"


# --- seeds of any integer type ---

@pytest.mark.parametrize("seed", [np.int64(1), np.uint8(1), torch.tensor(1), 1])
def test_seeds_of_any_integer_type(seed):
    reference = check_padding_invariance(leaks_from(2), embed_dim=E, seed=1, trials=3)
    assert check_padding_invariance(leaks_from(2), embed_dim=E, seed=seed, trials=3) == reference
    assert check_no_future_leak(steps, embed_dim=E, seed=seed, trials=2).passed
    mha = nn.MultiheadAttention(E, 2, batch_first=True).eval()
    assert check_gradient_padding_invariance(mha, seed=seed, trials=2).passed
    assert infer_mask(mha, 4, seed=seed, trials=1).shape == (4, 4)
    assert check_mask_pattern(mha, "bidirectional", seed=seed, length=4, trials=1).passed


@pytest.mark.parametrize("seed", [1.0, True, torch.tensor([1]), "1"])
def test_a_seed_that_is_not_an_integer_is_refused_by_name(seed):
    with pytest.raises(TypeError, match="seed must be an int"):
        check_padding_invariance(steps, embed_dim=E, seed=seed)


def test_raise_on_fail_raises_the_report():
    with pytest.raises(MaskCheckError, match="padding invariance: FAILED"):
        check_padding_invariance(leaks_from(2), embed_dim=E, raise_on_fail=True)


# --- found by an independent review of the fourth edition ---

def test_small_dropout_is_refused_too():
    """The guard runs a whole (5, 16, E) batch: dropout of 2 % drops something there (and is named in a module)."""
    for seed in range(5):
        torch.manual_seed(seed)
        mha = nn.MultiheadAttention(E, 2, dropout=0.02, batch_first=True)
        with pytest.raises(ValueError, match=r"attn has dropout in training mode \(MultiheadAttention: p=0.02\)"):
            check_padding_invariance(mha)

        def hidden_dropout(x, key_padding_mask, attn_mask):   # a plain function: only its outputs can tell
            out = steps(x, key_padding_mask, attn_mask)
            return F.dropout(out, p=0.02, training=True)
        for check in (check_padding_invariance, check_no_future_leak):
            with pytest.raises(ValueError, match="attn gave two different outputs for the same input"):
                check(hidden_dropout, embed_dim=E, seed=seed)
        with pytest.raises(ValueError, match="attn gave two different outputs"):
            infer_mask(hidden_dropout, 4, embed_dim=E, seed=seed)


def test_a_real_leak_at_the_same_shapes_never_gets_the_rounding_hint():
    def weak_future_fill(x, key_padding_mask, attn_mask):   # bfloat16 attention with a fill of -12 in place
        q = k = v = x.bfloat16()
        scores = (q @ k.transpose(1, 2)) / E ** 0.5
        scores = scores.masked_fill(attn_mask, -12.0) if attn_mask is not None else scores
        return torch.softmax(scores, -1) @ v
    report = check_no_future_leak(weak_future_fill, embed_dim=E)
    assert not report.passed and "rounding" not in report.first_failure
    assert "bfloat16: atol=0.02, rtol=0.02 alone, atol=1e-05 at the same shapes" in str(report)


def test_low_precision_modules_through_the_automatic_adapters_and_hugging_face_patterns():
    torch.manual_seed(0)
    for dtype in (torch.bfloat16, torch.float16):
        mha = nn.MultiheadAttention(E, 2, batch_first=True).to(dtype).eval()
        assert check_padding_invariance(mha).passed          # x is cast to the module's dtype
        assert check_no_future_leak(nn.TransformerEncoderLayer(E, 2, 16, batch_first=True).to(dtype).eval()).passed
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(vocab_size=10, hidden_size=E, intermediate_size=16, num_hidden_layers=2,
                                      num_attention_heads=2, num_key_value_heads=1, head_dim=4,
                                      max_position_embeddings=32)
    llama = transformers.LlamaModel(config).to(torch.bfloat16).eval()

    def hf(x, key_padding_mask, attn_mask, position_ids):
        return llama(inputs_embeds=x.bfloat16(), attention_mask=(~key_padding_mask).long(),
                     position_ids=position_ids).last_hidden_state
    assert check_mask_pattern(hf, "causal", embed_dim=E).passed   # every run at the same shapes: exact

    def drops_attention_mask(x, key_padding_mask, attn_mask, position_ids):
        return llama(inputs_embeds=x.bfloat16(), position_ids=position_ids).last_hidden_state
    assert not check_padding_invariance(drops_attention_mask, embed_dim=E).passed   # seen at the same shapes


def test_dtype_names_what_an_adapter_hides():
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(E, 2, batch_first=True).bfloat16().eval()

    def returns_float32(x, key_padding_mask, attn_mask):
        x = x.bfloat16()
        return mha(x, x, x, key_padding_mask=key_padding_mask, attn_mask=attn_mask, need_weights=False)[0].float()
    assert check_padding_invariance(returns_float32, embed_dim=E, dtype=torch.bfloat16).passed
    with pytest.raises(TypeError, match="dtype must be torch.float16, torch.bfloat16"):
        check_padding_invariance(returns_float32, embed_dim=E, dtype=torch.int8)


def test_the_gradient_check_fails_an_output_that_is_nan_at_a_real_position():
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(E, 2, batch_first=True)

    def nan_at_the_first_token(x, key_padding_mask, attn_mask):
        out = mha(x, x, x, key_padding_mask=key_padding_mask, attn_mask=attn_mask, need_weights=False)[0].clone()
        out[:, 0, 0] = math.nan
        return out
    report = check_gradient_padding_invariance(nan_at_the_first_token, parameters=mha.parameters(), embed_dim=E)
    assert not report.passed and "attn returned NaN at item 0's real position 0" in report.first_failure


def test_mask_inference_takes_a_banned_logit_as_an_equal_output():
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(E, 2, batch_first=True).eval()

    def banned(x, key_padding_mask, attn_mask):
        out = mha(x, x, x, attn_mask=attn_mask, need_weights=False)[0]
        return torch.cat([out, torch.full_like(out[..., :1], -math.inf)], -1)
    assert check_mask_pattern(banned, "causal", attn_mask=causal_mask(6), embed_dim=E).passed
