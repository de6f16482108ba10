"""Chapter 6's explorer (helpers.chapters.ch06_mask_conventions): a mask convention passed to an API, and what
the API computes."""

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from helpers.chapters import ch06_mask_conventions as ch06
from helpers.chapters.ch06_mask_conventions import (
    APIS,
    CONVENTIONS,
    TOKENS,
    api_weights,
    convert_mask,
    express,
    intended,
    mask_convention_explorer,
    mask_convention_view,
)
from helpers.exercises import Mistake
from helpers.language import speaking
from helpers.masks import causal_mask, from_hf_attention_mask, to_sdpa_mask
from tests.chapters import accepts_every_form, refuses_the_wrong_kind

MHA, SDPA, MANUAL = APIS
MHA_BOOL, SDPA_BOOL, HF_INT, HF_FLOAT, ADDITIVE = CONVENTIONS


def test_intended_mask_is_causal_plus_pad_keys():
    assert torch.equal(intended("none"), causal_mask(5))
    right = intended("right")
    assert right[:, 3:].all() and torch.equal(right[:, :3], causal_mask(5)[:, :3])
    assert intended("left").all(-1).tolist() == [True, True, False, False, False]


@pytest.mark.parametrize("padding", list(TOKENS))
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("convention", [c for c in CONVENTIONS if c != HF_FLOAT])
def test_converted_masks_give_the_reference_weights(convention, api, padding):
    """With conversion every convention gives the weights of a plain masked_fill(-inf) on the intended mask."""
    blocked = intended(padding)
    reference = api_weights(blocked, MANUAL)
    weights = api_weights(convert_mask(express(blocked, convention), convention, api), api)
    live = ~blocked.all(-1)
    torch.testing.assert_close(weights[live], reference[live], atol=1e-6, rtol=0)
    assert (weights[blocked & live[:, None]] == 0).all()


@pytest.mark.parametrize("padding", list(TOKENS))
def test_fully_masked_rows_nan_or_zero_by_api(padding):
    blocked = intended(padding)
    dead = blocked.all(-1)
    assert dead.any() == (padding == "left")
    assert api_weights(blocked, MHA)[dead].isnan().all()                    # need_weights=True: NaN
    assert (api_weights(~blocked, SDPA)[dead] == 0).all()                   # SDPA: 0
    assert api_weights(blocked, MANUAL)[dead].isnan().all()                 # 0/0


def test_default_is_the_classic_bug():
    view = mask_convention_view()
    summary = view.summary
    assert summary.startswith(f"{MHA_BOOL} -> {SDPA}, right padding: LEAKS the future (up to 0.85)")
    assert "reads pad keys (up to 0.95)" in summary
    (panel,) = view.panels
    assert panel.framed.sum() == 13  # every hatched cell of the 5x5 carries weight: 3 future cells + 2 pad columns of 5
    assert "WRONG" in panel.title.en and "誤り" in panel.title.ja and panel.alert


@pytest.mark.parametrize(
    ("convention", "api", "convert", "padding", "expected"),
    [
        (SDPA_BOOL, SDPA, False, "right", "correct: weight only on allowed keys"),
        (MHA_BOOL, MHA, False, "left", "correct: weight only on allowed keys; 2 rows with no visible key -> NaN"),
        (MHA_BOOL, SDPA, True, "left", "correct: weight only on allowed keys; 2 rows with no visible key -> 0"),
        (SDPA_BOOL, MHA, False, "none",
         "LEAKS the future (up to 1.00); hides allowed keys; 1 NaN row (no visible key as the API read the mask)"),
        (HF_FLOAT, MHA, False, "right", "LEAKS the future (up to 0.18); reads pad keys (up to 0.24)"),
        (ADDITIVE, SDPA, False, "left", "correct: weight only on allowed keys; 2 rows with no visible key -> 0"),
    ],
)
def test_summaries(convention, api, convert, padding, expected):
    view = mask_convention_view(convention, api, convert, padding)
    assert view.summary.endswith(f"{padding} padding: {expected}")
    nan_label = "NaN rows are the lesson" in view.panels[0].title.en
    assert nan_label == ("NaN" in expected)


@pytest.mark.parametrize(
    ("convention", "api", "convert", "message"),
    [
        (HF_INT, MHA, False, "nn.MultiheadAttention rejects a int64 mask: only bool and floating types"),
        (HF_INT, SDPA, False, "F.scaled_dot_product_attention rejects a int64 mask"),
        (ADDITIVE, MANUAL, False, "rejects a float32 mask: masked_fill_ only supports boolean masks"),
        (HF_FLOAT, SDPA, True, "a float 0/1 mask is ambiguous"),
    ],
)
def test_impossible_combinations_raise_value_error(convention, api, convert, message):
    with pytest.raises(ValueError, match=message):
        mask_convention_view(convention, api, convert, "right")


def test_every_combination_draws_or_explains():
    for convention, api, convert, padding in itertools.product(CONVENTIONS, APIS, [False, True], TOKENS):
        try:
            summary = mask_convention_view(convention, api, convert, padding).summary
        except ValueError as error:
            assert "rejects" in str(error) or "ambiguous" in str(error)
            continue
        assert summary.startswith(f"{convention} -> {api}")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: mask_convention_view("bool"), "convention must be one of"),
        (lambda: mask_convention_view(api="torch.matmul"), "api must be one of"),
        (lambda: mask_convention_view(padding="middle"), "padding must be one of"),
        (lambda: express(causal_mask(5), "bool"), "convention must be one of"),
        (lambda: convert_mask(causal_mask(5), "bool", SDPA), "convention must be one of"),
    ],
)
def test_bad_input_is_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_explorer_updates_and_shows_refusals():
    box = mask_convention_explorer()
    convention, api, convert, padding = (box.controls[name] for name in ("convention", "api", "convert", "padding"))
    summary = box.summary
    assert "LEAKS the future" in summary.value
    convert.value = True
    assert "correct: weight only on allowed keys" in summary.value
    padding.value = "left"
    assert summary.value.endswith("2 rows with no visible key -&gt; 0")   # SDPA, html-escaped
    api.value = MHA
    assert summary.value.endswith("2 rows with no visible key -&gt; NaN")
    convert.value, convention.value = False, HF_INT
    assert summary.value.startswith("<b>Not possible:</b> nn.MultiheadAttention rejects a int64 mask")


# --- the exercise checks ---

HF_BATCH = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])         # exercise 1's batch, 1 = keep


def test_check_1_accepts_the_mask_and_names_each_mistake():
    blocked = from_hf_attention_mask(HF_BATCH)[:, None, :] | causal_mask(4)        # (N, L, S), True = blocked
    ch06.check_1.solution(to_sdpa_mask(blocked)[:, None], HF_BATCH)
    keep_pads = to_sdpa_mask(from_hf_attention_mask(HF_BATCH))[:, None, None, :]   # (N, 1, 1, S), may attend
    wrong = {
        "bool tensor": to_sdpa_mask(blocked)[:, None].long(),
        "size-1 head dimension": to_sdpa_mask(blocked),
        "MHA's polarity": blocked[:, None],
        "combine with &": keep_pads | to_sdpa_mask(causal_mask(4)),
        "causal part is missing": keep_pads.expand(2, 1, 4, 4),
        "padding part is missing": to_sdpa_mask(causal_mask(4)).expand(2, 1, 4, 4),
        "must not see": to_sdpa_mask(blocked)[:, None].clone().index_fill(3, torch.tensor([3]), True),
        "cannot see a key it may": to_sdpa_mask(blocked)[:, None] & ~torch.eye(4, dtype=torch.bool),
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch06.check_1(answer, HF_BATCH)
    with pytest.raises(TypeError, match="hf_batch must hold integers 0/1"):   # helpers.masks.hf_attention_mask
        ch06.check_1(to_sdpa_mask(blocked)[:, None], HF_BATCH.float())


def hf_style_attention(hidden_states, attention_mask, is_causal=False):
    """The notebook's module: Hugging Face-style attention_mask (N, S), 1 = keep; causality as a flag."""
    keep = attention_mask[:, None, :].bool()
    if is_causal:
        L = hidden_states.shape[1]
        keep = keep & torch.ones(L, L, dtype=torch.bool).tril()
    return F.scaled_dot_product_attention(hidden_states, hidden_states, hidden_states, attn_mask=keep)


def test_check_2_accepts_the_adapter_and_names_each_mistake():
    ch06.check_2.solution(lambda x, kpm, am: hf_style_attention(x, (~kpm).long(), is_causal=am is not None), 8)
    wrong = {
        "in Hugging Face's polarity": lambda x, kpm, am: hf_style_attention(x, kpm.long(), is_causal=am is not None),
        "turn attn_mask into the flag": lambda x, kpm, am: hf_style_attention(x, (~kpm).long()),
        "padding mask is still needed": lambda x, kpm, am: hf_style_attention(  # drops the pads when causal
            x, (~kpm).long() if am is None else torch.ones_like(kpm).long(), is_causal=am is not None),
        "is_causal only when attn_mask is given": lambda x, kpm, am: hf_style_attention(x, (~kpm).long(), True),
        "could not run your adapter": lambda x, kpm, am: hf_style_attention(x, ~kpm, am is not None)[0],
        # the mask itself as the flag: `if is_causal:` on a tensor raises torch's "Boolean value of Tensor ..."
        "^your adapter used a tensor where a bool is needed: is_causal is a flag": lambda x, kpm, am: (
            hf_style_attention(x, (~kpm).long(), is_causal=am)),
        "should be a function": hf_style_attention(torch.zeros(1, 2, 8), torch.ones(1, 2)),
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch06.check_2(answer, 8)


# --- the Japanese edition ---

def test_the_japanese_edition_reads_japanese_summaries_and_refusals():
    with speaking("ja"):
        summary = mask_convention_view().summary
        assert summary.startswith(f"MHA の bool（True = 遮断） → {SDPA}、パディング：右。未来が漏れている（最大 0.85）")
        assert "パッドのキーを読んでいる（最大 0.95）。許されたキーを隠している" in summary
        assert mask_convention_view(MHA_BOOL, SDPA, True, "left").summary.endswith(
            "（変換あり）、パディング：左。正しい：重みは許されたキーにだけある。見えるキーのない行が 2 行 → 0")
        assert mask_convention_view(SDPA_BOOL, MHA, False, "none").summary.endswith(
            "NaN の行が 1 行（API が読んだマスクでは見えるキーがない）")
        with pytest.raises(ValueError, match="float の 0/1 マスクは曖昧"):
            mask_convention_view(HF_FLOAT, SDPA, True, "right")
        with pytest.raises(ValueError, match="^nn.MultiheadAttention は int64 のマスクを受け付けない：.*bool"):
            mask_convention_view(HF_INT, MHA, False, "right")     # torch's own words stay English
        box = mask_convention_explorer()
        box.controls["convention"].value = HF_INT
        assert box.summary.value.startswith("<b>この組み合わせは不可：</b>F.scaled_dot_product_attention は int64")
    assert mask_convention_view().summary.startswith(f"{MHA_BOOL} -> {SDPA}, right padding: LEAKS the future")


def test_the_japanese_edition_hears_japanese_hints():
    blocked = from_hf_attention_mask(HF_BATCH)[:, None, :] | causal_mask(4)
    keep_pads = to_sdpa_mask(from_hf_attention_mask(HF_BATCH))[:, None, None, :]
    wrong_1 = {
        "bool テンソル": to_sdpa_mask(blocked)[:, None].long(),
        r"ヘッドの次元は大きさ 1 になるはずである。書いた答えの形状は \(2, 4, 4\) になっている$": to_sdpa_mask(blocked),
        "MHA の極性": blocked[:, None],
        "& で結合する": keep_pads | to_sdpa_mask(causal_mask(4)),
        "因果の部分が抜けている": keep_pads.expand(2, 1, 4, 4),
        "パディングの部分が抜けている": to_sdpa_mask(causal_mask(4)).expand(2, 1, 4, 4),
        "参照してはならないキー": to_sdpa_mask(blocked)[:, None].clone().index_fill(3, torch.tensor([3]), True),
        "見られないクエリがある": to_sdpa_mask(blocked)[:, None] & ~torch.eye(4, dtype=torch.bool),
    }
    wrong_2 = {
        "Hugging Face の極性（1 = 残す）":
            lambda x, kpm, am: hf_style_attention(x, kpm.long(), is_causal=am is not None),
        "フラグ is_causal に置き換える": lambda x, kpm, am: hf_style_attention(x, (~kpm).long()),
        "パディングマスクは必要": lambda x, kpm, am: hf_style_attention(
            x, (~kpm).long() if am is None else torch.ones_like(kpm).long(), is_causal=am is not None),
        "is_causal にするのは attn_mask があるときだけ": lambda x, kpm, am: hf_style_attention(x, (~kpm).long(), True),
        "^検査が、書いたアダプタを実行できなかった（":
            lambda x, kpm, am: hf_style_attention(x, ~kpm, am is not None)[0],
        "^書いたアダプタは、bool が必要なところでテンソルを使っている。is_causal は True か False のフラグ":
            lambda x, kpm, am: hf_style_attention(x, (~kpm).long(), is_causal=am),
        "answer_2 は、.* を返す関数にすること": 3,
    }
    with speaking("ja"):
        for hint, answer in wrong_1.items():
            with pytest.raises(Mistake, match=hint):
                ch06.check_1(answer, HF_BATCH)
        for hint, answer in wrong_2.items():
            with pytest.raises(Mistake, match=hint):
                ch06.check_2(answer, 8)


# --- #32: every form of a right answer is accepted; a wrong kind is named in the hint ---

def test_the_checks_accept_every_form_of_the_answer_and_name_a_wrong_kind():
    right = to_sdpa_mask(from_hf_attention_mask(HF_BATCH)[:, None, :] | causal_mask(4))[:, None]
    accepts_every_form(ch06.check_1, right, HF_BATCH)       # a numpy bool array was told "should be a bool tensor"
    refuses_the_wrong_kind(ch06.check_1, right.int(), "a torch.int32 tensor of shape (2, 1, 4, 4)",
                           "torch.int32 のテンソル（形状 (2, 1, 4, 4)）", HF_BATCH)
    refuses_the_wrong_kind(ch06.check_1, right.numpy().astype(np.float64),
                           "a numpy float64 array of shape (2, 1, 4, 4)",
                           "numpy の float64 配列（形状 (2, 1, 4, 4)）", HF_BATCH)
