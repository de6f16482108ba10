"""Hypothesis properties of attention_steps over random batches, lengths, heads and masks."""

import torch
from hypothesis import given
from hypothesis import strategies as st

from helpers import attention_steps, causal_mask, key_padding_mask


@st.composite
def padded_batch(draw):
    """(q, k, v, key_padding_mask, lengths) with 1-3 items, 1-3 heads, up to 7 positions, >= 1 real key each."""
    N = draw(st.integers(1, 3))
    H = draw(st.integers(1, 3))
    S = draw(st.integers(1, 7))
    E = draw(st.integers(1, 6))
    lengths = draw(st.lists(st.integers(1, S), min_size=N, max_size=N))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    q, k, v = (torch.randn(N, H, S, E, generator=g) * 3 for _ in range(3))
    return q, k, v, key_padding_mask(lengths, S), lengths


@given(padded_batch(), st.sampled_from([-1e9, "-inf", "min"]), st.booleans())
def test_masked_keys_get_exactly_zero_and_rows_sum_to_one(batch, fill, causal):
    q, k, v, kpm, _ = batch
    attn_mask = causal_mask(q.shape[-2]) if causal else None
    w = attention_steps(q, k, v, key_padding_mask=kpm, attn_mask=attn_mask, fill=fill).weights
    hidden = kpm[:, None, None, :].expand_as(w)
    if causal:
        hidden = hidden | attn_mask
    assert (w[hidden] == 0).all()
    # rows with at least one visible key are distributions (with causal + padding, key 0 is always visible)
    torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]), atol=1e-5, rtol=0)


@given(padded_batch(), st.integers(0, 2**31 - 1))
def test_padding_invariance(batch, seed):
    """Real-token outputs are the same whatever sits in the padding, and the same as the sequence alone."""
    q, k, v, kpm, lengths = batch
    out = attention_steps(q, k, v, key_padding_mask=kpm).output
    g = torch.Generator().manual_seed(seed)
    junk = kpm[:, None, :, None]
    k2 = torch.where(junk, torch.randn(k.shape, generator=g) * 100, k)
    v2 = torch.where(junk, torch.randn(v.shape, generator=g) * 100, v)
    out2 = attention_steps(q, k2, v2, key_padding_mask=kpm).output
    for i, n in enumerate(lengths):
        assert torch.equal(out[i, :, :n], out2[i, :, :n])  # exactly: masked weights are exactly 0
        alone = attention_steps(q[i, :, :n], k[i, :, :n], v[i, :, :n]).output
        torch.testing.assert_close(out[i, :, :n], alone, atol=1e-5, rtol=1e-5)


@given(padded_batch(), st.data())
def test_causality_later_tokens_never_change_earlier_outputs(batch, data):
    q, k, v, _, _ = batch
    S = q.shape[-2]
    t = data.draw(st.integers(0, S - 1), label="edited position")
    mask = causal_mask(S)
    out = attention_steps(q, k, v, attn_mask=mask).output
    k2, v2 = k.clone(), v.clone()
    k2[..., t, :] += 50.0
    v2[..., t, :] -= 50.0
    out2 = attention_steps(q, k2, v2, attn_mask=mask).output
    assert torch.equal(out[..., :t, :], out2[..., :t, :])


@given(padded_batch(), st.booleans(), st.integers(0, 2**31 - 1))
def test_equals_sdpa_on_random_masks(batch, causal, seed):
    q, k, v, kpm, _ = batch
    S = q.shape[-2]
    g = torch.Generator().manual_seed(seed)
    attn_mask = torch.rand(S, S, generator=g) < 0.3 if not causal else causal_mask(S)
    attn_mask[:, 0] = False  # keep key 0 visible in every row: no fully masked rows
    kpm[:, 0] = False
    steps = attention_steps(q, k, v, key_padding_mask=kpm, attn_mask=attn_mask)
    allowed = ~(kpm[:, None, None, :] | attn_mask)
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    torch.testing.assert_close(steps.output, expected, atol=1e-5, rtol=1e-5)
    assert (steps.weights[~allowed.expand_as(steps.weights)] == 0).all()


@given(st.integers(1, 3), st.sampled_from([1, 2, 4]), st.integers(1, 6), st.integers(0, 2**31 - 1))
def test_equals_multihead_attention_on_random_inputs(N, H, S, seed):
    from tests.test_attention import mha_by_hand

    torch.manual_seed(seed)
    mha = torch.nn.MultiheadAttention(8, H, batch_first=True).eval()
    x = torch.randn(N, S, 8)
    lengths = torch.randint(1, S + 1, (N,)).tolist()
    kpm = key_padding_mask(lengths, S)
    with torch.no_grad():
        out, w = mha(x, x, x, key_padding_mask=kpm, attn_mask=causal_mask(S), average_attn_weights=False)
        out2, w2 = mha_by_hand(mha, x, kpm, causal_mask(S))
    torch.testing.assert_close(out2, out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(w2, w, atol=1e-5, rtol=1e-5)
