"""Bad input to masks, attention and checks: a clear error that names the argument, never a silent wrong result."""

import math
import re

import numpy as np
import pytest
import torch
from torch import nn

from helpers import (
    attention_steps,
    check_no_future_leak,
    check_padding_invariance,
    fill_value,
    from_hf_attention_mask,
    key_padding_mask,
    to_additive_mask,
)

E = 4
q, k, v = torch.randn(2, 3, E), torch.randn(2, 5, E), torch.randn(2, 5, 6)
MASK = torch.tensor([False, True])


def identity(x, key_padding_mask, attn_mask):
    return x


# --- fill: a masked score must end up below every real score ---

@pytest.mark.parametrize("fill", [0, 0.0, 1e9, math.inf])
@pytest.mark.parametrize("call", [
    lambda fill: fill_value(fill, torch.float32),
    lambda fill: to_additive_mask(MASK, fill=fill),
    lambda fill: attention_steps(q, k, v, fill=fill),
])
def test_fill_of_zero_or_above_is_refused(call, fill):
    with pytest.raises(ValueError, match=r"fill must be negative .*got " + repr(fill).replace(".", r"\.")):
        call(fill)


def test_negative_fills_still_work():
    assert fill_value(-math.inf, torch.float32) == -math.inf
    assert to_additive_mask(MASK, fill=-1.0).tolist() == [0.0, -1.0]


# --- attention_steps ---

def test_attention_steps_refuses_zero_features():
    with pytest.raises(ValueError, match=r"q and k must have at least one feature \(E >= 1.*got q \(2, 3, 0\)"):
        attention_steps(torch.randn(2, 3, 0), torch.randn(2, 5, 0), v)


def test_attention_steps_refuses_zero_keys():
    with pytest.raises(ValueError, match=r"k and v must hold at least one key \(S >= 1.*got k \(2, 0, 4\)"):
        attention_steps(q, torch.randn(2, 0, E), torch.randn(2, 0, 6))


@pytest.mark.parametrize(("dtypes", "named"), [
    ((torch.float32, torch.float64, torch.float32), "k torch.float64"),
    ((torch.float16, torch.float32, torch.float32), "q torch.float16"),
    ((torch.float32, torch.float32, torch.bfloat16), "v torch.bfloat16"),
])
def test_attention_steps_refuses_mixed_dtypes_by_name(dtypes, named):
    with pytest.raises(TypeError, match=f"q, k and v must have the same dtype, got .*{named}"):
        attention_steps(q.to(dtypes[0]), k.to(dtypes[1]), v.to(dtypes[2]))


# --- from_hf_attention_mask ---

@pytest.mark.parametrize("shape", [(5,), (2, 1, 1, 5), (2, 1, 5)])
def test_from_hf_attention_mask_wants_n_by_s(shape):
    with pytest.raises(ValueError, match=rf"attention_mask must have shape \(N, S\), got {re.escape(str(shape))}"):
        from_hf_attention_mask(torch.ones(shape, dtype=torch.long))


def test_from_hf_attention_mask_wants_zeros_and_ones():
    with pytest.raises(ValueError, match=r"only 0 \(pad\) and 1 \(keep: a real token\), got values \[-1, 1\]"):
        from_hf_attention_mask(torch.tensor([[1, -1]]))


def test_from_hf_attention_mask_refuses_bool_and_names_the_polarity():
    with pytest.raises(TypeError, match=r"Hugging Face: 1 = real token, 0 = pad.*probably already a padding mask"):
        from_hf_attention_mask(torch.tensor([[True, False]]))


# --- fill_value's dtype ---

@pytest.mark.parametrize(("dtype", "message"), [
    ("float32", r"dtype must be a torch.dtype such as torch.float32, got str 'float32'"),
    (None, r"dtype must be a torch.dtype such as torch.float32, got NoneType None"),
    (np.float16, r"dtype must be a torch.dtype, got the numpy dtype float16: use torch.float16"),
    (np.dtype("float32"), r"dtype must be a torch.dtype, got the numpy dtype float32: use torch.float32"),
])
def test_fill_value_dtype_must_be_a_torch_dtype(dtype, message):
    with pytest.raises(TypeError, match=message):
        fill_value("min", dtype)
    with pytest.raises(TypeError, match=message):
        to_additive_mask(MASK, dtype)


# --- key_padding_mask ---

def test_key_padding_mask_takes_numpy_and_0d_tensor_integers():
    expected = key_padding_mask([2, 1], max_len=3)
    assert torch.equal(key_padding_mask([np.int64(2), torch.tensor(1)], max_len=np.int32(3)), expected)
    assert torch.equal(key_padding_mask(np.array([2, 1]), max_len=torch.tensor(3)), expected)


def test_key_padding_mask_blames_lengths_when_max_len_was_not_given():
    with pytest.raises(ValueError, match=r"lengths must hold at least one length > 0 when max_len is not given"):
        key_padding_mask([0, 0])
    assert key_padding_mask([0, 0], max_len=2).all()     # with max_len, empty sequences are fine


@pytest.mark.parametrize(("call", "message"), [
    (lambda: key_padding_mask([True, 2]), r"lengths must be a list of ints, got \[True, 2\]"),
    (lambda: key_padding_mask([torch.tensor(True)]), r"lengths must be a list of ints"),
    (lambda: key_padding_mask("12"), r"lengths must be a list of ints, got str"),
    (lambda: key_padding_mask([2], max_len=3.0), r"max_len must be an int, got float 3.0"),
    (lambda: key_padding_mask([2], max_len=True), r"max_len must be an int, got the bool True"),
])
def test_key_padding_mask_names_the_wrong_argument(call, message):
    with pytest.raises(TypeError, match=message):
        call()


# --- checks ---

@pytest.mark.parametrize("name", ["causal", "pooled", "nonfinite_junk", "raise_on_fail"])
@pytest.mark.parametrize("value", ["no", 1, None])
def test_flags_of_the_checks_must_be_bool(name, value):
    with pytest.raises(TypeError, match=f"{name} must be a bool \\(True or False\\), got "):
        check_padding_invariance(identity, embed_dim=E, **{name: value})


def test_padding_side_and_rtol_are_checked():
    with pytest.raises(ValueError, match=r"padding_side must be one of \['right', 'left', 'both'\], got 'top'"):
        check_no_future_leak(identity, embed_dim=E, padding_side="top")
    with pytest.raises(ValueError, match=r"rtol must be a finite number >= 0, got -1"):
        check_padding_invariance(identity, embed_dim=E, rtol=-1)


@pytest.mark.parametrize("seed", [2**64, -2**63 - 1, 10**30])
def test_a_seed_beyond_64_bits_is_refused_by_name(seed):
    with pytest.raises(ValueError, match=r"seed must fit in 64 bits \(-2\*\*63 <= seed < 2\*\*64\), got "):
        check_no_future_leak(identity, embed_dim=E, seed=seed)


def test_64_bit_seeds_are_fine():
    assert check_no_future_leak(identity, embed_dim=E, seed=2**64 - 1, trials=2).passed
    assert check_no_future_leak(identity, embed_dim=E, seed=-2**63, trials=2).passed


@pytest.mark.parametrize("attn", [42, "mha", None])
def test_a_module_that_is_not_callable_is_pointed_to_the_adapter_pattern(attn):
    with pytest.raises(TypeError, match=r"attn must be callable .*write an adapter attn\(x, key_padding_mask, "
                                        r"attn_mask\) -> output"):
        check_padding_invariance(attn, embed_dim=E)


@pytest.mark.parametrize("make", [
    lambda: nn.Transformer(E, 2, 1, 1, 8, batch_first=True),
    lambda: nn.TransformerDecoderLayer(E, 2, 8, batch_first=True),
    lambda: nn.TransformerDecoder(nn.TransformerDecoderLayer(E, 2, 8, batch_first=True), 1),
])
def test_encoder_decoder_modules_are_pointed_to_the_adapter_pattern(make):
    module = make().eval()
    name = type(module).__name__
    for check in (check_padding_invariance, check_no_future_leak):
        with pytest.raises(TypeError, match=rf"attn is an nn.{name}, which needs a target and a memory .*"
                                            r"write an adapter .*tgt_key_padding_mask=kpm"):
            check(module, embed_dim=E)



# --- the third edition's classes: silently wrong, errors on valid input, misleading verdicts, unclear errors ---

@pytest.mark.parametrize(("mask", "error", "match"), [
    (torch.tensor([[1, 2, 0]]), ValueError, r"only 0 \(pad\) and 1 \(keep: a real token\), got values \[0, 1, 2\]"),
    (torch.tensor([[1, -1]]), ValueError, "only 0 .pad. and 1"),
    (torch.tensor([[1.0, 0.0]]), TypeError, r"attention_mask must hold integers 0/1 \(1 = real token\)"),
    (torch.tensor([[math.nan]]), TypeError, "must hold integers 0/1"),
    (torch.tensor([[True, False]]), TypeError, r"got a bool tensor: .*already a padding mask.*\(~mask\).long\(\)"),
    (torch.tensor(1), ValueError, "must have a length dimension"),
    ([[1, 1, 0]], TypeError, r"attention_mask must be a torch.Tensor, got list \(torch.tensor"),
])
def test_positions_from_mask_refuses_what_is_not_a_keep_mask(mask, error, match):
    from helpers.masks import positions_from_mask

    with pytest.raises(error, match=match):
        positions_from_mask(mask)


def test_position_ids_of_the_checks_want_a_bool_padding_mask():
    from helpers.checks import position_ids

    assert position_ids(torch.tensor([[True, False, False]])).tolist() == [[0, 0, 1]]
    with pytest.raises(TypeError, match=r"key_padding_mask must be a bool tensor \(True = masked\), got dtype "):
        position_ids(torch.tensor([[1, 0, 0]]))    # bitwise ~ on integers would give -2, -1, -1: silently wrong


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_a_fill_that_underflows_is_refused(dtype):
    with pytest.raises(ValueError, match=r"fill=-1e-50 underflows in torch\.float.*masked scores would keep"):
        fill_value(-1e-50, dtype)
    with pytest.raises(ValueError, match="underflows"):
        attention_steps(q, k, v, key_padding_mask=torch.zeros(2, 5, dtype=torch.bool), fill=-1e-50)


def test_numpy_numbers_are_accepted_alike():
    from helpers import causal_mask

    assert fill_value(np.float32(-1e4), torch.float32) == fill_value(np.float64(-1e4), torch.float32) == -1e4
    assert torch.equal(causal_mask(np.int64(3)), causal_mask(3))
    assert check_padding_invariance(identity, embed_dim=np.int64(E), trials=np.int64(2)).passed
    with pytest.raises(TypeError, match="fill must be 'min', '-inf' or a number, got np.True_|fill must be"):
        fill_value(np.bool_(True), torch.float32)


def test_an_adapter_that_adds_positions_in_place_is_not_called_random():
    pos = torch.randn(16, E)

    def adds_in_place(x, key_padding_mask, attn_mask, position_ids):
        x += pos[position_ids]          # changes the x it was given
        return x
    assert check_padding_invariance(adds_in_place, embed_dim=E).passed


def test_positional_only_position_ids_are_passed_by_position():
    def positional(x, key_padding_mask, attn_mask, position_ids, /):
        return x + position_ids[..., None]
    assert check_padding_invariance(positional, embed_dim=E).passed


def test_an_adapter_with_kwargs_gets_a_hint_when_it_fails():
    pos = torch.randn(16, E)

    def kwargs_only(x, key_padding_mask, attn_mask, **kwargs):   # expects position_ids, never gets them
        return (x + pos[kwargs.get("position_ids", torch.arange(x.shape[1]).expand(x.shape[:2]))]).cumsum(1)
    report = check_padding_invariance(kwargs_only, embed_dim=E, padding_side="left")
    assert not report.passed and "takes **kwargs but no parameter named position_ids" in report.first_failure


def test_to_additive_mask_builds_on_the_masks_device():
    assert to_additive_mask(torch.zeros(2, 3, dtype=torch.bool, device="meta")).device.type == "meta"


@pytest.mark.parametrize(("out", "error", "match"), [
    (lambda x: torch.complex(x, x), TypeError, r"attn returned a complex tensor .*view_as_real"),
    (lambda x: x.to("meta"), ValueError, r"attn returned a tensor on meta, but x is on cpu"),
])
def test_outputs_the_checks_cannot_compare_are_refused(out, error, match):
    with pytest.raises(error, match=match):
        check_padding_invariance(lambda x, kpm, am: out(x), embed_dim=E)


def test_float8_and_lists_are_refused_by_name():
    with pytest.raises(TypeError, match=r"q must be a float16, bfloat16, float32 or float64 tensor, got dtype "
                                        r"torch.float8_e4m3fn"):
        attention_steps(q.to(torch.float8_e4m3fn), k, v)
    with pytest.raises(TypeError, match=r"k must be a torch.Tensor, got list \(torch.tensor\(...\) makes one"):
        attention_steps(q, k.tolist(), v)
    with pytest.raises(ValueError, match="q, k and v must be on one device"):
        attention_steps(q, k.to("meta"), v)


@pytest.mark.parametrize("shape", [(5,), None, 3])
def test_combined_mask_wants_a_scores_shape(shape):
    from helpers.attention import combined_mask

    with pytest.raises(ValueError, match=r"scores_shape must be the scores' shape \(..., L, S\)"):
        combined_mask(shape, MASK)


def test_a_module_class_and_mha_with_kdim_are_refused_by_name():
    with pytest.raises(TypeError, match=r"attn is the class nn.MultiheadAttention, not a module: pass an instance"):
        check_padding_invariance(nn.MultiheadAttention, embed_dim=E)
    with pytest.raises(ValueError, match=r"kdim=3, vdim=3 != embed_dim=4: the checks feed one x"):
        check_padding_invariance(nn.MultiheadAttention(E, 2, kdim=3, vdim=3, batch_first=True).eval())


def test_instance_names_the_argument_and_the_expected_kind():
    from helpers import arguments

    mha = torch.nn.MultiheadAttention(4, 1)
    assert arguments.instance(mha, "mha", torch.nn.MultiheadAttention, "an nn.MultiheadAttention") is mha
    with pytest.raises(TypeError, match="^mha must be an nn.MultiheadAttention, got Linear$"):
        arguments.instance(torch.nn.Linear(2, 2), "mha", torch.nn.MultiheadAttention, "an nn.MultiheadAttention")


def test_attention_steps_names_a_mask_on_another_device():
    with pytest.raises(ValueError, match=r"key_padding_mask must be on q's device cpu, got meta: pass "
                                         r"key_padding_mask.to\(q.device\)"):
        attention_steps(q, k, v, key_padding_mask=torch.zeros(2, 5, dtype=torch.bool, device="meta"))
    with pytest.raises(ValueError, match="attn_mask must be on q's device cpu, got meta"):
        attention_steps(q, k, v, attn_mask=torch.zeros(3, 5, dtype=torch.bool, device="meta"))
