import pytest
import torch

from helpers import (
    causal_mask,
    fill_value,
    from_hf_attention_mask,
    key_padding_mask,
    to_additive_mask,
    to_sdpa_mask,
)


def test_key_padding_mask_marks_pads_true():
    expected = torch.tensor([[False, False, False, True, True], [False] * 5])
    assert torch.equal(key_padding_mask([3, 5]), expected)
    assert torch.equal(key_padding_mask(torch.tensor([3, 5])), expected)
    assert key_padding_mask([2], max_len=4).tolist() == [[False, False, True, True]]


def test_key_padding_mask_matches_data_eq_pad():
    PAD = 1000
    data = torch.tensor([[1, 2, 3, 4, PAD], [5, 6, 7, PAD, PAD], [8, 9, 10, 11, 12]])
    assert torch.equal(key_padding_mask([4, 3, 5]), data == PAD)


def test_causal_mask_is_logical_not_tril():
    m = causal_mask(4)
    assert m.dtype == torch.bool
    assert torch.equal(m, torch.logical_not(torch.tril(torch.ones(4, 4))))
    assert torch.equal(m, torch.ones(4, 4, dtype=torch.bool).triu(1))


def test_causal_mask_equals_pytorch_float_mask():
    float_mask = torch.nn.Transformer.generate_square_subsequent_mask(6)
    assert torch.equal(causal_mask(6), float_mask == float("-inf"))


def test_to_sdpa_mask_flips():
    m = causal_mask(3)
    assert torch.equal(to_sdpa_mask(m), torch.tril(torch.ones(3, 3, dtype=torch.bool)))


def test_from_hf_attention_mask():
    hf = torch.tensor([[1, 1, 1, 0, 0]])
    assert from_hf_attention_mask(hf).tolist() == [[False, False, False, True, True]]
    assert torch.equal(from_hf_attention_mask(hf.to(torch.int32)), from_hf_attention_mask(hf))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_to_additive_mask_fills(dtype):
    m = torch.tensor([False, True])
    default = -1e4 if dtype == torch.float16 else torch.finfo(dtype).min   # float16: room to add scores
    assert to_additive_mask(m, dtype).tolist() == [0.0, default]
    assert to_additive_mask(m, dtype, fill="min").tolist() == [0.0, torch.finfo(dtype).min]
    assert to_additive_mask(m, dtype, fill="-inf").tolist() == [0.0, float("-inf")]
    assert to_additive_mask(m, dtype).dtype == dtype


def test_fill_value_resolves():
    assert fill_value(-1e9, torch.float32) == -1e9
    assert fill_value("min", torch.float16) == -65504.0
    assert fill_value("-inf", torch.bfloat16) == float("-inf")
    assert fill_value(-1e9, torch.bfloat16) == -1e9  # bfloat16 has float32's range


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: key_padding_mask([3, -1]), ValueError, "lengths must be >= 0"),
        (lambda: key_padding_mask([3, 6], max_len=5), ValueError, "lengths must be <= max_len=5"),
        (lambda: key_padding_mask([]), ValueError, "at least one"),
        (lambda: key_padding_mask([2.5]), TypeError, "lengths must be a list of ints"),
        (lambda: key_padding_mask(torch.tensor([2.0])), TypeError, "integer tensor"),
        (lambda: key_padding_mask([2], max_len=0), ValueError, "max_len must be an int >= 1"),
        (lambda: causal_mask(0), ValueError, "size must be an int >= 1"),
        (lambda: causal_mask(2.0), TypeError, "size must be an int, got float 2.0"),
        (lambda: to_sdpa_mask(torch.ones(2, 2)), TypeError, "mask must be a bool tensor"),
        (lambda: to_sdpa_mask([[True]]), TypeError, "mask must be a torch.Tensor"),
        (lambda: from_hf_attention_mask(torch.tensor([[1, 2]])), ValueError, "only 0 .pad. and 1"),
        (lambda: from_hf_attention_mask(torch.tensor([1.0, 0.0])), TypeError, "attention_mask must hold integers"),
        (lambda: to_additive_mask(torch.tensor([0, 1])), TypeError, "mask must be a bool tensor"),
        (lambda: to_additive_mask(torch.tensor([True]), torch.float16, fill=-1e9), ValueError,
         "does not fit in torch.float16"),
        (lambda: to_additive_mask(torch.tensor([True]), fill="max"), TypeError, "fill must be 'min', '-inf'"),
        (lambda: to_additive_mask(torch.tensor([True]), torch.int64), TypeError, "dtype must be float16, bfloat16"),
        (lambda: fill_value(float("nan"), torch.float32), ValueError, "fill must not be NaN"),
    ],
)
def test_bad_input_is_named(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_to_additive_masks_default_fill_leaves_room_in_float16():
    """float16: finfo.min + a score of -50 overflows to -inf, so the default there is -1e4 (finite rows)."""
    from helpers import to_additive_mask

    mask = torch.tensor([[False, True, True]])
    scores = torch.tensor([[-30.0, -50.0, -10.0]])
    for dtype, fill in ((torch.float32, torch.finfo(torch.float32).min), (torch.float16, -1e4)):
        added = scores.to(dtype) + to_additive_mask(mask, dtype)
        assert to_additive_mask(mask, dtype)[0, 1].item() == fill and added.isfinite().all()
        assert torch.softmax(added.float(), -1).tolist() == [[1.0, 0.0, 0.0]]
    overflow = scores.half() + to_additive_mask(mask, torch.float16, fill="min")
    assert overflow[0, 1].isneginf()                              # -65504 - 50 is beyond float16
    dead = torch.ones(1, 3, dtype=torch.bool)                   # no visible key: added, -1e4 hides nothing
    assert torch.equal(torch.softmax(scores.half() + to_additive_mask(dead, torch.float16), -1).argmax(-1),
                       torch.softmax(scores, -1).argmax(-1))


# --- one left-padding primitive ---

def test_key_padding_mask_pads_either_side():
    from helpers.masks import key_padding_mask
    assert key_padding_mask([1, 3], 3, side="left").tolist() == [[True, True, False], [False, False, False]]
    assert key_padding_mask([1, 3], 3).tolist() == [[False, True, True], [False, False, False]]
    with pytest.raises(ValueError, match=r"side must be 'right' \(pads last\) or 'left' \(pads first\), got 'top'"):
        key_padding_mask([1], 2, side="top")


def test_left_pad_moves_each_items_real_tokens_to_the_end_in_order():
    from helpers.masks import key_padding_mask, left_pad
    lengths = [1, 3, 2]
    x = torch.arange(3 * 4 * 2).view(3, 4, 2)
    left = left_pad(x, lengths)
    assert torch.equal(left[~key_padding_mask(lengths, 4, side="left")], x[~key_padding_mask(lengths, 4)])
    assert torch.equal(left_pad(key_padding_mask(lengths, 4), lengths), key_padding_mask(lengths, 4, side="left"))
    assert left_pad(torch.tensor([[5, 6, 0]]), [2]).tolist() == [[0, 5, 6]]
    with pytest.raises(ValueError, match=r"one length per item of batch \(N = 3\), got 2"):
        left_pad(x, [1, 2])
    with pytest.raises(ValueError, match="lengths must be <= max_len=4"):
        left_pad(x, [1, 2, 5])
    with pytest.raises(TypeError, match="batch must be a torch.Tensor"):
        left_pad([[1, 0]], [1])


# --- one definition of a blocked float mask ---

def test_as_blocked_reads_bool_masks_as_they_are_and_float_masks_at_minus_inf_or_at_most_minus_1e4():
    from helpers.masks import BLOCKING, as_blocked
    blocked = torch.tensor([[False, True, True], [False, False, True]])
    assert as_blocked(blocked) is blocked
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):   # every fill of the series
        for fill in ("-inf", "min", -1e4, -1e9):
            if fill == -1e9 and dtype == torch.float16:
                continue                                                          # -1e9 does not fit
            assert torch.equal(as_blocked(to_additive_mask(blocked, dtype, fill)), blocked), (dtype, fill)
        assert torch.equal(as_blocked(to_additive_mask(blocked, dtype)), blocked)   # the default fill, -1e4 in fp16
    assert BLOCKING == -1e4 and as_blocked(torch.tensor([0.0, -1e4, -1e5])).tolist() == [False, True, True]
    assert torch.equal(as_blocked(torch.nn.Transformer.generate_square_subsequent_mask(3)), causal_mask(3))


def test_blocking_at_most_minus_1e4_leaves_a_blocked_key_exactly_0_weight():
    from helpers.masks import BLOCKING
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        scores = torch.tensor([3.0, -3.0, 0.5], dtype=dtype) + torch.tensor([0.0, BLOCKING, 0.0], dtype=dtype)
        assert scores.float().softmax(-1)[1] == 0 and scores.softmax(-1)[1] == 0, dtype


@pytest.mark.parametrize(("mask", "error", "match"), [
    (torch.tensor([0.0, -1.0]), ValueError, r"tgt_mask is a float mask, added to the scores: it must hold only 0 "
                                            r"\(visible\) and -inf or numbers <= -1e4 \(blocked\), got other values "
                                            r"\[-1.0\]"),
    (torch.tensor([0.0, -9999.0]), ValueError, r"got other values \[-9999.0\]"),
    (torch.tensor([0.5, float("nan"), float("inf")]), ValueError, r"got other values \[0.5, inf, nan\]"),
    (torch.tensor([0, 1]), TypeError, r"tgt_mask must be a bool mask \(True = blocked\) or a float mask .*got dtype "
                                      r"torch.int64"),
    ([[0.0]], TypeError, "tgt_mask must be a torch.Tensor"),
])
def test_as_blocked_refuses_a_float_cell_that_is_neither_visible_nor_blocked(mask, error, match):
    from helpers.masks import as_blocked
    with pytest.raises(error, match=match):
        as_blocked(mask, "tgt_mask")


def test_one_validator_for_hugging_face_masks():
    from helpers.masks import hf_attention_mask
    mask = torch.tensor([[1, 1, 0]])
    assert hf_attention_mask(mask) is mask
    with pytest.raises(ValueError, match=r"hf_batch must have shape \(N, S\), got \(3,\)"):
        hf_attention_mask(mask[0], "hf_batch")
    with pytest.raises(TypeError, match="mask_left must hold integers 0/1.*got a bool tensor"):
        hf_attention_mask(mask.bool(), "mask_left")
    with pytest.raises(ValueError, match=r"mask_step must hold only 0 \(pad\) and 1"):
        hf_attention_mask(mask * 2, "mask_step")


def test_to_additive_mask_refuses_float8_by_name():
    with pytest.raises(TypeError, match=r"dtype must be float16, bfloat16, float32 or float64 .*float8_e4m3fn"):
        to_additive_mask(torch.tensor([True]), torch.float8_e4m3fn)


def test_causal_mask_after_cached_keys_is_aligned_bottom_right():
    """causal_mask(n, offset): n queries after `offset` cached keys; query i is position offset + i."""
    for n, offset in [(1, 0), (3, 0), (1, 5), (4, 2), (3, 7)]:
        mask = causal_mask(n, offset)
        keys, queries = torch.arange(offset + n)[None, :], torch.arange(n)[:, None] + offset
        assert mask.shape == (n, offset + n) and torch.equal(mask, keys > queries)
    assert torch.equal(causal_mask(4, 0), causal_mask(4))
    with pytest.raises(ValueError, match="offset"):
        causal_mask(3, -1)
