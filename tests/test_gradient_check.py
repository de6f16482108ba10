"""helpers.checks.check_gradient_padding_invariance: gradients must be finite and not depend on the padding."""

import pytest
import torch
from torch import nn

from helpers import check_gradient_padding_invariance
from helpers.checks import GRAD_RTOL, MaskCheckError


@pytest.fixture(scope="module")
def mha():
    torch.manual_seed(0)
    return nn.MultiheadAttention(8, 2, batch_first=True, dropout=0.0).eval()


def test_masked_mha_passes_both_sides_causal_or_not(mha):
    for causal in (False, True):
        report = check_gradient_padding_invariance(mha, causal=causal)
        assert report.passed, report
        assert report.check == "gradient padding invariance" + (" (causal)" if causal else "")
        assert report.rtol == GRAD_RTOL and str(report).startswith(report.check + ": passed (5 trials")


def test_an_encoder_layer_passes(mha):
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    assert check_gradient_padding_invariance(layer, causal=True, trials=3).passed


def test_a_missing_key_padding_mask_fails_with_a_difference(mha):
    def unmasked(x, kpm, am):
        return mha(x, x, x, attn_mask=am, need_weights=False)[0]
    report = check_gradient_padding_invariance(unmasked, parameters=mha.parameters(), embed_dim=8)
    assert not report.passed and report.worst_diff > 0.01
    assert report.first_failure.startswith("trial 0: lengths [1, 2, 2] padded to 2: new values at the pad positions "
                                           "changed the gradient of parameter 0 (24, 8): it differs by")
    assert "items run alone" not in report.first_failure   # the pads' own comparison comes first: the cause


def test_the_items_run_alone_catch_what_new_pad_values_cannot(mha):
    """A decoder numbering positions 0..L-1 whatever the pads: new pad values change nothing, running alone does."""
    pos = nn.Embedding(16, 8)

    def no_positions(x, kpm, am):
        x = x + pos(torch.arange(x.shape[1]))
        return mha(x, x, x, key_padding_mask=kpm, attn_mask=am, need_weights=False)[0]
    report = check_gradient_padding_invariance(no_positions, parameters=[*mha.parameters(), *pos.parameters()],
                                               embed_dim=8, causal=True, padding_side="left")
    assert not report.passed and "padded vs the items run alone" in report.first_failure
    assert "new values" not in report.first_failure


def test_nan_gradients_from_dead_rows_fail_and_name_the_parameter(mha):
    def weights_too(x, kpm, am):   # need_weights=True: a dead row is NaN, and so are the gradients
        return mha(x, x, x, key_padding_mask=kpm, attn_mask=am, need_weights=True)[0]
    report = check_gradient_padding_invariance(weights_too, parameters=mha.parameters(), embed_dim=8, causal=True)
    assert not report.passed and report.worst_diff != report.worst_diff   # NaN
    assert "left-padded" in report.first_failure and "is NaN" in report.first_failure
    assert check_gradient_padding_invariance(weights_too, parameters=mha.parameters(), embed_dim=8, causal=True,
                                             padding_side="right").passed
    with pytest.raises(MaskCheckError, match="is NaN"):
        check_gradient_padding_invariance(weights_too, parameters=mha.parameters(), embed_dim=8, causal=True,
                                          raise_on_fail=True)


def test_pooled_heads(mha):
    def masked_mean(x, kpm, am):
        h = mha(x, x, x, key_padding_mask=kpm, need_weights=False)[0]
        return h.masked_fill(kpm[..., None], 0).sum(1) / (~kpm).sum(1, keepdim=True)

    def plain_mean(x, kpm, am):
        return mha(x, x, x, key_padding_mask=kpm, need_weights=False)[0].mean(1)
    assert check_gradient_padding_invariance(masked_mean, parameters=mha.parameters(), embed_dim=8,
                                             pooled=True).passed
    report = check_gradient_padding_invariance(plain_mean, parameters=mha.parameters(), embed_dim=8, pooled=True)
    assert not report.passed and report.check == "gradient padding invariance (pooled)"


def test_position_ids_are_passed(mha):
    pos = nn.Embedding(16, 8)

    def decoder(x, key_padding_mask, attn_mask, position_ids):
        x = x + pos(position_ids)
        return mha(x, x, x, key_padding_mask=key_padding_mask, attn_mask=attn_mask, need_weights=False)[0]
    params = [*mha.parameters(), *pos.parameters()]
    assert check_gradient_padding_invariance(decoder, parameters=params, embed_dim=8, causal=True).passed

    def no_positions(x, key_padding_mask, attn_mask):
        x = x + pos(torch.arange(x.shape[1]))
        return mha(x, x, x, key_padding_mask=key_padding_mask, attn_mask=attn_mask, need_weights=False)[0]
    assert not check_gradient_padding_invariance(no_positions, parameters=params, embed_dim=8, causal=True).passed


def test_bad_arguments(mha):
    with pytest.raises(ValueError, match="parameters is required"):
        check_gradient_padding_invariance(lambda x, k, a: x, embed_dim=8)
    with pytest.raises(TypeError, match="got one tensor"):
        check_gradient_padding_invariance(mha, parameters=mha.in_proj_weight)
    with pytest.raises(TypeError, match="iterable of tensors"):
        check_gradient_padding_invariance(mha, parameters=3)
    with pytest.raises(TypeError, match="only tensors"):
        check_gradient_padding_invariance(mha, parameters=[1.0])
    with pytest.raises(ValueError, match="leaf that requires grad"):
        check_gradient_padding_invariance(mha, parameters=[torch.zeros(2)])
    with pytest.raises(ValueError, match="no parameter that requires grad"):
        check_gradient_padding_invariance(nn.MultiheadAttention(8, 2, batch_first=True).requires_grad_(False))
    with pytest.raises(ValueError, match="trials must be an int >= 1"):
        check_gradient_padding_invariance(mha, trials=0)
    with pytest.raises(ValueError, match="padding_side must be one of"):
        check_gradient_padding_invariance(mha, padding_side="top")
    with pytest.raises(TypeError, match="causal must be a bool"):
        check_gradient_padding_invariance(mha, causal=1)
    with pytest.raises(ValueError, match=r"attn must return \(N, L, ...\) = \(5, 16\) \+ ..., got \(5, 8\) in the "
                                         r"determinism guard"):
        check_gradient_padding_invariance(lambda x, k, a: x[:, 0] @ mha.in_proj_weight[:8], parameters=[
            mha.in_proj_weight], embed_dim=8)
