import math

import pytest
import torch
import torch.nn.functional as F

from helpers import attention_steps, causal_mask, key_padding_mask, to_sdpa_mask
from helpers.attention import combined_mask, sdpa_blocked


def random_qkv(*batch, L=5, S=5, E=4, Ev=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*batch, L, E, generator=g), torch.randn(*batch, S, E, generator=g),
            torch.randn(*batch, S, Ev, generator=g))


def test_steps_are_the_formula():
    q, k, v = random_qkv(2)
    steps = attention_steps(q, k, v)
    scores = q @ k.transpose(-2, -1) / math.sqrt(4)
    assert torch.equal(steps.scores, scores)
    assert torch.equal(steps.masked_scores, scores)
    assert torch.equal(steps.weights, scores.softmax(-1))
    assert torch.equal(steps.output, scores.softmax(-1) @ v)


@pytest.mark.parametrize("fill", [-1e9, "-inf", "min"])
def test_equals_sdpa_with_both_masks(fill):
    q, k, v = random_qkv(3, 2, L=6, S=6)  # (N, H, L, E)
    kpm = key_padding_mask([6, 4, 1])
    steps = attention_steps(q, k, v, key_padding_mask=kpm, attn_mask=causal_mask(6), fill=fill)
    mask = combined_mask(steps.scores.shape, kpm, causal_mask(6))
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=to_sdpa_mask(mask))
    torch.testing.assert_close(steps.output, expected, atol=1e-6, rtol=0)
    assert (steps.weights[mask.expand_as(steps.weights)] == 0).all()


def test_key_padding_mask_shapes():
    q, k, v = random_qkv(2)
    kpm = key_padding_mask([3, 5])
    steps = attention_steps(q, k, v, key_padding_mask=kpm)
    assert steps.weights.shape == (2, 5, 5)
    assert (steps.weights[0, :, 3:] == 0).all()           # pad columns, every row
    assert (steps.weights[0, 3:, :3] > 0).all()           # pad rows still look at real keys
    unbatched = attention_steps(q[0], k[0], v[0], key_padding_mask=kpm[0])
    torch.testing.assert_close(unbatched.weights, steps.weights[0], atol=1e-6, rtol=0)


def test_fully_masked_row_no_safety_net():
    q, k, v = random_qkv(1)
    kpm = torch.ones(1, 5, dtype=torch.bool)
    uniform = attention_steps(q, k, v, key_padding_mask=kpm).weights
    assert torch.equal(uniform, torch.full_like(uniform, 0.2))
    assert attention_steps(q, k, v, key_padding_mask=kpm, fill="-inf").weights.isnan().all()


def mha_by_hand(mha: torch.nn.MultiheadAttention, x, kpm, attn_mask):
    """nn.MultiheadAttention's forward, using its own weights, through attention_steps."""
    N, L, E = x.shape
    H = mha.num_heads
    q, k, v = F.linear(x, mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1)

    def heads(t):
        return t.view(N, L, H, E // H).transpose(1, 2)  # (N, H, L, E/H)

    steps = attention_steps(heads(q), heads(k), heads(v), key_padding_mask=kpm, attn_mask=attn_mask)
    out = mha.out_proj(steps.output.transpose(1, 2).reshape(N, L, E))
    return out, steps.weights


@pytest.mark.parametrize("num_heads", [1, 2, 4])
def test_equals_multihead_attention(num_heads):
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(8, num_heads, batch_first=True).eval()
    x = torch.randn(3, 5, 8)
    kpm = key_padding_mask([5, 3, 2])
    causal = causal_mask(5)
    with torch.no_grad():
        out, w = mha(x, x, x, key_padding_mask=kpm, attn_mask=causal, average_attn_weights=False)
        out2, w2 = mha_by_hand(mha, x, kpm, causal)
    torch.testing.assert_close(out2, out, atol=1e-6, rtol=0)
    torch.testing.assert_close(w2, w, atol=1e-6, rtol=0)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"q": torch.randn(5, 4), "k": torch.randn(5, 3)}, ValueError, "q and k must have the same feature size E"),
        ({"v": torch.randn(4, 3)}, ValueError, "k and v must agree"),
        ({"q": [[1.0]]}, TypeError, "q must be a torch.Tensor"),
        ({"k": torch.ones(5, 4, dtype=torch.long)}, TypeError, "k must be a float16, bfloat16, float32 or float64"),
        ({"q": torch.randn(4)}, ValueError, "q must have shape"),
        ({"key_padding_mask": torch.tensor([1, 1, 1, 0, 0])}, TypeError, "key_padding_mask must be a bool tensor"),
        ({"key_padding_mask": torch.zeros(5, 4, dtype=torch.bool)}, ValueError,
         r"key_padding_mask must have shape \(5,\)"),
        ({"attn_mask": torch.zeros(4, 4, dtype=torch.bool)}, ValueError, r"attn_mask must broadcast to .* \(5, 5\)"),
        ({"attn_mask": torch.zeros(5, 5)}, TypeError, "attn_mask must be a bool tensor"),
        ({"fill": "max"}, TypeError, "fill must be 'min', '-inf' or a number"),
    ],
)
def test_bad_input_is_named(kwargs, error, message):
    q, k, v = random_qkv()
    args = {"q": q, "k": k, "v": v, **kwargs}
    with pytest.raises(error, match=message):
        attention_steps(args.pop("q"), args.pop("k"), args.pop("v"), **args)


def test_batched_key_padding_mask_shape_is_checked():
    q, k, v = random_qkv(2, 3)
    with pytest.raises(ValueError, match=r"key_padding_mask must have shape \(2, 5\)"):
        attention_steps(q, k, v, key_padding_mask=torch.zeros(3, 5, dtype=torch.bool))


def test_fill_that_does_not_fit_the_dtype_is_an_error_not_inf():
    q, k, v = (t.half() for t in random_qkv())
    with pytest.raises(ValueError, match="fill=-1e\\+09 does not fit in torch.float16"):
        attention_steps(q, k, v, attn_mask=causal_mask(5), fill=-1e9)
    assert attention_steps(q, k, v, attn_mask=causal_mask(5), fill="min").weights.isfinite().all()


def test_the_default_fill_is_the_books_where_the_dtype_holds_it():
    q, k, v = random_qkv()
    assert (attention_steps(q, k, v, attn_mask=causal_mask(5)).masked_scores == -1e9).sum() == 10
    half = attention_steps(*(t.half() for t in (q, k, v)), attn_mask=causal_mask(5))    # float16: finfo.min
    assert (half.masked_scores == torch.finfo(torch.float16).min).sum() == 10 and half.weights.isfinite().all()


def test_sdpa_blocked_reads_the_two_deciders():
    may = torch.tensor([True, True, False]).expand(3, 3)
    assert not sdpa_blocked(None, False, 3).any()
    assert torch.equal(sdpa_blocked(None, True, 3), causal_mask(3))
    assert torch.equal(sdpa_blocked(may, True, 3), ~may | causal_mask(3))
    assert torch.equal(sdpa_blocked(None, True, 2, 4), ~torch.ones(2, 4, dtype=torch.bool).tril())
    with pytest.raises(TypeError, match="is_causal"):
        sdpa_blocked(None, 1, 3)
    with pytest.raises(ValueError, match="L"):
        sdpa_blocked(None, True, 0)
    with pytest.raises(ValueError, match="attn_mask"):
        sdpa_blocked(torch.ones(2, 2, dtype=torch.bool), False, 3)
    with pytest.raises(TypeError, match="attn_mask"):
        sdpa_blocked(torch.ones(3, 3, dtype=torch.long), False, 3)
    with pytest.raises(TypeError, match="attn_mask"):
        sdpa_blocked([[True]], False, 1)
