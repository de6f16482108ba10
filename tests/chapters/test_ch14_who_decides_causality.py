"""Chapter 14: the deciders, the bug modules, the explorer and the exercise checks
(helpers/chapters/ch14_who_decides_causality.py)."""

import pytest
import torch
from transformers import masking_utils
from transformers.integrations import sdpa_attention

from helpers import diagnose
from helpers.chapters import ch14_who_decides_causality as ch14
from helpers.checks import check_mask_pattern, infer_mask
from helpers.exercises import Mistake
from tests.chapters import japanese_hint

torch.set_num_threads(1)


# --- SDPA and transformers, measured ---

def test_sdpa_blocked_reads_the_two_deciders():
    may = torch.tensor([True, True, False]).expand(3, 3)
    assert not ch14.sdpa_blocked(None, False, 3).any()
    assert torch.equal(ch14.sdpa_blocked(None, True, 3), ch14.causal(3))
    assert torch.equal(ch14.sdpa_blocked(may, True, 3), ~may | ch14.causal(3))
    assert torch.equal(ch14.sdpa_blocked(None, True, 2, 4), ~torch.ones(2, 4, dtype=torch.bool).tril())
    with pytest.raises(TypeError, match="is_causal"):
        ch14.sdpa_blocked(None, 1, 3)
    with pytest.raises(ValueError, match="L"):
        ch14.sdpa_blocked(None, True, 0)


def test_source_lines_name_file_and_line():
    lines = ch14.source_lines(sdpa_attention.sdpa_attention_forward, 'getattr(module, "is_causal", True)')
    assert len(lines) == 1 and lines[0].startswith("transformers/integrations/sdpa_attention.py:")
    unwrapped = ch14.source_lines(masking_utils.create_causal_mask, 'if not getattr(config, "is_causal", True)')
    assert unwrapped[0].startswith("transformers/masking_utils.py:")        # past the deprecate_kwarg decorator
    with pytest.raises(ValueError, match="none of"):
        ch14.source_lines(sdpa_attention.sdpa_attention_forward, "no such line anywhere")
    with pytest.raises(ValueError, match="needles"):
        ch14.source_lines(sdpa_attention.sdpa_attention_forward)
    with pytest.raises(TypeError, match="function"):
        ch14.source_lines("sdpa", "x")


def test_kernel_calls_records_and_restores():
    real = torch.nn.functional.scaled_dot_product_attention
    q = torch.randn(1, 1, 3, 4)
    with ch14.kernel_calls() as calls:
        torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
    assert calls == [("None", True, 3, 3)]
    assert torch.nn.functional.scaled_dot_product_attention is real


# --- the bug modules behave as the chapter says ---

@pytest.mark.parametrize("name", list(ch14.BUGS))
def test_each_bug_is_caught_and_its_fix_passes(name):
    intent = ch14.BUGS[name][2]
    buggy, fixed = ch14.bug(name), ch14.bug(name, fixed=True)
    assert not check_mask_pattern(buggy, intent, length=6, embed_dim=ch14.E).passed
    assert check_mask_pattern(fixed, intent, length=6, embed_dim=ch14.E).passed
    assert not diagnose(buggy, expect=intent).passed
    assert diagnose(fixed, expect=intent).passed
    expected = ch14.causal(6) if intent == "causal" else torch.zeros(6, 6, dtype=torch.bool)
    assert torch.equal(infer_mask(fixed, 6, embed_dim=ch14.E), expected)


def test_the_skip_only_bugs_hide_behind_padding():
    for name in ("own mask after the library skipped it",):
        moved = ch14.later_token_moves(ch14.bug(name), 6, padded=True)
        assert (moved[:-1] == 0).all()                                  # padded: the library built the mask
        assert (ch14.later_token_moves(ch14.bug(name), 6)[:-1] > 0).any()   # unpadded: the future leaks


def test_bug_and_later_token_moves_refuse_bad_input():
    with pytest.raises(ValueError, match="name must be one of"):
        ch14.bug("no such bug")
    with pytest.raises(TypeError, match="fixed"):
        ch14.bug("float mask cast to bool", fixed="yes")
    module = ch14.bug("float mask cast to bool")
    with pytest.raises(TypeError, match="module"):
        ch14.later_token_moves("module")
    with pytest.raises(ValueError, match="position"):
        ch14.later_token_moves(module, 4, position=4)
    with pytest.raises(ValueError, match="length"):
        ch14.later_token_moves(module, 1)


# --- the explorer ---

def test_the_views_rule():
    for mask in ch14.MASKS:
        for flag in ch14.FLAGS:
            for config in ch14.CONFIGS:
                blocked, decider = ch14.applied(mask, flag, config)
                if mask in ("bool", "float"):
                    assert torch.equal(blocked, ch14.intended(config)) and "the mask" in decider
                elif mask == "none":
                    assert torch.equal(blocked, ch14.causal(6) if flag != "False" else ch14.intended("bidirectional"))
                else:
                    assert not torch.equal(blocked, ch14.intended(config))
    for name, value in (("mask", "full"), ("is_causal", "maybe"), ("config", "both")):
        with pytest.raises(ValueError, match=name):
            ch14.decider_view(**{name: value})


def test_the_explorer_shows_its_view_and_moves():
    box = ch14.decider_explorer()
    try:
        assert "decided by the integration default" in box.summary.value
        assert "does NOT match the intent of the config (bidirectional)" in box.summary.value
        box.controls["is_causal"].value = "False"
        assert "applied bidirectional; matches" in box.summary.value
        box.controls["config"].value = "causal"
        box.controls["mask"].value = "bool"
        assert "decided by the mask" in box.summary.value and "matches" in box.summary.value
        box.controls["mask"].value = "float cast to bool"
        assert "applied inverted: the past hidden" in box.summary.value
    finally:
        box.close()


# --- the exercises ---

RIGHT_1 = ("causal", "bidirectional", "bidirectional", "bidirectional")


def test_check_1_accepts_every_right_form():
    ch14.check_1.solution(RIGHT_1)
    ch14.check_1.solution(list(RIGHT_1))
    ch14.check_1.solution(tuple(w.upper() for w in RIGHT_1))
    ch14.check_1.solution((" causal ",) + RIGHT_1[1:])
    assert RIGHT_1 == tuple(ch14._situation(*s) for s in ch14.SITUATIONS_1)


@pytest.mark.parametrize("answer, hint, hint_ja", [
    (("bidirectional",) + RIGHT_1[1:], "getattr", "getattr"),
    (("causal", "bidirectional", "causal", "bidirectional"), "mask alone decides", "マスクだけ"),
    (("causal", "bidirectional", "bidirectional", "causal"), "single query", "クエリが 1 つなので"),
    (("causal", "causal", "bidirectional", "bidirectional"), "situation 2", "状況 2"),
    (("causal", "bidirectional"), "4 of them", "4 個"),
    (("causal", "bidirectional", "yes", "no"), "each word", "どの語も"),
    ("causal", "tuple of 4", "タプル"),
])
def test_check_1_rejects_with_the_right_hint(answer, hint, hint_ja):
    with pytest.raises(Mistake, match=hint):
        ch14.check_1(answer)
    assert hint_ja in japanese_hint(ch14.check_1, answer)


def _leaks(unpadded=True, compare="before"):
    def leaks(module):
        x = torch.randn(2, 6, 8, generator=torch.Generator().manual_seed(0))
        changed = x.clone()
        changed[:, -1] += 1.0
        pads = torch.zeros(2, 6, dtype=torch.bool)
        pads[1, -1] = not unpadded
        pads[0, -1] = not unpadded
        with torch.no_grad():
            moved = module(changed, pads, None) - module(x, pads, None)
        moved = moved[:, :-1] if compare == "before" else moved
        return bool(moved.abs().max() > 1e-6)
    return leaks


def test_check_2_accepts_the_solution_and_the_reference():
    ch14.check_2.solution(_leaks())
    ch14.check_2.solution(ch14.reference_leak_test)
    ch14.check_2.solution(lambda module: torch.tensor(ch14.reference_leak_test(module)))   # a 0-d bool tensor


def test_check_2_rejects_with_the_right_hint():
    cases = [
        (_leaks(compare="all"), "is correct, and your test says it leaks", "正しいのに"),
        (lambda module: False, "leaks, and your test says it does not", "漏れないと言う"),
        (_leaks(unpadded=False), "leaks, and your test says it does not", "パディングのないバッチ"),
        (lambda module: "no", "must return a bool", "bool を返す"),
        (lambda module: module(torch.randn(2, 6, 5), None, None), "raised", "を出した"),
        ("leaks", "give a function", "関数 leaks"),
    ]
    for answer, hint, hint_ja in cases:
        with pytest.raises(Mistake, match=hint):
            ch14.check_2(answer)
        assert hint_ja in japanese_hint(ch14.check_2, answer)


def test_picture_view_says_what_was_applied():
    view = ch14.picture_view(ch14.causal(4))
    assert view.summary.endswith("applied causal") and len(view.panels) == 2
    with pytest.raises(ValueError, match="square"):
        ch14.picture_view(torch.zeros(2, 3, dtype=torch.bool))
    with pytest.raises(TypeError, match="measured"):
        ch14.picture_view(torch.zeros(3, 3))
