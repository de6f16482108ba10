"""helpers.checks.infer_mask and check_mask_pattern: the mask a module really applies, found by experiment.

They catch what the padding checks cannot see (a mask that hides too much, a lost window) and pass correct
modules, Hugging Face models from tiny configs among them.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from helpers import causal_mask, check_no_future_leak, check_padding_invariance
from helpers.chapters.ch10_packing_and_the_cost_of_padding import document_mask, document_mod, pack, sliding_window_mod
from helpers.checks import MaskCheckError, check_mask_pattern, expected_mask, infer_mask, receptive_field

E, L = 8, 8


def window_mask(width: int, n: int = L) -> torch.Tensor:
    """Bool (n, n), True = blocked: causal, and at most width - 1 steps back."""
    behind = torch.arange(n)[:, None] - torch.arange(n)[None, :]
    return (behind < 0) | (behind >= width)


@pytest.fixture
def mha() -> nn.MultiheadAttention:
    torch.manual_seed(0)
    return nn.MultiheadAttention(E, 2, batch_first=True).eval()


class Sdpa(nn.Module):
    """Projections, then F.scaled_dot_product_attention with a fixed bool mask (True = may attend) and the
    padding mask."""

    def __init__(self, may_attend: torch.Tensor):
        super().__init__()
        torch.manual_seed(0)
        self.qkv, self.may_attend = nn.Linear(E, 3 * E), may_attend

    def forward(self, x, key_padding_mask, attn_mask):
        q, k, v = self.qkv(x).chunk(3, -1)
        n = x.shape[1]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.may_attend[:n, :n] & ~key_padding_mask[:, None])


def test_infer_mask_recovers_what_mha_is_given(mha):
    inferred = infer_mask(mha, L)
    assert inferred.dtype == torch.bool and inferred.shape == (L, L) and not inferred.any()   # sees everything
    assert torch.equal(infer_mask(mha, L, attn_mask=causal_mask(L)), causal_mask(L))
    assert torch.equal(infer_mask(mha, L, attn_mask=window_mask(3)), window_mask(3))


def test_a_correct_module_passes_and_a_missing_causal_mask_leaks(mha):
    assert check_mask_pattern(mha, "bidirectional").passed
    assert check_mask_pattern(mha, "causal", attn_mask=causal_mask(L)).passed
    report = check_mask_pattern(mha, "causal")   # length 16 by default: every one of its 120 future pairs leaks
    assert report.check == "mask pattern (causal, length 16)"
    assert not report.passed and len(report.leaks) == 16 * 15 // 2 and not report.over_masked
    assert "120 leak(s)" in str(report) and ", ... (112 more)" in str(report)
    assert (0, 1) in report.leaks and "leak(s), depends where it must not (query, key): (0, 1)" in str(report)
    with pytest.raises(MaskCheckError, match="mask pattern"):
        check_mask_pattern(mha, "causal", raise_on_fail=True)


def test_a_token_that_cannot_see_itself_is_over_masking():
    """SDPA with ~triu(diagonal=0): strictly earlier keys only. The padding checks pass it; this one does not."""
    strict = Sdpa(~torch.ones(16, 16, dtype=torch.bool).triu(0))   # up to the checks' 16 tokens
    assert check_no_future_leak(strict, embed_dim=E).passed
    assert check_padding_invariance(strict, embed_dim=E, causal=True).passed
    report = check_mask_pattern(strict, "causal", embed_dim=E, length=L)
    assert not report.passed and not report.leaks
    # query 0 sees no key (SDPA gives 0) and query 1 only key 0 (weight 1): neither moves with its own input.
    # Later queries do, through the query itself (infer_mask's limits), so those diagonals look allowed.
    assert report.over_masked == ((0, 0), (1, 1)), report
    assert check_mask_pattern(Sdpa(~causal_mask(16)), "causal", embed_dim=E, length=L).passed


def test_an_off_by_one_window_is_caught_both_ways(mha):
    assert check_mask_pattern(mha, "sliding_window", window=3, attn_mask=window_mask(3)).passed
    wider = check_mask_pattern(mha, "sliding_window", window=3, attn_mask=window_mask(4))
    assert not wider.passed and wider.leaks == tuple((i, i - 3) for i in range(3, L)) and not wider.over_masked
    narrower = check_mask_pattern(mha, "sliding_window", window=4, attn_mask=window_mask(3))
    assert not narrower.passed and narrower.over_masked == tuple((i, i - 3) for i in range(3, L))
    assert check_mask_pattern(mha, sliding_window_mod(3), attn_mask=window_mask(3)).passed   # a mask_mod


def test_layers_compare_with_the_receptive_field():
    torch.manual_seed(0)
    stack = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, 2, 16, batch_first=True), 2,
                                  enable_nested_tensor=False).eval()
    assert check_mask_pattern(stack, "sliding_window", window=3, layers=2, attn_mask=window_mask(3)).passed
    one = check_mask_pattern(stack, "sliding_window", window=3, attn_mask=window_mask(3))
    assert not one.passed and set(one.leaks) == {(i, j) for i in range(L) for j in range(L) if i - j in (3, 4)}
    field = receptive_field(window_mask(3), 2)
    assert torch.equal(field, window_mask(5)), "two layers with a window of 3 see 5 keys back"
    assert torch.equal(receptive_field(causal_mask(L), 4), causal_mask(L))


def test_documents_leaking_in_a_packed_row(mha):
    row = pack([3, 2, 3])
    T = row.document.numel()
    leaky = check_mask_pattern(mha, document_mask(row.document), length=T, attn_mask=causal_mask(T))
    assert not leaky.passed and (3, 0) in leaky.leaks and not leaky.over_masked
    mask = document_mask(row.document)
    assert check_mask_pattern(mha, mask, length=T, attn_mask=mask).passed
    assert check_mask_pattern(mha, document_mod(row.document), length=T, attn_mask=mask).passed


def test_hugging_face_bert_as_decoder_is_not_bidirectional():
    """BertModel(is_decoder=True) used as an encoder builds a causal mask: padding checks pass, this one fails."""
    transformers = pytest.importorskip("transformers")

    def bert(is_decoder: bool):
        torch.manual_seed(0)
        config = transformers.BertConfig(vocab_size=10, hidden_size=E, num_hidden_layers=1, num_attention_heads=2,
                                         intermediate_size=16, max_position_embeddings=16, is_decoder=is_decoder)
        model = transformers.BertModel(config).eval()
        return lambda x, kpm, am: model(inputs_embeds=x, attention_mask=(~kpm).long()).last_hidden_state

    decoder = bert(is_decoder=True)
    assert check_padding_invariance(decoder, embed_dim=E, padding_side="right").passed
    report = check_mask_pattern(decoder, "bidirectional", embed_dim=E, length=L)
    assert not report.passed and set(report.over_masked) == {(i, j) for i in range(L) for j in range(i + 1, L)}
    assert check_mask_pattern(bert(is_decoder=False), "bidirectional", embed_dim=E).passed   # length 16


def test_hugging_face_mistral_loses_its_window_with_a_hand_made_4d_mask():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.MistralConfig(vocab_size=10, hidden_size=E, intermediate_size=16, num_hidden_layers=1,
                                        num_attention_heads=2, num_key_value_heads=1, head_dim=4, sliding_window=3,
                                        max_position_embeddings=32)
    model = transformers.MistralModel(config).eval()

    def two_d(x, kpm, am, position_ids):
        return model(inputs_embeds=x, attention_mask=(~kpm).long(), position_ids=position_ids).last_hidden_state

    def four_d(x, kpm, am, position_ids):   # causal and padding by hand, as SDPA takes it (True = may attend)
        may = ~(kpm[:, None, None, :] | causal_mask(x.shape[1]))
        return model(inputs_embeds=x, attention_mask=may, position_ids=position_ids).last_hidden_state

    assert check_mask_pattern(two_d, "sliding_window", window=3, embed_dim=E).passed   # length 16
    lost = check_mask_pattern(four_d, "sliding_window", window=3, embed_dim=E, length=L)
    assert not lost.passed and set(lost.leaks) == {(i, j) for i in range(L) for j in range(i - 2)}
    assert check_mask_pattern(four_d, "causal", embed_dim=E).passed   # the 4-D mask is applied exactly as given


def test_gpt2_and_chapter_9s_tiny_lm_are_causal():
    transformers = pytest.importorskip("transformers")
    from helpers.chapters.ch09_batched_generation import TinyLM

    torch.manual_seed(0)
    gpt2 = transformers.GPT2Model(transformers.GPT2Config(vocab_size=10, n_positions=16, n_embd=E, n_layer=2,
                                                          n_head=2)).eval()
    assert check_mask_pattern(lambda x, kpm, am: gpt2(inputs_embeds=x).last_hidden_state, "causal",
                              embed_dim=E).passed
    torch.manual_seed(0)
    lm = TinyLM(d_model=16, n_layers=2).eval()
    assert check_mask_pattern(lambda x, kpm, am: lm.hidden(x)[0], "causal", embed_dim=16).passed


def test_nonfinite_outputs_are_reported(mha):
    def dead_first_row(x, kpm, am):
        out = mha(x, x, x, need_weights=False)[0].clone()
        out[:, 0] = float("nan")
        return out
    report = check_mask_pattern(dead_first_row, "bidirectional", embed_dim=E)
    assert not report.passed and report.nonfinite == (0,) and "NaN or inf at positions [0]" in str(report)
    assert not any(q == 0 for q, _ in report.over_masked), "a NaN row is reported as NaN, not as over-masking"


def test_expected_mask_names_and_polarity():
    assert torch.equal(expected_mask("causal", 4), causal_mask(4))
    assert not expected_mask("bidirectional", 3).any()
    assert torch.equal(expected_mask("sliding_window", 5, window=2), window_mask(2, 5))
    assert torch.equal(expected_mask(sliding_window_mod(2), 5), window_mask(2, 5))   # mask_mod: True = allowed


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda m: infer_mask(m, 1), ValueError, "length must be an int >= 2"),
    (lambda m: infer_mask(m, 8.0), TypeError, "length must be an int, got float"),
    (lambda m: infer_mask(m, L, attn_mask=causal_mask(16)), ValueError, "for 16 tokens pass length=16"),
    (lambda m: check_mask_pattern(m, "sliding_window", window=8, length=8), ValueError,
     "window=8 must be smaller than length=8: .* pass length=12 or more"),
    (lambda m: check_mask_pattern(m, lambda b, h, q, kv: (q >= kv).int()), TypeError,
     r"a mask_mod must return a bool tensor \(True = allowed\), got dtype torch.int32"),
    (lambda m: receptive_field(causal_mask(L).int(), 2), TypeError, "expected must be a bool tensor"),
    (lambda m: receptive_field(torch.zeros(3, 4, dtype=torch.bool), 2), ValueError, "square"),
    (lambda m: expected_mask("causal", 0), ValueError, "length must be an int >= 1"),
    (lambda m: infer_mask(m, L, attn_mask=causal_mask(L).float()), ValueError, "attn_mask must be None or a bool"),
    (lambda m: infer_mask(m, L, attn_mask=causal_mask(L + 1)), ValueError, r"attn_mask .*\(8, 8\)"),
    (lambda m: check_mask_pattern(m, "diagonal"), ValueError, "expected must be one of"),
    (lambda m: check_mask_pattern(m, "sliding_window"), ValueError, "window must be an int >= 1"),
    (lambda m: check_mask_pattern(m, "sliding_window", window=0), ValueError, r"window \(the keys .*\) must be an int"),
    (lambda m: check_mask_pattern(m, "causal", window=3), ValueError, "window .* goes with expected='sliding_window'"),
    (lambda m: check_mask_pattern(m, causal_mask(L).long()), TypeError, "an expected mask must be a bool tensor"),
    (lambda m: check_mask_pattern(m, lambda b, h, q, kv: 1), TypeError, "a mask_mod must return a bool tensor.*int"),
    (lambda m: check_mask_pattern(m, 3), TypeError, "expected must be a pattern name"),
    (lambda m: check_mask_pattern(m, "causal", layers=0), ValueError, "layers must be an int >= 1"),
    (lambda m: check_mask_pattern(m, "causal", trials=0), ValueError, "trials must be an int >= 1"),
    (lambda m: check_mask_pattern(m, "causal", raise_on_fail=1), TypeError, "raise_on_fail must be a bool"),
])
def test_bad_input_is_refused_by_name(mha, call, error, match):
    with pytest.raises(error, match=match):
        call(mha)


def test_the_report_draws_expected_and_inferred(mha):
    import matplotlib.pyplot as plt

    figure = check_mask_pattern(mha, "causal", length=L).show()
    assert len(figure.axes) == 2 and "28 leak(s)" in figure._suptitle.get_text()
    plt.close(figure)


def test_the_documented_mask_inference_examples_pass():
    import textwrap

    transformers = pytest.importorskip("transformers")
    from helpers import checks

    doc = checks.__doc__
    examples = textwrap.dedent(doc[doc.index("Same adapters:"):doc.index("\nLimits (infer_mask")].split("\n", 1)[1])
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(E, 2, batch_first=True).eval()
    tiny_config = transformers.GPT2Config(vocab_size=10, n_positions=16, n_embd=E, n_layer=1, n_head=2)
    model = transformers.GPT2Model(tiny_config).eval()

    def gpt2(x, key_padding_mask, attn_mask, position_ids):
        return model(inputs_embeds=x, attention_mask=(~key_padding_mask).long(),
                     position_ids=position_ids).last_hidden_state
    reports = []

    def recorded(*args, **kwargs):
        reports.append(check_mask_pattern(*args, **kwargs))
    exec(examples, {"nn": nn, "E": E, "mha": mha, "gpt2": gpt2, "tiny_config": tiny_config,
                    "causal_mask": causal_mask, "expected_mask": expected_mask, "check_mask_pattern": recorded})
    assert len(reports) == 4 and all(r.passed for r in reports), [str(r) for r in reports]


def test_a_module_with_dropout_in_training_mode_is_refused():
    torch.manual_seed(0)
    noisy = nn.MultiheadAttention(E, 2, dropout=0.5, batch_first=True).train()
    with pytest.raises(ValueError, match="dropout in training mode"):
        infer_mask(noisy, L)


def test_numpy_integers_are_accepted(mha):
    import numpy as np

    assert check_mask_pattern(mha, "sliding_window", length=np.int64(8), window=np.int64(3), layers=np.int64(1),
                              trials=np.int64(2), attn_mask=window_mask(3)).passed


def test_an_output_of_one_number_per_position_works():
    torch.manual_seed(0)
    mha, head = nn.MultiheadAttention(E, 2, batch_first=True).eval(), nn.Linear(E, 1)
    scalar = lambda x, kpm, am: head(mha(x, x, x, attn_mask=am)[0]).squeeze(-1)   # noqa: E731  (N, L)
    assert check_mask_pattern(scalar, "causal", embed_dim=E, attn_mask=causal_mask(L)).passed


def test_a_dependence_through_batch_statistics_is_seen(mha):
    """BatchNorm in training mode mixes the batch: every output then depends on every position."""
    bn = nn.BatchNorm1d(E).train()

    def normed(x, kpm, am):
        out = mha(x, x, x, attn_mask=causal_mask(x.shape[1]), need_weights=False)[0]
        return bn(out.transpose(1, 2)).transpose(1, 2)
    report = check_mask_pattern(normed, "causal", embed_dim=E)
    assert not report.passed and (0, L - 1) in report.leaks


def test_a_nan_that_only_new_values_cause_is_reported_as_nan(mha):
    def overflows(x, kpm, am):   # a naive softmax without the max subtraction: large scores overflow
        scores = 30 * x @ x.transpose(1, 2)
        weights = scores.exp().masked_fill(causal_mask(x.shape[1]), 0)
        return (weights / weights.sum(-1, keepdim=True)) @ x
    report = check_mask_pattern(overflows, "causal", embed_dim=E)
    assert report.nonfinite and not report.passed
    assert not {q for q, _ in report.over_masked + report.leaks} & set(report.nonfinite), "NaN rows are not compared"


def test_tiny_outputs_get_a_hint(mha):
    def tiny(x, kpm, am):   # even new values near 1e3 move these outputs by less than atol
        return 1e-11 * mha(x, x, x, attn_mask=am)[0]
    report = check_mask_pattern(tiny, "causal", embed_dim=E, attn_mask=causal_mask(L))
    assert not report.passed and "the outputs are tiny" in str(report) and "pass a smaller atol" in str(report)
    assert check_mask_pattern(tiny, "causal", embed_dim=E, attn_mask=causal_mask(L), atol=1e-16).passed


# --- the fourth edition's fuzz defects ---

def test_a_mask_mod_with_the_wrong_signature_is_named(mha):
    with pytest.raises(TypeError, match=r"a mask_mod takes four arguments, \(b, h, q_idx, kv_idx\)"):
        check_mask_pattern(mha, lambda q, kv: q >= kv)
    with pytest.raises(TypeError, match=r"a mask_mod takes four arguments"):
        expected_mask(lambda b, h, q: q >= 0, 4)


def test_a_mask_mod_that_raises_is_wrapped_with_how_it_was_called(mha):
    def uses_python_if(b, h, q_idx, kv_idx):
        if q_idx >= kv_idx:   # a tensor of many values has no truth value
            return True
        return False
    with pytest.raises(ValueError, match=r"the mask_mod raised RuntimeError when called as mask_mod\(b, h, q_idx, "
                                         r"kv_idx\), with b = h = tensor\(0\), q_idx \(L, 1\) and kv_idx \(1, L\).*"
                                         r"not `and` or `if`") as caught:
        check_mask_pattern(mha, uses_python_if)
    assert isinstance(caught.value.__cause__, RuntimeError)
    with pytest.raises(ValueError, match=r"broadcasts to \(4, 4\).*got shape \(3,\)"):
        expected_mask(lambda b, h, q, kv: torch.ones(3, dtype=torch.bool), 4)


def test_the_length_comes_from_an_expected_mask(mha):
    report = check_mask_pattern(mha, causal_mask(7), attn_mask=causal_mask(7))
    assert report.passed and report.check == "mask pattern (given mask, length 7)"
    assert check_mask_pattern(mha, "causal", attn_mask=causal_mask(5)).check == "mask pattern (causal, length 5)"
    assert check_mask_pattern(mha, "bidirectional").check == "mask pattern (bidirectional, length 16)"
    window = check_mask_pattern(mha, "sliding_window", window=9, layers=2, attn_mask=None)
    assert window.check == "mask pattern (sliding_window 9, length 20, 2 layers)"   # 2 * (9 - 1) + 4
